"""Crash and recover: workers die mid-job, a stall checker brings their jobs back, and every
job still completes exactly once.

`run_crash` adds M plain jobs and starts N worker threads, each a worker with its own Redis
connection and candidate instance. A worker loops: fetch (moveToActive with a token unique to
the fetch and a short lock, `now` from the shared clock of `concurrency`), work a few steps
of a third of a lock each, renewing the lock (extendLock) after every step, then finish
(moveToFinished, completed, keepJobs `{count: -1}`, the same token). Fetches are numbered as
they return; a seeded plan picks some fetch numbers and a step for each:

- **killed**: the worker stops there, releasing nothing, and a fresh worker (new connection,
  new candidate instance) takes its thread;
- **frozen**: the worker stops renewing until another token has fetched its job, then wakes
  and tries to finish it anyway, which must be refused (-6, or -2 once the job is done).

Lock expiry runs on the real Redis clock (PX), so the run takes real time: a stall checker
thread calls moveStalledJobsToWait every fifth of a lock (its stalledInterval; maxStalledCount
1000, so nothing fails), and the jobs it moves back to wait are fetched again. Renewals come
less often than stall checks, so jobs are often marked stalled while their lock lives: a check
that moved them would be caught. The run ends when every job has
a completion, or at the time limit. `crash_verdict.judge` then checks the events and the end
state.

With `flows`, the run adds P parents of K children each instead (`addFlow`, node ids `f<i>`
and `f<i>c<k>`, all in the run's queue): the children wait, the parents wait in
waiting-children. The workers fetch whatever comes: children first, then each parent once its
last child's completion released it to wait. Each job completes with its own value
(`crash_verdict.flow_value`), and the verdict also reads the events stream and the parents'
`:processed` hashes (`crash_verdict.judge_flows`).
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

import redis

from conformance.candidates.base import Candidate
from conformance.checks.concurrency import (
    REDIS_DOWN,
    T0,
    CandidateFactory,
    Clock,
    build_candidate,
    fleet,
    race,
)
from conformance.checks.crash_verdict import (
    LEFT_IN,
    CrashVerdict,
    Events,
    Fate,
    Finish,
    FlowOutcome,
    LockSet,
    Outcome,
    StallPass,
    StreamEvent,
    flow_value,
    judge,
)
from conformance.core.errors import InfrastructureError, UsageError
from conformance.core.queues import QueueRef
from reference_impl.keys import KeyProfile
from reference_impl.ops import Add, AddFlow, MoveToActive
from reference_impl.worker_ops import ExtendLock, MoveStalledJobsToWait, MoveToFinished

LOCK_MS = 100  #: default lock duration: short, since expiry takes real time
MAX_STEPS = 4  #: a job takes 1..MAX_STEPS work steps
STEP = 3  #: a work step (and so the renewal period) is a third of the lock
#: The stall check runs every fifth of a lock: more often than the renewals, so it often finds
#: a job marked stalled while its lock lives, and only the lock check may spare it.
STALL_CHECK = 5
MAX_STALLED = 1000  #: high enough that no job is ever failed for stalling
POLL_S = 0.002  #: an idle worker's pause between empty fetches
FLOWS = 40  #: default parents of a flow run (with CHILDREN each: 200 jobs, as a plain run)
CHILDREN = 4  #: default children per parent of a flow run


@dataclass(frozen=True)
class Doom:
    """What happens to the worker of one fetch: its fate, at the start of which work step."""

    fate: Fate
    step: int


def steps_of(seed: int, fetch: int) -> int:
    """The work steps of the `fetch`-th fetch (deterministic per seed)."""
    return random.Random(seed * 1_000_003 + fetch).randint(1, MAX_STEPS)


def plan_dooms(jobs: int, kill: int, freeze: int, seed: int) -> dict[int, Doom]:
    """Pick `kill` + `freeze` distinct fetch numbers among the first `jobs`, and a step each."""
    if kill < 0 or freeze < 0 or kill + freeze > jobs:
        raise UsageError(f"--kill and --freeze must be at least 0 and add up to at most the "
                         f"jobs ({jobs})")
    rng = random.Random(seed)
    chosen = rng.sample(range(1, jobs + 1), kill + freeze)
    killed: list[Fate] = ["killed"]
    frozen: list[Fate] = ["frozen"]
    fates = killed * kill + frozen * freeze
    pairs = zip(chosen, fates, strict=True)
    return {n: Doom(fate, rng.randrange(steps_of(seed, n))) for n, fate in pairs}


class _Log:
    """The run's shared, lock-protected event log."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.locks: list[LockSet] = []
        self.finishes: list[Finish] = []
        self.passes: list[StallPass] = []
        self.fates: dict[str, Fate] = {}
        self.holder: dict[str, str] = {}
        self.completed: set[str] = set()
        self.renewals_refused = 0
        self.fetch_count = 0

    def fetched(self, lock: LockSet) -> int:
        """Record a fetch; return its number (1 for the first)."""
        with self.cond:
            self.locks.append(lock)
            self.holder[lock.job] = lock.token
            self.fetch_count += 1
            self.cond.notify_all()
            return self.fetch_count

    def renewed(self, lock: LockSet, ok: bool) -> None:
        """Record a renewal: a lock set when it answered 1."""
        with self.cond:
            if ok:
                self.locks.append(lock)
            else:
                self.renewals_refused += 1

    def finished(self, finish: Finish) -> None:
        """Record a moveToFinished call."""
        with self.cond:
            self.finishes.append(finish)
            if finish.reply == 0:
                self.completed.add(finish.job)
                self.cond.notify_all()

    def checked(self, stall: StallPass) -> None:
        """Record a stall pass."""
        with self.cond:
            self.passes.append(stall)

    def doomed(self, token: str, fate: Fate) -> None:
        """Record how the worker holding `token` died."""
        with self.cond:
            self.fates[token] = fate

    def taken_over(self, job: str, token: str, until: float, stop: threading.Event) -> None:
        """Wait until another token fetched `job`, or someone completed it (a broken
        candidate lets a stale token do that), or the run is over."""
        with self.cond:
            while self.holder.get(job) == token and job not in self.completed \
                    and not stop.is_set() and time.monotonic() < until:
                self.cond.wait(0.05)

    def events(self) -> Events:
        """A frozen copy."""
        with self.cond:
            return Events(tuple(self.locks), tuple(self.finishes), tuple(self.passes),
                          dict(self.fates), self.renewals_refused)


