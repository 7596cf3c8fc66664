"""What a crash-and-recover run recorded, and the checks made on it (`judge`).

Every event carries the monotonic times at which its call was sent and returned. Redis runs a
call somewhere in between, so a check counts only what is certain from those bounds:

- a lock set (a fetch, or a renewal that answered 1) with duration D at [sent, returned]
  certainly lives until `sent + D`, and has certainly expired by `returned + D` unless renewed;
- a job returned by a stall pass that ran entirely inside some lock's certain lifetime was
  **moved under a live lock**;
- a successful moveToFinished by a token that never held the job's lock, or sent after another
  token's fetch of the job (itself sent after this token's fetch returned), or sent after this
  token's last lock set had certainly expired, **finished without the lock**.

`MARGIN` covers the millisecond rounding of PX and of the script's frozen clock.

A flow run (`FlowOutcome`) is judged further on the queue's events stream and the parents'
`:processed` hashes: every parent **released** (`waiting ... prev waiting-children`) exactly
once, every parent **completed after each of its children** (stream order), and each parent's
`:processed` holding every child's key with the value it completed with.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

MARGIN = 0.005  #: seconds added to every certain-time comparison
REFUSED = (-2, -6)  #: moveToFinished's refusals of a token that lost its lock (missing, taken)
#: Must be empty at the end (waiting-children: a parent there waits forever).
LEFT_IN = ("wait", "active", "prioritized", "delayed", "paused", "waiting-children")
Fate = Literal["killed", "frozen"]


@dataclass(frozen=True)
class LockSet:
    """A call that set `job`'s lock to `token`: its fetch (`fetch`) or a renewal answering 1."""

    job: str
    token: str
    sent: float
    returned: float
    fetch: bool = False


@dataclass(frozen=True)
class Finish:
    """One moveToFinished(completed) call by `token` and its reply (0 = done)."""

    job: str
    token: str
    sent: float
    returned: float
    reply: object


@dataclass(frozen=True)
class StallPass:
    """One moveStalledJobsToWait call and the ids it moved back to wait."""

    sent: float
    returned: float
    ids: tuple[str, ...]


@dataclass(frozen=True)
class Events:
    """Everything the workers and the stall checker saw, plus which tokens died how."""

    locks: tuple[LockSet, ...]
    finishes: tuple[Finish, ...]
    passes: tuple[StallPass, ...]
    fates: Mapping[str, Fate] = field(default_factory=dict)
    renewals_refused: int = 0


@dataclass(frozen=True)
class Outcome:
    """The queue's state after the run: which jobs have a `completed` score, what is left."""

    completed: frozenset[str]
    left: Mapping[str, int]


@dataclass(frozen=True)
class StreamEvent:
    """One entry of the queue's events stream: its `event`, `jobId` and `prev` fields."""

    event: str
    job: str
    prev: str | None = None


@dataclass(frozen=True)
class FlowOutcome:
    """What a flow run leaves beyond `Outcome`: each parent's children (ids), the events
    stream in order, and each parent's `:processed` hash keyed by child id (a field that is
    not a key of the queue's keeps its full text)."""

    children: Mapping[str, tuple[str, ...]]
    stream: tuple[StreamEvent, ...]
    processed: Mapping[str, Mapping[str, str]]


def flow_value(job: str) -> str:
    """The return value (JSON text) a flow run's worker completes `job` with: one per job, so
    a parent's `:processed` shows which child's value went where."""
    return json.dumps(f"done {job}")


@dataclass(frozen=True)
class FlowFindings:
    """The flow checks' results: parents released exactly once, and each fault found."""

    released_once: int
    release_faults: tuple[str, ...]
    completed_early: tuple[str, ...]
    processed_faults: tuple[str, ...]
    errors: tuple[str, ...]


def judge_flows(flows: FlowOutcome) -> FlowFindings:
    """Every parent released exactly once, completed after each of its children (by the order
    of their first `completed` events), its `:processed` holding exactly its children with
    their `flow_value`s. A parent whose `added` event is not in the stream is an error (the
    stream was trimmed, so its events cannot be counted)."""
    added = {e.job for e in flows.stream if e.event == "added"}
    releases: Counter[str] = Counter(e.job for e in flows.stream
                                     if e.event == "waiting" and e.prev == "waiting-children")
    done_at: dict[str, int] = {}
    for index, entry in enumerate(flows.stream):
        if entry.event == "completed":
            done_at.setdefault(entry.job, index)
    errors, release_faults, early, processed = [], [], [], []
    for parent, children in flows.children.items():
        if parent not in added:
            errors.append(f"parent {parent}: no `added` event in the events stream (trimmed?)")
            continue
        if releases[parent] != 1:
            release_faults.append(f"parent {parent} released {releases[parent]} times")
        if parent in done_at:
            early += [f"parent {parent} completed before child {child}" for child in children
                      if done_at.get(child, len(flows.stream)) > done_at[parent]]
        held = flows.processed.get(parent, {})
        for child in children:
            if child not in held:
                processed.append(f"{parent}:processed lacks {child}")
            elif held[child] != flow_value(child):
                processed.append(f"{parent}:processed holds {held[child]} for {child}")
        processed += [f"{parent}:processed holds {field} (not a child)" for field in held
                      if field not in children]
    return FlowFindings(sum(releases[p] == 1 for p in flows.children), tuple(release_faults),
                        tuple(early), tuple(processed), tuple(errors))


