"""Exactly-once claims under concurrency: N fetchers race moveToActive on one queue.

`run_concurrency` adds M jobs through a candidate (plain, prioritized in a few tiers, and
delayed with fire times inside the run's clock range), then starts N threads. Each thread has
its own Redis connection and its own candidate instance (candidates are not thread-safe), and
calls moveToActive with `now` taken from a shared clock that advances by 1 ms per call, until
nothing is ready and nothing is delayed (or a time limit). It then checks:

- **exactly once**: every added job was claimed once; none lost, none duplicated, none unknown;
- **order** (among jobs added plain or prioritized, never delayed; promoted jobs queue behind
  and are not ranked): plain jobs in add order (`wait` FIFO), each tier in add order (the `pc`
  counter), and all plain jobs before any prioritized one, lower tiers before higher.

Claim order is the order in which moveToActive calls returned (a lock-protected sequence).
Two calls in flight at once may return in the other order than Redis ran them, so an order
violation is only counted when it is certain: the later job's call *returned* before the
earlier job's call was *sent*. Reorderings between overlapping calls are reported apart.

`textbook_claims` runs the textbook race of RESEARCH.md §10 on a raw ZSET: ZRANGEBYSCORE
-inf now LIMIT 0 10, then ZREM per member; only a reply of 1 is a claim (or, as a negative
control, every listed member when `respect_reply=False`).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import redis

from conformance.candidates.base import Candidate
from conformance.core.candidate_forms import BULLMQ_PY
from conformance.core.errors import InfrastructureError, UsageError
from conformance.core.queues import QueueRef, one_off
from reference_impl import versions
from reference_impl.keys import KeyProfile
from reference_impl.ops import Add, MoveToActive

T0 = 1_700_000_000_000  #: the run clock's origin (ms); adds are stamped with it
TIERS = (1, 2, 5)  #: priority tiers of prioritized jobs
REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)
CandidateFactory = Callable[[], Candidate]


@dataclass(frozen=True)
class Claim:
    """One job handed out: by `worker`, at clock `now`; `sent`/`returned` are event ticks."""

    job: str
    worker: int
    sent: int
    returned: int
    now: int


@dataclass
class Verdict:
    """What a race produced and what is wrong with it. `order` is the global claim order."""

    label: str
    workers: int
    added: list[str]
    order: list[Claim]
    elapsed: float
    lost: list[str] = field(default_factory=list)
    duplicated: dict[str, int] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    order_violations: dict[str, list[str]] = field(default_factory=dict)
    ambiguous: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def violations(self) -> int:
        """Every lost, duplicated (extra copies), unknown, misordered claim, and error."""
        extra = sum(n - 1 for n in self.duplicated.values())
        misordered = sum(len(v) for v in self.order_violations.values())
        return len(self.lost) + extra + len(self.unknown) + misordered + len(self.errors)

    @property
    def ok(self) -> bool:
        """No violation at all."""
        return self.violations == 0

    @property
    def claims_per_second(self) -> float:
        """Claims over the wall time of the fetch phase."""
        return len(self.order) / self.elapsed if self.elapsed > 0 else 0.0

    def summary(self) -> str:
        """A few human-readable lines."""
        lines = [f"{self.label}: {len(self.added)} jobs, {self.workers} workers, "
                 f"{len(self.order)} claims in {self.elapsed:.2f} s "
                 f"({self.claims_per_second:.0f} claims/s), {self.violations} violations",
                 f"  lost {len(self.lost)}, duplicated {len(self.duplicated)} "
                 f"({sum(self.duplicated.values()) - len(self.duplicated)} extra claims), "
                 f"unknown {len(self.unknown)}"]
        lines += [f"  {name}: {len(bad)} out of order, e.g. {', '.join(bad[:5])}"
                  for name, bad in self.order_violations.items() if bad]
        if self.order_violations:
            lines.append(f"  {len(self.order_violations)} order checks; overlapping calls "
                         f"returned out of order (ambiguous, not counted): {self.ambiguous}")
        lines += [f"  error: {e}" for e in self.errors[:5]]
        if self.lost:
            lines.append(f"  lost e.g. {', '.join(self.lost[:5])}")
        if self.duplicated:
            lines.append(f"  duplicated e.g. {', '.join(list(self.duplicated)[:5])}")
        return "\n".join(lines)


class Clock:
    """Shared, lock-protected counters: the run clock (`now`) and the event ticks."""

    def __init__(self, origin: int) -> None:
        self._lock = threading.Lock()
        self._now = origin
        self._tick = 0
        self.claims: list[Claim] = []

    def send(self) -> tuple[int, int]:
        """Advance the clock and the tick before a call; return (tick, now)."""
        with self._lock:
            self._now += 1
            self._tick += 1
            return self._tick, self._now

    def record(self, jobs: Iterable[str], worker: int, sent: int, now: int) -> int:
        """Record the claims one call returned; return the total claimed so far."""
        with self._lock:
            self._tick += 1
            self.claims += [Claim(job, worker, sent, self._tick, now) for job in jobs]
            return len(self.claims)


def check_exactly_once(verdict: Verdict) -> None:
    """Fill in lost, duplicated and unknown ids from `added` and `order`."""
    counts = Counter(c.job for c in verdict.order)
    added = set(verdict.added)
    verdict.lost = [j for j in verdict.added if j not in counts]
    verdict.duplicated = {j: n for j, n in counts.items() if n > 1}
    verdict.unknown = sorted(j for j in counts if j not in added)


def check_order(verdict: Verdict, groups: Sequence[tuple[str, list[str]]]) -> None:
    """Check FIFO within each (name, ids in expected order) group, then across the groups.

    A job is misordered when its (first) claim returned before the claim of some job expected
    earlier was even sent. Returned-order inversions among overlapping calls go to `ambiguous`.
    """
    first: dict[str, Claim] = {}
    for claim in verdict.order:
        first.setdefault(claim.job, claim)
    before_sent = 0  # the latest `sent` over every earlier group
    for name, ids in groups:
        claims = [(j, first[j]) for j in ids if j in first]
        bad: list[str] = []
        cross: list[str] = []
        max_sent = max_returned = 0
        for job, claim in claims:
            if claim.returned < max_sent:
                bad.append(job)
            elif claim.returned < max_returned:
                verdict.ambiguous += 1
            if claim.returned < before_sent:
                cross.append(job)
            max_sent = max(max_sent, claim.sent)
            max_returned = max(max_returned, claim.returned)
        verdict.order_violations[f"{name} FIFO"] = bad
        if before_sent:
            verdict.order_violations[f"{name} after earlier classes"] = cross
        before_sent = max(before_sent, max_sent)


def build_candidate(candidate: str | CandidateFactory) -> Candidate:
    """A fresh, unstarted candidate from a `--candidate` spec or a factory."""
    if isinstance(candidate, str):
        from conformance.candidates import from_spec

        return from_spec(candidate)
    return candidate()


def _plan(jobs: int, seed: int) -> list[tuple[str, Add]]:
    """The adds: 40% plain, 40% prioritized, 20% delayed (half of them with a priority)."""
    rng = random.Random(seed)
    span = max(jobs // 2, 1)
    plan: list[tuple[str, Add]] = []
    for i in range(jobs):
        roll = rng.random()
        opts: dict[str, Any] = {}
        if roll < 0.4:
            kind = "plain"
        elif roll < 0.8:
            opts["priority"] = rng.choice(TIERS)
            kind = f"tier {opts['priority']}"
        else:
            opts["delay"] = rng.randint(1, span)
            if rng.random() < 0.5:
                opts["priority"] = rng.choice(TIERS)
            kind = "delayed"
        plan.append((kind, Add(name=f"job{i}", timestamp=T0, data={"i": i}, opts=opts)))
    return plan


def _fetcher(index: int, candidate: Candidate, client: redis.Redis, queue: QueueRef,
             clock: Clock, state: dict[str, Any]) -> None:
    """Fetch until drained, stopped, past the deadline, or past the claim cap."""
    state["barrier"].wait()
    try:
        while not state["stop"].is_set() and time.monotonic() < state["deadline"]:
            sent, now = clock.send()
            reply = candidate.apply(client, queue, MoveToActive(now=now, token=f"w{index}"))
            if not isinstance(reply, dict):
                raise TypeError(f"moveToActive returned {reply!r}")
            job = reply.get("job")
            if job is None:
                if not reply.get("next"):
                    return  # nothing ready, nothing delayed: drained
                continue
            if clock.record([str(job)], index, sent, now) == state["cap"]:  # exactly once
                state["errors"].append(f"claim cap {state['cap']} reached")
                state["stop"].set()
    except Exception as exc:
        _fail(state, index, exc)


def _fail(state: dict[str, Any], index: int, exc: Exception) -> None:
    """Record a worker's exception and stop every worker."""
    state["errors"].append(f"worker {index}: {type(exc).__name__}: {exc}")
    if isinstance(exc, REDIS_DOWN):
        state["down"] = exc
    state["stop"].set()