@dataclass
class _Run:
    """What every thread of one run shares."""

    candidate: str | CandidateFactory
    redis_url: str
    profile: KeyProfile
    queue: QueueRef
    jobs: int
    lock_ms: int
    seed: int
    dooms: dict[int, Doom]
    state: dict[str, Any]
    clock: Clock
    log: _Log
    spawned: list[tuple[Candidate, redis.Redis]]
    ids: itertools.count[int]
    flows: bool = False

    def spawn(self) -> tuple[str, Candidate, redis.Redis]:
        """A fresh worker: a name, a started candidate instance and its own connection."""
        cand = build_candidate(self.candidate)
        client = redis.Redis.from_url(self.redis_url, decode_responses=True)
        self.spawned.append((cand, client))
        cand.start(self.redis_url, self.profile)
        return f"w{next(self.ids)}", cand, client

    def going(self) -> bool:
        """Neither stopped, nor past the deadline, nor every job completed."""
        return (not self.state["stop"].is_set() and time.monotonic() < self.state["deadline"]
                and len(self.log.completed) < self.jobs)

    def pause(self, seconds: float) -> None:
        """Let real time pass (locks expire on the Redis clock); cut short by a stop."""
        self.state["stop"].wait(seconds)


def _work(run: _Run, cand: Candidate, client: redis.Redis, job: str, token: str,
          steps: int, doom: Doom | None) -> bool:
    """Work `steps` steps, renewing the lock after each; False when the doom struck."""
    for step in range(steps):
        if doom is not None and doom.step == step:
            return False
        run.pause(run.lock_ms / STEP / 1000)
        sent = time.monotonic()
        reply = cand.apply(client, run.queue, ExtendLock(job, token, run.lock_ms))
        if reply not in (0, 1):
            raise TypeError(f"extendLock returned {reply!r}")
        run.log.renewed(LockSet(job, token, sent, time.monotonic()), reply == 1)
    return True