@dataclass(frozen=True)
class CrashVerdict:
    """A crash-and-recover run: its counts and every violation found (ids or descriptions)."""

    label: str
    jobs: int
    workers: int
    killed: int
    frozen: int
    duration: float
    fetches: int
    renewals: int
    renewals_refused: int
    successes: int
    refusals: Mapping[int, int]
    recovered: int
    recovered_from: Mapping[str, int]
    stall_passes: int
    lost: tuple[str, ...] = ()
    duplicated: Mapping[str, int] = field(default_factory=dict)
    moved_under_lock: tuple[str, ...] = ()
    finished_without_lock: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()
    left: Mapping[str, int] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    #: A flow run's parents and children per parent (0 when the run added plain jobs).
    parents: int = 0
    children: int = 0
    released_once: int = 0
    release_faults: tuple[str, ...] = ()
    completed_early: tuple[str, ...] = ()
    processed_faults: tuple[str, ...] = ()

    @property
    def violations(self) -> int:
        """Lost jobs, extra completions, moves under a live lock, finishes without the lock,
        unexpected finish replies, jobs left in a queue state, and errors; in a flow run also
        parents not released exactly once, parents completed before a child, and missing or
        wrong `:processed` entries."""
        extra = sum(n - 1 for n in self.duplicated.values())
        return (len(self.lost) + extra + len(self.moved_under_lock)
                + len(self.finished_without_lock) + len(self.unexpected)
                + sum(self.left.values()) + len(self.errors) + len(self.release_faults)
                + len(self.completed_early) + len(self.processed_faults))

    @property
    def passed(self) -> bool:
        """No violation at all."""
        return self.violations == 0

    def report(self) -> str:
        """One screen of text: the verdict, the counts, then examples of each violation."""
        refused = sum(self.refusals.values())
        codes = ", ".join(f"{code}: {n}" for code, n in sorted(self.refusals.items()))
        sources = ", ".join(f"{n} {src}" for src, n in self.recovered_from.items()) or "none"
        lines = [
            f"crash and recover, {self.label}: {self.jobs} jobs, {self.workers} workers, "
            f"{self.killed} killed, {self.frozen} frozen, {self.duration:.2f} s: "
            + ("PASSED" if self.passed else f"FAILED ({self.violations} violations)"),
            f"  lost {len(self.lost)}, duplicated {len(self.duplicated)}, moved under a live "
            f"lock {len(self.moved_under_lock)}, finished without the lock "
            f"{len(self.finished_without_lock)}, unexpected finish replies "
            f"{len(self.unexpected)}",
            f"  {self.fetches} fetches, {self.renewals} lock renewals "
            f"({self.renewals_refused} refused), {self.successes} completions, "
            f"{refused} finishes refused" + (f" ({codes})" if codes else ""),
            f"  recovered {self.recovered} in {self.stall_passes} stall passes, held by: "
            f"{sources}",
        ]
        if self.parents:
            lines.insert(1, f"  flows: {self.parents} parents x {self.children} children; "
                         f"released exactly once {self.released_once}, release faults "
                         f"{len(self.release_faults)}, completed before a child "
                         f"{len(self.completed_early)}, :processed faults "
                         f"{len(self.processed_faults)}, left waiting for children "
                         f"{self.left.get('waiting-children', 0)}")
        if self.left:
            lines.append("  left: " + ", ".join(f"{k} {n}" for k, n in self.left.items()))
        for title, items in (("error", self.errors), ("lost", self.lost),
                             ("duplicated", tuple(f"{j} x{n}" for j, n in
                                                  self.duplicated.items())),
                             ("moved under a live lock", self.moved_under_lock),
                             ("finished without the lock", self.finished_without_lock),
                             ("unexpected finish reply", self.unexpected),
                             ("release", self.release_faults),
                             ("completed before a child", self.completed_early),
                             (":processed", self.processed_faults)):
            if items:
                lines.append(f"  {title}: {'; '.join(items[:4])}"
                             + (f" (+{len(items) - 4} more)" if len(items) > 4 else ""))
        return "\n".join(lines)


def _by_job(locks: Iterable[LockSet]) -> dict[str, list[LockSet]]:
    grouped: dict[str, list[LockSet]] = defaultdict(list)
    for lock in locks:
        grouped[lock.job].append(lock)
    return grouped