def race(workers: int, target: Callable[..., None], args: Callable[[int], tuple[Any, ...]],
          state: dict[str, Any]) -> float:
    """Run `workers` threads of `target(i, *args(i), state)` released together by
    `state["barrier"]`, until they end or `state["deadline"]` passes; return the wall time."""
    state["barrier"] = threading.Barrier(workers + 1)
    threads = [threading.Thread(target=target, args=(i, *args(i), state), daemon=True)
               for i in range(workers)]
    for thread in threads:
        thread.start()
    state["barrier"].wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join(max(state["deadline"] - time.monotonic(), 0) + 5)
    elapsed = time.perf_counter() - start
    if time.monotonic() >= state["deadline"]:
        state["errors"].append("time limit reached before the queue drained")
    return elapsed


@contextlib.contextmanager
def fleet(candidate: str | CandidateFactory, redis_url: str, profile: KeyProfile, size: int,
          purpose: str) -> Iterator[tuple[QueueRef, list[Candidate], list[redis.Redis]]]:
    """A run-unique queue (`queues.one_off(purpose)`), and `size` started candidate instances with
    a connection each. On exit they are closed and only the queue's keys are deleted."""
    if candidate == BULLMQ_PY.usage:
        raise UsageError(f"--candidate {BULLMQ_PY.usage} patches the bullmq package's "
                         "module-level clock for each op, so instances cannot run in concurrent "
                         "threads")
    queue = QueueRef(profile, one_off(purpose), versions.CURRENT)
    built = [build_candidate(candidate) for _ in range(size)]
    clients = [redis.Redis.from_url(redis_url, decode_responses=True) for _ in range(size)]
    try:
        for cand in built:
            cand.start(redis_url, profile)
        yield queue, built, clients
    finally:
        from conformance.state.snapshot import delete_queue

        for cand in built:
            cand.close()
        with contextlib.suppress(*REDIS_DOWN):
            delete_queue(clients[0], queue)
        for client in clients:
            client.close()


