"""QueueCore: one queue's store and the protocol's shared steps, as of one protocol version.

The steps several scripts share live here (markers, events, the delayed sweep, scoring, the
worker fetch with its rate limit, the lock check). `reference_impl.model.QueueModel` adds the
ops; the worker half's ops are in their own modules (`finish`, `recovery`, `locks`, `limits`,
`job_updates`), which take a `QueueCore`.
"""

from __future__ import annotations

from collections.abc import Mapping

from reference_impl import scores, versions
from reference_impl.keys import QUEUE_REF
from reference_impl.ops import MoveResult, fetched
from reference_impl.store import Store
from reference_impl.versions import Version
from reference_impl.worker_ops import Pttl

#: Events cap written to meta by the first add (`opts.maxLenEvents`).
DEFAULT_MAX_EVENTS = 10000
#: Return codes (Node `ErrorCode`).
JOB_NOT_EXIST = -1
JOB_LOCK_NOT_EXIST = -2
JOB_NOT_IN_STATE = -3
JOB_LOCK_MISMATCH = -6
JOB_PENDING_CHILDREN = -4
JOB_HAS_FAILED_CHILDREN = -9
#: Every negative code a BullMQ script returns (Node `ErrorCode`, RESEARCH §7.4): its Node name
#: and what it means. Python names -4 `JobPendingDependencies` and has no -8.
ERROR_CODES: Mapping[int, tuple[str, str]] = {
    JOB_NOT_EXIST: ("JobNotExist", "job does not exist"),
    JOB_LOCK_NOT_EXIST: ("JobLockNotExist", "job lock does not exist"),
    JOB_NOT_IN_STATE: ("JobNotInState", "job is not in the state the script expects"),
    JOB_PENDING_CHILDREN: ("JobPendingChildren", "job has pending children"),
    -5: ("ParentJobNotExist", "parent job does not exist"),
    JOB_LOCK_MISMATCH: ("JobLockMismatch", "job lock is held with another token"),
    -7: ("ParentJobCannotBeReplaced", "parent job cannot be replaced"),
    -8: ("JobBelongsToJobScheduler", "job belongs to a job scheduler"),
    JOB_HAS_FAILED_CHILDREN: ("JobHasFailedChildren", "job has a failed child"),
    -10: ("SchedulerJobIdCollision", "job scheduler iteration's job id already exists"),
    -11: ("SchedulerJobSlotsBusy", "job scheduler's current and next slots both have jobs"),
}
#: Prefix of the fake marker ids BullMQ < 5 pushed into wait; 6.x scripts drop them.
LEGACY_MARKER = "0:"
#: The lock duration of a fetch-next (the worker default, which vectors keep).
FETCH_LOCK_DURATION = 30000
#: Most legacy paused jobs one resume migrates into wait.
RESUME_BATCH = 7000


def lua_int_text(value: int) -> str:
    """How Redis renders a Lua number passed to a command (integral doubles print as ints)."""
    return str(scores.lua_number(value))