def _finish(run: _Run, cand: Candidate, client: redis.Redis, job: str, token: str) -> None:
    sent = time.monotonic()
    _, now = run.clock.send()
    value = flow_value(job) if run.flows else '"done"'
    reply = cand.apply(client, run.queue, MoveToFinished(job, now, "completed", value, token,
                                                         keep_jobs={"count": -1}))
    run.log.finished(Finish(job, token, sent, time.monotonic(), reply))


def _worker(index: int, run: _Run, state: dict[str, Any]) -> None:
    """One thread: a worker that fetches, works and finishes until the run is over; a killed
    worker is replaced by a fresh one."""
    state["barrier"].wait()
    try:
        name, cand, client = run.spawn()
        for serial in itertools.count():
            if not run.going():
                return
            token = f"{name}:{serial}"
            _, now = run.clock.send()
            sent = time.monotonic()
            reply = cand.apply(client, run.queue,
                               MoveToActive(now=now, token=token, lock_duration=run.lock_ms))
            if not isinstance(reply, dict):
                raise TypeError(f"moveToActive returned {reply!r}")
            if reply.get("job") is None:
                run.pause(POLL_S)
                continue
            job = str(reply["job"])
            number = run.log.fetched(LockSet(job, token, sent, time.monotonic(), fetch=True))
            doom = run.dooms.get(number)
            if _work(run, cand, client, job, token, steps_of(run.seed, number), doom):
                _finish(run, cand, client, job, token)
            elif doom is not None and doom.fate == "killed":
                run.log.doomed(token, "killed")
                client.close()
                name, cand, client = run.spawn()
            elif doom is not None:
                run.log.doomed(token, "frozen")
                run.log.taken_over(job, token, state["deadline"], state["stop"])
                _finish(run, cand, client, job, token)
    except Exception as exc:
        _failed(state, f"worker thread {index}", exc)


def _failed(state: dict[str, Any], who: str, exc: Exception) -> None:
    state["errors"].append(f"{who}: {type(exc).__name__}: {exc}")
    if isinstance(exc, REDIS_DOWN):
        state["down"] = exc
    state["stop"].set()


def _stall_checker(run: _Run, interval_ms: int, done: threading.Event) -> None:
    """Run a stall check every `interval_ms` until `done`."""
    try:
        _, cand, client = run.spawn()
        while not done.is_set() and not run.state["stop"].is_set():
            _, now = run.clock.send()
            sent = time.monotonic()
            ids = cand.apply(client, run.queue, MoveStalledJobsToWait(
                now, max_stalled_count=MAX_STALLED, stalled_interval=interval_ms))
            if not isinstance(ids, list):
                raise TypeError(f"moveStalledJobsToWait returned {ids!r}")
            run.log.checked(StallPass(sent, time.monotonic(), tuple(str(i) for i in ids)))
            done.wait(interval_ms / 1000)
    except Exception as exc:
        _failed(run.state, "stall checker", exc)


def _outcome(client: redis.Redis, queue: QueueRef, added: list[str]) -> Outcome:
    pipe = client.pipeline(transaction=False)
    for job in added:
        pipe.zscore(queue.key("completed"), job)
    for name in LEFT_IN:
        if name in ("wait", "active", "paused"):
            pipe.llen(queue.key(name))
        else:
            pipe.zcard(queue.key(name))
    replies = pipe.execute()
    scores, counts = replies[:len(added)], replies[len(added):]
    return Outcome(frozenset(job for job, score in zip(added, scores, strict=True)
                             if score is not None),
                   dict(zip(LEFT_IN, counts, strict=True)))


def _add_flows(cand: Candidate, client: redis.Redis, queue: QueueRef, parents: int,
               children: int) -> dict[str, tuple[str, ...]]:
    """Add `parents` flows of `children` children each; each parent's children's ids."""
    tree: dict[str, tuple[str, ...]] = {}
    for i in range(parents):
        kids = tuple(f"f{i}c{k}" for k in range(children))
        flow = {"name": f"parent{i}", "jobId": f"f{i}", "data": {"i": i},
                "children": [{"name": f"child{i}.{k}", "jobId": kid, "data": {"i": i, "k": k}}
                             for k, kid in enumerate(kids)]}
        reply = cand.apply(client, queue, AddFlow(timestamp=T0, flow=flow))
        if reply != f"f{i}":
            raise TypeError(f"addFlow of f{i} returned {reply!r}")
        tree[f"f{i}"] = kids
    return tree