def run_concurrency(candidate: str | CandidateFactory, redis_url: str, profile: KeyProfile,
                    workers: int = 8, jobs: int = 2000, seed: int = 0,
                    time_limit: float = 60.0) -> Verdict:
    """Add `jobs` jobs, race `workers` fetchers on them, and check exactly-once and order.

    `candidate` is a `--candidate` spec or a factory; each worker builds and starts its own.
    Only the keys of the run's queue are deleted afterwards.
    """
    with fleet(candidate, redis_url, profile, workers, "conc") as (queue, built, clients):
        groups: dict[str, list[str]] = {"plain": [], **{f"tier {t}": [] for t in TIERS}}
        added: list[str] = []
        for kind, op in _plan(jobs, seed):
            job_id = str(built[0].apply(clients[0], queue, op))
            added.append(job_id)
            if kind in groups:
                groups[kind].append(job_id)
        clock = Clock(T0)
        state: dict[str, Any] = {"stop": threading.Event(), "errors": [], "cap": 2 * jobs + 10,
                                 "deadline": time.monotonic() + time_limit}
        elapsed = race(workers, _fetcher,
                        lambda i: (built[i], clients[i], queue, clock), state)
        verdict = Verdict(built[0].name, workers, added,
                          sorted(clock.claims, key=lambda c: c.returned), elapsed,
                          errors=state["errors"])
        if "down" in state:
            raise InfrastructureError(f"Redis went away mid-race: {state['down']}")
        check_exactly_once(verdict)
        check_order(verdict, list(groups.items()))
        return verdict