class QueueCore:
    """One queue's keys and the protocol steps its scripts share, as of one protocol version.

    The store is addressed by key suffix (`wait`, `delayed`, a job id, `<id>:lock`...), so the
    model is independent of the key profile. `protocol` is an npm `bullmq` version
    (`reference_impl.versions`); where the client computes part of the state (scores before
    5.8.6), the model does what that release's Node client did.
    """

    def __init__(self, store: Store | None = None,
                 protocol: Version = versions.CURRENT, ref: str = QUEUE_REF) -> None:
        self.store = store or Store()
        self.protocol = protocol
        #: How vectors name this queue (`<q>`, or `<q2>` for a flow's second queue).
        self.ref = ref
        #: Every queue of the vector by ref, this one included: a parent or a child may live
        #: in another (`join`).
        self.world: dict[str, QueueCore] = {ref: self}

    def join(self, other: QueueCore) -> None:
        """Put this queue and `other` in one world (queues that can name each other)."""
        self.world.update(other.world)
        for queue in self.world.values():
            queue.world = self.world

    def locate(self, key: str) -> tuple[QueueCore, str]:
        """The queue of a job's full key (`<ref>:<id>`) and the job's id in it."""
        ref, sep, job_id = key.partition(":")
        queue = self.world.get(ref) if sep else None
        if queue is None:
            raise NotImplementedError(f"the model follows jobs in its vector's queues only: "
                                      f"{key!r}")
        return queue, job_id

    def job_key(self, job_id: str) -> str:
        """A job of this queue by its full key, as the scripts write it into sets."""
        return f"{self.ref}:{job_id}"

    def since(self, boundary: Version) -> bool:
        """Whether the protocol modelled is `boundary` or later."""
        return self.protocol >= boundary

    def _paused(self) -> bool:
        return self.store.hget("meta", "paused") is not None

    def _target(self) -> str:
        """The list ready jobs go to: `paused` while paused, before 6.0.0."""
        if not self.since(versions.NO_PAUSED_LIST) and self._paused():
            return "paused"
        return "wait"

    def paused_or_maxed(self) -> bool:
        if self._paused():
            return True
        if not self.since(versions.GLOBAL_CONCURRENCY):
            return False
        concurrency = self.store.hget("meta", "concurrency")
        if isinstance(concurrency, str):
            return self.store.llen("active") >= int(concurrency)
        return False

    def max_events(self) -> None:
        if self.store.hget("meta", "opts.maxLenEvents") is None:
            self.store.hset("meta", "opts.maxLenEvents", str(DEFAULT_MAX_EVENTS))

    def event(self, *fields: str) -> None:
        self.store.xadd("events", *fields)
        if len(self.store.keys["events"].entries) > DEFAULT_MAX_EVENTS:  # type: ignore[union-attr]
            raise NotImplementedError("the model does not predict approximate MAXLEN trimming")

    def base_marker(self, paused_or_maxed: bool) -> None:
        if not paused_or_maxed:
            self.store.zadd("marker", 0, "0")

    def delay_marker(self) -> None:
        """The marker for the next delayed job: scored at its fire time (none when delayed is
        empty)."""
        head = self.store.zrange("delayed")
        if head:
            member = "1" if self.since(versions.DELAY_MARKER_MEMBER) else "0"
            self.store.zadd("marker", scores.next_wake(int(head[0][1])), member)

    def _delay_marker_unless_paused(self) -> None:
        """Before 5.8.7 the delayed writes skipped the marker while meta.paused was set."""
        if self.since(versions.PAUSED_DELAY_MARKER) or not self._paused():
            self.delay_marker()

    def _priority_score(self, priority: int, counter: int) -> int:
        if self.since(versions.PRIORITY_MODULO):
            return scores.priority_score(priority, counter)
        return scores.legacy_priority_score(priority, counter)

    def prioritize(self, job_id: str, priority: int, paused_or_maxed: bool) -> None:
        """ZADD to prioritized at the next `pc` count, with the base marker unless paused or
        maxed."""
        counter = self.store.incr("pc")
        self.store.zadd("prioritized", self._priority_score(priority, counter), job_id)
        self.base_marker(paused_or_maxed)

    def _delayed_scores(self) -> list[int]:
        """The delayed zset's scores. BullMQ only ever writes integers there; a seeded fraction
        would make the band bump fractional too, which the model does not follow."""
        found = self.store.zscores("delayed")
        whole = [score for score in found if isinstance(score, int)]
        if len(whole) != len(found):
            raise ValueError("the model takes integer delayed scores only")
        return whole

    def _insert_delayed(self, job_id: str, timestamp: int, delay: int) -> int:
        """Score and ZADD a delayed job; returns the fire time for the event."""
        placed = scores.delayed_score(self._delayed_scores(), timestamp, delay)
        self.store.zadd("delayed", placed.score, job_id)
        return placed.fire

    def priority_of(self, job_id: str) -> int:
        raw = self.store.hget(job_id, "priority")
        return int(raw) if isinstance(raw, str) else 0

    def promote_due(self, now: int, paused_or_maxed: bool) -> list[str]:
        """The sweep: move up to 1000 jobs due at `now` (whole band of `now`) out of delayed."""
        if self.since(versions.BAND_BUMP):
            bound = scores.promote_bound(now)
        else:
            bound = scores.legacy_promote_bound(now)
        due = [m for m, s in self.store.zrange("delayed") if 0 <= s <= bound]
        due = due[: scores.PROMOTE_BATCH]
        for job_id in due:
            self.store.zrem("delayed", job_id)
        target = self._target()
        for job_id in due:
            priority = self.priority_of(job_id)
            if priority == 0:
                self.store.lpush(target, job_id)
            else:
                counter = self.store.incr("pc")
                score = self._priority_score(priority, counter)
                self.store.zadd("prioritized", score, job_id)
            self.event("event", "waiting", "jobId", job_id, "prev", "delayed")
            self.store.hset(job_id, "delay", "0")
        if due:
            self.base_marker(paused_or_maxed)
        return due

    def rate_limit_ttl(self, max_jobs: int | None) -> int:
        """The limiter's remaining window when its counter has reached `max_jobs`, else 0.
        A counter without an expiry never limits."""
        if max_jobs is None:
            return 0
        if int(self.store.get("limiter") or 0) < max_jobs:
            return 0
        return max(self.store.pttl("limiter"), 0)

    def _limits(self, limiter: Mapping[str, int] | None) -> tuple[int | None, int | None]:
        """(max, duration): meta's max wins over the worker's; the worker's duration wins."""
        meta_max = self.store.hget("meta", "max")
        meta_duration = self.store.hget("meta", "duration")
        worker = limiter or {}
        max_jobs = int(meta_max) if isinstance(meta_max, str) else worker.get("max")
        duration = worker.get("duration")
        if duration is None and isinstance(meta_duration, str):
            duration = int(meta_duration)
        return max_jobs, duration

    def take_next(self, now: int, token: str, lock_duration: int,
                  limiter: Mapping[str, int] | None = None, name: str | None = None
                  ) -> MoveResult:
        """The worker fetch shared by moveToActive and every fetch-next: sweep, rate limit,
        paused or maxed, wait before prioritized, then activate."""
        paused_or_maxed = self.paused_or_maxed()
        max_jobs, duration = self._limits(limiter)
        self.promote_due(now, paused_or_maxed)
        limited = self.rate_limit_ttl(max_jobs)
        if limited > 0:
            return fetched(None, Pttl(limited), 0)
        if paused_or_maxed:
            return fetched(None)
        job_id = self.store.rpop("wait")
        if job_id is not None and job_id.startswith(LEGACY_MARKER):
            job_id = self.store.rpop("wait")  # a pre-v5 marker id: dropped, popped once more
        if job_id is not None:
            self.store.lpush("active", job_id)
        else:
            job_id = self.store.zpopmin("prioritized")
            if job_id is None:
                self.store.delete("pc")
            else:
                self.store.lpush("active", job_id)
        if job_id is None:
            head = self.store.zrange("delayed")
            return fetched(None, 0, scores.next_wake_reply(int(head[0][1])) if head else 0)
        counted = max_jobs is not None and (self.store.hget(job_id, "defa") is None
                                            or not self.since(versions.DEFERRED_FAILURE_UNCOUNTED))
        # INCR first: the window starts with the first job it counts
        if counted and self.store.incr("limiter") == 1 and duration is not None:
            self.store.pexpire("limiter", abs(int(duration)))
        if token != "0":
            self.store.set(f"{job_id}:lock", token, pttl=lock_duration)
        self.event("event", "active", "jobId", job_id, "prev", "waiting")
        self.store.hset(job_id, "processedOn", lua_int_text(now))
        if name is not None:
            self.store.hset(job_id, "pb", name)
        self.store.hincrby(job_id, "ats", 1)
        if self.since(versions.ACTIVATION_MARKER):
            self.base_marker(False)
        return fetched(job_id)

    def remove_lock(self, job_id: str, token: str) -> int:
        """The lock check of the scripts a job leaves active by: 0 when released (token "0":
        not checked, the lock left to expire), -6 for another token's lock, -2 for none."""
        if token == "0":
            return 0
        lock = self.store.get(f"{job_id}:lock")
        if lock is None:
            return JOB_LOCK_NOT_EXIST
        if lock != token:
            return JOB_LOCK_MISMATCH if self.since(versions.LOCK_MISMATCH_CODE) \
                else JOB_LOCK_NOT_EXIST
        self.store.delete(f"{job_id}:lock")
        if self.since(versions.LOCK_MISMATCH_CODE):
            self.store.srem("stalled", job_id)
        return 0

    def update_fields(self, job_id: str, fields: Mapping[str, str]) -> None:
        """HMSET of the fields a client sends with a finish, retry or backoff."""
        for name, value in fields.items():
            self.store.hset(job_id, name, value)
