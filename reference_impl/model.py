"""QueueModel: applies ops to an in-memory `Store` exactly as the BullMQ 6.x scripts would."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from reference_impl import limits, scores, versions
from reference_impl.ops import (
    Add,
    ChangeDelay,
    ChangePriority,
    MoveResult,
    MoveToActive,
    MoveToDelayed,
    Op,
    Pause,
    Promote,
    Result,
    Resume,
    fetched,
)
from reference_impl.store import JsonText, Store
from reference_impl.versions import Version
from reference_impl.worker_ops import (
    AddLog,
    ExtendLock,
    ExtendLocks,
    GetRateLimitTtl,
    MoveJobFromActiveToWait,
    MoveStalledJobsToWait,
    MoveToFinished,
    Pttl,
    ReleaseLock,
    RemoveDeduplicationKey,
    RemoveJob,
    RetryJob,
    UpdateData,
    UpdateProgress,
)

#: Events cap written to meta by the first add (`opts.maxLenEvents`).
DEFAULT_MAX_EVENTS = 10000
#: Return codes (Node `ErrorCode`).
JOB_NOT_EXIST = -1
JOB_LOCK_NOT_EXIST = -2
JOB_NOT_IN_STATE = -3
JOB_LOCK_MISMATCH = -6
#: Every negative code a BullMQ script returns (Node `ErrorCode`, PROTOCOL §7.4): its Node name
#: and what it means. Python names -4 `JobPendingDependencies` and has no -8.
ERROR_CODES: Mapping[int, tuple[str, str]] = {
    JOB_NOT_EXIST: ("JobNotExist", "job does not exist"),
    JOB_LOCK_NOT_EXIST: ("JobLockNotExist", "job lock does not exist"),
    JOB_NOT_IN_STATE: ("JobNotInState", "job is not in the state the script expects"),
    -4: ("JobPendingChildren", "job has pending children"),
    -5: ("ParentJobNotExist", "parent job does not exist"),
    JOB_LOCK_MISMATCH: ("JobLockMismatch", "job lock is held with another token"),
    -7: ("ParentJobCannotBeReplaced", "parent job cannot be replaced"),
    -8: ("JobBelongsToJobScheduler", "job belongs to a job scheduler"),
    -9: ("JobHasFailedChildren", "job has a failed child"),
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


class QueueModel:
    """One queue's keys, and the protocol's ops on them, as of one protocol version.

    The store is addressed by key suffix (`wait`, `delayed`, a job id, `<id>:lock`...), so the
    model is independent of the key profile. `protocol` is an npm `bullmq` version
    (`reference_impl.versions`); where the client computes part of the state (scores before
    5.8.6), the model does what that release's Node client did.
    """

    def __init__(self, store: Store | None = None,
                 protocol: Version = versions.CURRENT) -> None:
        self.store = store or Store()
        self.protocol = protocol

    def _since(self, boundary: Version) -> bool:
        return self.protocol >= boundary

    # --- shared pieces -------------------------------------------------------------------
    def _paused(self) -> bool:
        return self.store.hget("meta", "paused") is not None

    def _target(self) -> str:
        """The list ready jobs go to: `paused` while paused, before 6.0.0."""
        if not self._since(versions.NO_PAUSED_LIST) and self._paused():
            return "paused"
        return "wait"

    def paused_or_maxed(self) -> bool:
        if self._paused():
            return True
        if not self._since(versions.GLOBAL_CONCURRENCY):
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

    def _delay_marker(self) -> None:
        head = self.store.zrange("delayed")
        if head:
            member = "1" if self._since(versions.DELAY_MARKER_MEMBER) else "0"
            self.store.zadd("marker", scores.next_wake(int(head[0][1])), member)

    def _delay_marker_unless_paused(self) -> None:
        """Before 5.8.7 the delayed writes skipped the marker while meta.paused was set."""
        if self._since(versions.PAUSED_DELAY_MARKER) or not self._paused():
            self._delay_marker()

    def _priority_score(self, priority: int, counter: int) -> int:
        if self._since(versions.PRIORITY_MODULO):
            return scores.priority_score(priority, counter)
        return scores.legacy_priority_score(priority, counter)

    def _prioritize(self, job_id: str, priority: int, paused_or_maxed: bool) -> None:
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

    # --- ops ------------------------------------------------------------------------------
    def apply(self, op: Op) -> Result:
        """Apply one op and return its normalized result."""
        match op:
            case Add():
                return self.add(op)
            case MoveToActive():
                return self.move_to_active(op)
            case Promote():
                return self.promote(op)
            case ChangeDelay():
                return self.change_delay(op)
            case ChangePriority():
                return self.change_priority(op)
            case MoveToDelayed():
                return self.move_to_delayed(op)
            case Pause():
                return self.pause()
            case Resume():
                return self.resume()
        handler = worker_handler(type(op))
        if handler is None:
            raise TypeError(f"unknown op {op!r}")
        return handler(self, op)

    def add(self, op: Add) -> str:
        """addStandardJob / addDelayedJob / addPrioritizedJob, routed like the Node client."""
        counter = self.store.incr("id")
        job_id = op.job_id if op.job_id else str(counter)
        self.max_events()
        if op.job_id and self.store.exists(job_id):
            self.event("event", "duplicated", "jobId", job_id)
            return job_id
        dedup = op.opts.get("de")
        if dedup:
            owner = limits.deduplicate(self, dedup, job_id)
            if owner is not None:
                return owner
        delay = int(op.opts.get("delay", 0) or 0)
        priority = int(op.opts.get("priority", 0) or 0)
        job: dict[str, str | JsonText] = {
            "name": op.name,
            "data": JsonText(op.data),
            "opts": JsonText(dict(op.opts), exact=False),
            "timestamp": lua_int_text(op.timestamp),
            "delay": str(delay),
            "priority": str(priority),
        }
        if dedup:
            job["deid"] = str(dedup["id"])
        for name, value in job.items():
            self.store.hset(job_id, name, value)
        self.event("event", "added", "jobId", job_id, "name", op.name)
        route = op.route()
        if route == "delayed" and not self._since(versions.BAND_BUMP):
            fire = op.timestamp + delay if delay > 0 else 0
            self.store.zadd("delayed", scores.legacy_delayed_score(fire, counter), job_id)
            self.event("event", "delayed", "jobId", job_id, "delay", lua_int_text(fire))
            self._delay_marker_unless_paused()
        elif route == "delayed":
            fire = self._insert_delayed(job_id, op.timestamp, delay)
            self.event("event", "delayed", "jobId", job_id, "delay", lua_int_text(fire))
            self._delay_marker_unless_paused()
        elif route == "prioritized":
            self._prioritize(job_id, priority, self.paused_or_maxed())
            self.event("event", "waiting", "jobId", job_id)
        else:
            paused_or_maxed = self.paused_or_maxed()
            if op.opts.get("lifo"):
                self.store.rpush(self._target(), job_id)
            else:
                self.store.lpush(self._target(), job_id)
            self.base_marker(paused_or_maxed)
            self.event("event", "waiting", "jobId", job_id)
        return job_id

    def promote_due(self, now: int, paused_or_maxed: bool) -> list[str]:
        """The sweep: move up to 1000 jobs due at `now` (whole band of `now`) out of delayed."""
        if self._since(versions.BAND_BUMP):
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

    def move_to_active(self, op: MoveToActive) -> MoveResult:
        """moveToActive: sweep, rate limit, then wait before prioritized, then activate."""
        return self.take_next(op.now, op.token, op.lock_duration, op.limiter, op.name)

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
        counted = max_jobs is not None and self.store.hget(job_id, "defa") is None
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
        if self._since(versions.ACTIVATION_MARKER):
            self.base_marker(False)
        return fetched(job_id)

    def promote(self, op: Promote) -> int:
        """promote-9: one delayed job to wait/prioritized, or -3 when it is not delayed."""
        if not self.store.zrem("delayed", op.job_id):
            return JOB_NOT_IN_STATE
        priority = self.priority_of(op.job_id)
        paused_or_maxed = self.paused_or_maxed()
        target = self._target()
        waiting = self.store.lrange(target)
        if waiting and waiting[0].startswith(LEGACY_MARKER):
            self.store.lpop(target)
        if priority == 0:
            self.store.lpush(target, op.job_id)
            self.base_marker(paused_or_maxed)
        else:
            self._prioritize(op.job_id, priority, paused_or_maxed)
        self.event("event", "waiting", "jobId", op.job_id, "prev", "delayed")
        self.store.hset(op.job_id, "delay", "0")
        return 0

    def _legacy_redelay(self, job_id: str, delay: int, fire: int, events_default: bool) -> None:
        """ZADD a caller-computed score; the event's delay is the score / 4096 as Lua prints
        it. `events_default`: the script writes meta's opts.maxLenEvents when it is missing."""
        score = scores.client_score(job_id, fire)
        self.store.hset(job_id, "delay", lua_int_text(delay))
        self.store.zadd("delayed", score, job_id)
        if events_default:
            self.max_events()
        delay_text = scores.lua_number_text(scores.next_wake(score))
        self.event("event", "delayed", "jobId", job_id, "delay", delay_text)

    def change_delay(self, op: ChangeDelay) -> int:
        """changeDelay-4: re-score from (now, delay), computed before the job leaves the set."""
        if not self.store.exists(op.job_id):
            return JOB_NOT_EXIST
        if not self._since(versions.BAND_BUMP):
            if not self.store.zrem("delayed", op.job_id):
                return JOB_NOT_IN_STATE
            self._legacy_redelay(op.job_id, op.delay, op.now + op.delay,
                                 self._since(versions.CHANGE_DELAY_MARKER))
            if self._since(versions.CHANGE_DELAY_MARKER):
                self._delay_marker_unless_paused()
            return 0
        placed = scores.delayed_score(self._delayed_scores(), op.now, op.delay)
        if not self.store.zrem("delayed", op.job_id):
            return JOB_NOT_IN_STATE
        self.store.hset(op.job_id, "delay", lua_int_text(op.delay))
        self.store.zadd("delayed", placed.score, op.job_id)
        self.max_events()
        self.event("event", "delayed", "jobId", op.job_id, "delay", lua_int_text(placed.fire))
        self._delay_marker_unless_paused()
        return 0

    def change_priority(self, op: ChangePriority) -> int:
        """changePriority-7: re-queue a waiting/prioritized job; always write the field."""
        if not self.store.exists(op.job_id):
            return JOB_NOT_EXIST
        paused_or_maxed = self.paused_or_maxed()
        target = self._target()
        if not self._since(versions.CHANGE_PRIORITY_TO_WAIT):
            # Re-added with a fresh counter even for priority 0; a waiting job moves only for
            # a priority > 0; lifo is ignored.
            if self.store.zrem("prioritized", op.job_id) or (
                    op.priority > 0 and self.store.lrem_last(target, op.job_id)):
                self._prioritize(op.job_id, op.priority, paused_or_maxed)
        elif self.store.zrem("prioritized", op.job_id) or self.store.lrem_last(target,
                                                                               op.job_id):
            if op.priority == 0:
                if op.lifo:
                    self.store.rpush(target, op.job_id)
                else:
                    self.store.lpush(target, op.job_id)
                self.base_marker(paused_or_maxed)
            elif op.lifo:
                self.store.zadd("prioritized", scores.lua_number(op.priority * scores.TIER),
                                op.job_id)
            else:
                self._prioritize(op.job_id, op.priority, paused_or_maxed)
        self.store.hset(op.job_id, "priority", lua_int_text(op.priority))
        return 0

    def move_to_delayed(self, op: MoveToDelayed) -> Result:
        """moveToDelayed-11: release the lock, leave active, re-score from (now, delay)."""
        if not self.store.exists(op.job_id):
            return JOB_NOT_EXIST
        lock_error = self.remove_lock(op.job_id, op.token)
        if lock_error:
            return lock_error
        if op.fields:
            self.update_fields(op.job_id, op.fields)
        if not self.store.lrem_last("active", op.job_id):
            return JOB_NOT_IN_STATE
        if not self._since(versions.BAND_BUMP):
            if not op.skip_attempt:
                self.store.hincrby(op.job_id, "atm", 1)
            self._legacy_redelay(op.job_id, op.delay, max(0, op.now + op.delay),
                                 self._since(versions.MAX_EVENTS_ON_MOVE))
            self._delay_marker_unless_paused()
            return 0
        fire = self._insert_delayed(op.job_id, op.now, op.delay)
        if not op.skip_attempt:
            self.store.hincrby(op.job_id, "atm", 1)
        self.store.hset(op.job_id, "delay", lua_int_text(op.delay))
        self.max_events()
        self.event("event", "delayed", "jobId", op.job_id, "delay", lua_int_text(fire))
        if op.fetch_next:
            got = self.take_next(op.now, op.token, FETCH_LOCK_DURATION)
            if got["job"] is not None:
                return got
        self._delay_marker_unless_paused()
        return 0

    def remove_lock(self, job_id: str, token: str) -> int:
        """The lock check of the scripts a job leaves active by: 0 when released (token "0":
        not checked, the lock left to expire), -6 for another token's lock, -2 for none."""
        if token == "0":
            return 0
        lock = self.store.get(f"{job_id}:lock")
        if lock is None:
            return JOB_LOCK_NOT_EXIST
        if lock != token:
            return JOB_LOCK_MISMATCH if self._since(versions.LOCK_MISMATCH_CODE) \
                else JOB_LOCK_NOT_EXIST
        self.store.delete(f"{job_id}:lock")
        if self._since(versions.LOCK_MISMATCH_CODE):
            self.store.srem("stalled", job_id)
        return 0

    def update_fields(self, job_id: str, fields: Mapping[str, str]) -> None:
        """HMSET of the fields a client sends with a finish, retry or backoff."""
        for name, value in fields.items():
            self.store.hset(job_id, name, value)

    def _rename_pause(self, source: str, target: str) -> None:
        """Before 6.0.0 pause and resume RENAMEd the whole list (overwriting the target)."""
        if self.store.exists(source):
            self.store.rename(source, target)

    def pause(self) -> int | None:
        """pause-7 'paused': flag meta and drop both markers; jobs stay where they are (before
        6.0.0: wait is renamed to paused, and the script returns nothing)."""
        if not self._since(versions.NO_PAUSED_LIST):
            self._rename_pause("wait", "paused")
            self.store.hset("meta", "paused", "1")
            self.store.delete("marker")
            self.event("event", "paused")
            return None
        self.store.hset("meta", "paused", "1")
        self.store.delete("marker")
        self.event("event", "paused")
        return 0

    def resume(self) -> int | None:
        """pause-7 'resumed': clear the flag, migrate a legacy paused list, restore markers
        (before 6.0.0: paused is renamed back to wait, and the script returns nothing)."""
        if not self._since(versions.NO_PAUSED_LIST):
            had_jobs = self.store.exists("paused")
            self._rename_pause("paused", "wait")
            self.store.hdel("meta", "paused")
            if had_jobs or self.store.zrange("prioritized"):
                self.store.zadd("marker", 0, "0")
            else:
                self._delay_marker()
            self.event("event", "resumed")
            return None
        self.store.hdel("meta", "paused")
        left = 0
        if self.store.exists("paused"):
            if not self.store.exists("wait"):
                self.store.rename("paused", "wait")
            else:
                batch = self.store.lrange("paused")[:RESUME_BATCH]
                for job_id in batch:
                    self.store.rpush("wait", job_id)
                self.store.ltrim_left("paused", len(batch))
                left = self.store.llen("paused")
        if self.store.llen("wait") + len(self.store.zrange("prioritized")) > 0:
            self.store.zadd("marker", 0, "0")
        else:
            self._delay_marker()
        self.event("event", "resumed")
        return left


def worker_handler(kind: type) -> Callable[[QueueModel, Any], Result] | None:
    """The model function of a worker-half op (imported late: those modules use this one)."""
    from reference_impl import finish, job_updates, limits, locks, recovery

    handlers: dict[type, Callable[[QueueModel, Any], Result]] = {
        MoveToFinished: finish.move_to_finished,
        RetryJob: recovery.retry_job,
        MoveStalledJobsToWait: recovery.move_stalled_jobs_to_wait,
        ExtendLock: locks.extend_lock,
        ExtendLocks: locks.extend_locks,
        ReleaseLock: locks.release_lock,
        MoveJobFromActiveToWait: limits.move_job_from_active_to_wait,
        GetRateLimitTtl: limits.get_rate_limit_ttl,
        RemoveDeduplicationKey: limits.remove_deduplication_key,
        RemoveJob: job_updates.remove_job,
        UpdateProgress: job_updates.update_progress,
        UpdateData: job_updates.update_data,
        AddLog: job_updates.add_log,
    }
    return handlers.get(kind)


def json_text(value: Any) -> str:
    """Compact JSON, as a client would send job data."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