def _flow_outcome(client: redis.Redis, queue: QueueRef,
                  tree: dict[str, tuple[str, ...]]) -> FlowOutcome:
    """The events stream and each parent's `:processed` (fields as child ids)."""
    pipe = client.pipeline(transaction=False)
    pipe.xrange(queue.key("events"))
    for parent in tree:
        pipe.hgetall(queue.key(f"{parent}:processed"))
    entries, *hashes = pipe.execute()
    stream = tuple(StreamEvent(fields.get("event", ""), fields.get("jobId", ""),
                               fields.get("prev")) for _, fields in entries)
    processed = {parent: {key.removeprefix(queue.base): value for key, value in held.items()}
                 for parent, held in zip(tree, hashes, strict=True)}
    return FlowOutcome(tree, stream, processed)


def run_crash(candidate: str | CandidateFactory, redis_url: str, profile: KeyProfile,
              workers: int = 8, jobs: int = 200, kill: int = 3, freeze: int = 2, seed: int = 0,
              lock_ms: int = LOCK_MS, time_limit: float = 60.0, flows: bool = False,
              children: int = CHILDREN) -> CrashVerdict:
    """Run the crash-and-recover scenario (see the module docstring) and judge it.

    `candidate` is a `--candidate` spec or a factory; every worker and the stall checker
    build and start their own instance. With `flows`, `jobs` is the number of parents, each
    added with `children` children (so `jobs * (children + 1)` jobs in all). Only the keys of
    the run's queue are deleted after.
    """
    if workers < 1 or jobs < 1 or lock_ms < 10:
        raise UsageError("--workers and --jobs must be at least 1, --lock-ms at least 10")
    if flows and children < 1:
        raise UsageError("--children must be at least 1")
    total = jobs * (children + 1) if flows else jobs
    dooms = plan_dooms(total, kill, freeze, seed)
    with fleet(candidate, redis_url, profile, 1, "crash") as (queue, built, clients):
        tree: dict[str, tuple[str, ...]] = {}
        if flows:
            tree = _add_flows(built[0], clients[0], queue, jobs, children)
            added = [job for parent, kids in tree.items() for job in (*kids, parent)]
        else:
            added = [str(built[0].apply(clients[0], queue,
                                        Add(name=f"job{i}", timestamp=T0, data={"i": i})))
                     for i in range(jobs)]
        state: dict[str, Any] = {"stop": threading.Event(), "errors": [],
                                 "deadline": time.monotonic() + time_limit}
        run = _Run(candidate, redis_url, profile, queue, total, lock_ms, seed, dooms, state,
                   Clock(T0), _Log(), [], itertools.count(), flows)
        done = threading.Event()
        checker = threading.Thread(target=_stall_checker, daemon=True,
                                   args=(run, max(lock_ms // STALL_CHECK, 1), done))
        try:
            checker.start()
            elapsed = race(workers, _worker, lambda i: (run,), state)
        finally:
            done.set()
            checker.join(5)
            for cand, client in run.spawned:
                cand.close()
                client.close()
        if "down" in state:
            raise InfrastructureError(f"Redis went away mid-run: {state['down']}")
        events = run.log.events()
        killed = sum(1 for fate in events.fates.values() if fate == "killed")
        return judge(built[0].name, added, events, _outcome(clients[0], queue, added),
                     workers=workers, killed=killed, frozen=len(events.fates) - killed,
                     lock_ms=lock_ms, duration=elapsed, errors=state["errors"],
                     flows=_flow_outcome(clients[0], queue, tree) if flows else None)


def main(args: Any) -> int:
    """`bullmq-conformance concurrency --crash`: run the scenario, print its report, exit 0/1."""
    from conformance import servers
    from conformance.run.spec import profile_for

    profile = profile_for(args.profile)
    with servers.provision(args.redis) as info:
        jobs = (FLOWS if args.flows else 200) if args.jobs is None else args.jobs
        verdict = run_crash(args.candidate, info.url, profile, args.workers, jobs, args.kill,
                            args.freeze, args.seed, args.lock_ms, args.time_limit, args.flows,
                            args.children)
    print(verdict.report())
    return 0 if verdict.passed else 1