def _textbook_worker(index: int, client: redis.Redis, key: str, clock: Clock,
                     respect_reply: bool, state: dict[str, Any]) -> None:
    """Poll the due range and claim with ZREM until the ZSET is empty."""
    state["barrier"].wait()
    try:
        while not state["stop"].is_set() and time.monotonic() < state["deadline"]:
            sent, now = clock.send()
            # The client decodes responses, so members come back as str.
            due = cast(list[str], client.zrangebyscore(key, "-inf", now, start=0, num=10))
            if not due:
                if client.zcard(key) == 0:
                    return
                continue
            won = [m for m in due if client.zrem(key, m) == 1 or not respect_reply]
            clock.record(won, index, sent, now)
    except Exception as exc:
        _fail(state, index, exc)


def textbook_claims(redis_url: str, workers: int = 8, jobs: int = 2000, seed: int = 0,
                    respect_reply: bool = True, time_limit: float = 60.0) -> Verdict:
    """The textbook ZRANGEBYSCORE + ZREM claim race on a fresh raw-scored ZSET.

    Members are `task:<i>` scored with a raw fire time in the clock range (many ties). With
    `respect_reply`, a worker counts a member only when its ZREM returned 1, which is correct;
    without, it counts every member it listed, which duplicates jobs (the negative control).
    Only the fresh key is deleted afterwards.
    """
    rng = random.Random(seed)
    key = f"{one_off('textbook')}:delayed"
    clients = [redis.Redis.from_url(redis_url, decode_responses=True) for _ in range(workers)]
    try:
        members = {f"task:{i}": T0 + rng.randint(1, max(jobs // 4, 1)) for i in range(jobs)}
        clients[0].zadd(key, members)
        clock = Clock(T0)
        state: dict[str, Any] = {"stop": threading.Event(), "errors": [],
                                 "deadline": time.monotonic() + time_limit}
        elapsed = race(workers, _textbook_worker,
                        lambda i: (clients[i], key, clock, respect_reply), state)
        label = "textbook ZREM race" + ("" if respect_reply else " (ZREM reply ignored)")
        verdict = Verdict(label, workers, list(members),
                          sorted(clock.claims, key=lambda c: c.returned), elapsed,
                          errors=state["errors"])
        if "down" in state:
            raise InfrastructureError(f"Redis went away mid-race: {state['down']}")
        check_exactly_once(verdict)
        return verdict
    finally:
        with contextlib.suppress(*REDIS_DOWN):
            clients[0].delete(key)
        for client in clients:
            client.close()


def main(args: Any) -> int:
    """`bullmq-conformance concurrency`: run one race, print its summary, exit 0 or 1."""
    from conformance import servers
    from conformance.run.spec import profile_for

    jobs = 2000 if args.jobs is None else args.jobs
    if args.workers < 1 or jobs < 1:
        raise UsageError("--workers and --jobs must be at least 1")
    profile = profile_for(args.profile)
    with servers.provision(args.redis) as info:
        if args.textbook:
            verdict = textbook_claims(info.url, args.workers, jobs, args.seed,
                                      time_limit=args.time_limit)
        else:
            verdict = run_concurrency(args.candidate, info.url, profile, args.workers,
                                      jobs, args.seed, time_limit=args.time_limit)
    print(verdict.summary())
    return 0 if verdict.ok else 1