def moved_under_lock(events: Events, duration: float) -> list[str]:
    """Each (pass, job) where the job was moved while some lock on it certainly lived."""
    locks = _by_job(events.locks)
    found = []
    for stall in events.passes:
        for job in stall.ids:
            live = [lock for lock in locks.get(job, ())
                    if lock.returned <= stall.sent
                    and stall.returned + MARGIN < lock.sent + duration]
            if live:
                found.append(f"job {job} moved while {live[-1].token} held it "
                             f"({(live[-1].sent + duration - stall.returned) * 1000:.0f} ms "
                             "left)")
    return found


def finished_without_lock(events: Events, duration: float) -> list[str]:
    """Each successful finish certainly made by a token that did not hold the job's lock."""
    locks = _by_job(events.locks)
    found = []
    for done in events.finishes:
        if done.reply != 0:
            continue
        mine = [lock for lock in locks.get(done.job, ())
                if lock.token == done.token and lock.returned <= done.sent]
        fetch = next((lock for lock in mine if lock.fetch), None)
        if fetch is None:
            found.append(f"job {done.job} finished by {done.token}, which never fetched it")
            continue
        taken = [lock for lock in locks[done.job] if lock.fetch and lock.token != done.token
                 and lock.sent >= fetch.returned and lock.returned <= done.sent]
        last = max(lock.returned for lock in mine)
        if taken:
            found.append(f"job {done.job} finished by {done.token} after {taken[0].token} "
                         "fetched it")
        elif done.sent > last + duration + MARGIN:
            found.append(f"job {done.job} finished by {done.token} "
                         f"{(done.sent - last - duration) * 1000:.0f} ms after its lock "
                         "expired")
    return found


def _holders(events: Events) -> Counter[str]:
    """Who held each recovered job: `killed`, `frozen`, or `live workers` (its lock lapsed).

    Each fetch of a job ends in a finish or in one recovery, so the k-th recovery of a job
    (in pass order) pairs with its k-th fetch (in send order). Pairing by time instead would
    misattribute a recovery to the fetch that was already in flight to take the job back.
    """
    fetches = _by_job(lock for lock in events.locks if lock.fetch)
    seen: Counter[str] = Counter()
    held: Counter[str] = Counter()
    for stall in events.passes:
        for job in stall.ids:
            ordered = sorted(fetches.get(job, ()), key=lambda lock: lock.sent)
            k = seen[job]
            seen[job] += 1
            if k >= len(ordered):
                held["nobody fetched"] += 1
            else:
                held[events.fates.get(ordered[k].token, "live workers")] += 1
    return held


def judge(label: str, added: Sequence[str], events: Events, outcome: Outcome, *, workers: int,
          killed: int, frozen: int, lock_ms: int, duration: float,
          errors: Sequence[str] = (), flows: FlowOutcome | None = None) -> CrashVerdict:
    """Check a run's events and end state: none lost, none completed twice, none moved under
    a live lock, no finish without the lock, only 0/-2/-6 finish replies, nothing left; with
    `flows`, also `judge_flows`."""
    lock_s = lock_ms / 1000
    found = judge_flows(flows) if flows is not None else FlowFindings(0, (), (), (), ())
    sizes = {len(children) for children in flows.children.values()} if flows else set()
    done = Counter(f.job for f in events.finishes if f.reply == 0)
    refusals = Counter(int(f.reply) for f in events.finishes
                       if isinstance(f.reply, int) and f.reply in REFUSED)
    unexpected = [f"job {f.job} by {f.token}: {f.reply!r}" for f in events.finishes
                  if f.reply != 0 and not (isinstance(f.reply, int) and f.reply in REFUSED)]
    return CrashVerdict(
        label=label, jobs=len(added), workers=workers, killed=killed, frozen=frozen,
        duration=duration, fetches=sum(lock.fetch for lock in events.locks),
        renewals=sum(not lock.fetch for lock in events.locks),
        renewals_refused=events.renewals_refused, successes=sum(done.values()),
        refusals=dict(refusals), recovered=sum(len(p.ids) for p in events.passes),
        recovered_from=dict(_holders(events)), stall_passes=len(events.passes),
        lost=tuple(job for job in added if job not in outcome.completed),
        duplicated={job: n for job, n in done.items() if n > 1},
        moved_under_lock=tuple(moved_under_lock(events, lock_s)),
        finished_without_lock=tuple(finished_without_lock(events, lock_s)),
        unexpected=tuple(unexpected), left={k: n for k, n in outcome.left.items() if n},
        errors=tuple(errors) + found.errors, parents=len(flows.children) if flows else 0,
        children=max(sizes, default=0), released_once=found.released_once,
        release_faults=found.release_faults, completed_early=found.completed_early,
        processed_faults=found.processed_faults)
