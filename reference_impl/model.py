"""QueueModel: applies ops to an in-memory `Store` exactly as the BullMQ 6.x scripts would."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

from reference_impl import (
    cron_answers,
    finish,
    flow_removal,
    flows,
    getters,
    job_updates,
    limits,
    locks,
    maintenance,
    recovery,
    repeatables,
    scheduler_upsert,
    schedulers,
    scores,
    versions,
    worker_iteration,
)
from reference_impl.getter_ops import (
    GetCounts,
    GetCountsPerPriority,
    GetJob,
    GetJobLogs,
    GetJobs,
    GetMetrics,
    GetRanges,
    GetState,
    IsFinished,
    IsJobInList,
    IsMaxed,
    Paginate,
)
from reference_impl.maintenance_ops import (
    CleanJobsInSet,
    Drain,
    MoveJobsToWait,
    Obliterate,
    RemoveOrphanedJobs,
    ReprocessJob,
    SaveStacktrace,
)
from reference_impl.ops import (
    Add,
    AddFlow,
    AddParentJob,
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
)
from reference_impl.queue_core import (
    DEFAULT_MAX_EVENTS,
    ERROR_CODES,
    FETCH_LOCK_DURATION,
    JOB_LOCK_MISMATCH,
    JOB_LOCK_NOT_EXIST,
    JOB_NOT_EXIST,
    JOB_NOT_IN_STATE,
    LEGACY_MARKER,
    RESUME_BATCH,
    QueueCore,
    lua_int_text,
)
from reference_impl.repeatable_ops import (
    AddRepeatableJob,
    RemoveRepeatable,
    UpdateRepeatableJobMillis,
)
from reference_impl.scheduler_ops import (
    AddJobScheduler,
    GetJobScheduler,
    NextMillis,
    PickUpIteration,
    RemoveJobScheduler,
    UpdateJobScheduler,
    UpsertJobScheduler,
)
from reference_impl.store import JsonText
from reference_impl.worker_ops import (
    AddLog,
    ExtendLock,
    ExtendLocks,
    GetDependencyCounts,
    GetRateLimitTtl,
    MoveJobFromActiveToWait,
    MoveStalledJobsToWait,
    MoveToFinished,
    MoveToWaitingChildren,
    ReleaseLock,
    RemoveChildDependency,
    RemoveDeduplicationKey,
    RemoveJob,
    RemoveUnprocessedChildren,
    RetryJob,
    UpdateData,
    UpdateProgress,
)

__all__ = ["DEFAULT_MAX_EVENTS", "ERROR_CODES", "JOB_LOCK_MISMATCH", "JOB_LOCK_NOT_EXIST",
           "JOB_NOT_EXIST", "JOB_NOT_IN_STATE", "LEGACY_MARKER", "QueueModel", "json_text",
           "lua_int_text"]

#: The model function of each worker-half op.
WORKER_HANDLERS: dict[type, Callable[[QueueCore, Any], Result]] = {
    MoveToFinished: finish.move_to_finished,
    RetryJob: recovery.retry_job,
    MoveStalledJobsToWait: recovery.move_stalled_jobs_to_wait,
    ExtendLock: locks.extend_lock,
    ExtendLocks: locks.extend_locks,
    ReleaseLock: locks.release_lock,
    MoveJobFromActiveToWait: limits.move_job_from_active_to_wait,
    GetRateLimitTtl: limits.get_rate_limit_ttl,
    RemoveDeduplicationKey: limits.remove_deduplication_key,
    RemoveJob: flow_removal.remove_job,
    RemoveUnprocessedChildren: flow_removal.remove_unprocessed_children,
    UpdateProgress: job_updates.update_progress,
    UpdateData: job_updates.update_data,
    AddLog: job_updates.add_log,
    MoveToWaitingChildren: flows.move_to_waiting_children,
    GetDependencyCounts: flows.get_dependency_counts,
    RemoveChildDependency: flows.remove_child_dependency,
    RemoveJobScheduler: schedulers.remove_job_scheduler,
    GetJobScheduler: schedulers.get_job_scheduler,
    AddRepeatableJob: repeatables.add_repeatable_job,
    UpdateRepeatableJobMillis: repeatables.update_repeatable_job_millis,
    RemoveRepeatable: repeatables.remove_repeatable,
    GetCounts: getters.get_counts,
    GetCountsPerPriority: getters.get_counts_per_priority,
    GetState: getters.get_state,
    GetRanges: getters.get_ranges,
    IsFinished: getters.is_finished,
    IsJobInList: getters.is_job_in_list,
    IsMaxed: getters.is_maxed,
    GetMetrics: getters.get_metrics,
    GetJobs: getters.get_jobs,
    Paginate: getters.paginate,
    GetJob: getters.get_job,
    GetJobLogs: getters.get_job_logs,
    Drain: maintenance.drain,
    CleanJobsInSet: maintenance.clean_jobs_in_set,
    Obliterate: maintenance.obliterate,
    MoveJobsToWait: maintenance.move_jobs_to_wait,
    ReprocessJob: maintenance.reprocess_job,
    SaveStacktrace: maintenance.save_stacktrace,
    RemoveOrphanedJobs: maintenance.remove_orphaned_jobs,
}


class QueueModel(QueueCore):
    """One queue's keys, and the protocol's ops on them, as of one protocol version (see
    `QueueCore`). `apply` runs any op; the worker half's are in their own modules."""

    # --- ops ------------------------------------------------------------------------------
    def apply(self, op: Op) -> Result:
        """Apply one op and return its normalized result."""
        match op:
            case Add() | AddParentJob():
                return self.add(op)
            case AddFlow():
                return self.add_flow(op)
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
            case AddJobScheduler():
                return schedulers.add_job_scheduler(self, op, self.add_iteration)
            case UpdateJobScheduler():
                return schedulers.update_job_scheduler(self, op, self.add_iteration)
            case NextMillis():
                return cron_answers.next_millis(op)  # the client's computation: no writes
            case PickUpIteration():
                call = worker_iteration.next_call(op)
                if call is None:
                    return None
                return schedulers.update_job_scheduler(self, call, self.add_iteration)
            case UpsertJobScheduler():
                upsert = scheduler_upsert.upsert_call(op)
                if upsert is None:
                    return None
                return schedulers.add_job_scheduler(self, upsert, self.add_iteration)
        handler = WORKER_HANDLERS.get(type(op))
        if handler is None:
            raise TypeError(f"unknown op {op!r}")
        return handler(self, op)

    def add_iteration(self, op: Add, job_id: str, counter: int) -> None:
        """A scheduler's iteration, stored and enqueued as `op` is by an add
        (`reference_impl.schedulers`): its id, clock and opts come from the scheduler. It is
        never deduplicated: its `de` option only names the `deid` it stores."""
        self._add_job(op, job_id, counter, None, deduplicate=False)

    def add_flow(self, op: AddFlow) -> str | int:
        """FlowProducer.add: every entry (`flows.flow_entries`), with the deferred release
        from 6.5.1, then each parent's release check; the root's reply."""
        defer = self.since(versions.FLOW_DEFERRED_RELEASE)
        entries = flows.flow_entries(op, self.ref)
        # every queue of a vector's world is a QueueModel (`expected.expect_for` builds them)
        replies = [cast(QueueModel, self.world[entry.queue]).add(entry.op, defer)
                   for entry in entries]
        if defer:
            for link in flows.flow_parents(entries):
                flows.release_after_flow(self, link, op.timestamp)
        return replies[0]

    def add(self, op: Add | AddParentJob, defer: bool = False) -> str | int:
        """addStandardJob / addDelayedJob / addPrioritizedJob, routed like the Node client;
        addParentJob for `AddParentJob`. A child (`opts.parent`) needs its parent's hash
        (else -5, before anything is written) and joins the parent's dependencies last."""
        link = flows.parent_link(op.opts)
        if link is not None and op.opts.get("de"):
            raise NotImplementedError("Node refuses deduplication with a parent")
        if link is not None and not flows.parent_exists(self, link.key):
            return flows.PARENT_JOB_NOT_EXIST
        counter = self.store.incr("id")
        job_id = op.job_id if op.job_id else str(counter)
        self.max_events()
        if op.job_id and self.store.exists(job_id):
            return flows.duplicated(self, job_id, link, op.timestamp, defer)
        if isinstance(op, AddParentJob):
            if op.opts.get("de"):
                raise NotImplementedError("the model does not deduplicate parent jobs")
            self._store_job(op, job_id, link)
            self.store.zadd("waiting-children", op.timestamp, job_id)
            self.event("event", "waiting-children", "jobId", job_id)
            if link is not None:
                flows.add_child(self, link, job_id)
            return job_id
        added = self._add_job(op, job_id, counter, link)
        if link is not None:
            flows.add_child(self, link, job_id)
        return added

    def _store_job(self, op: Add | AddParentJob, job_id: str,
                   link: flows.ParentLink | None) -> None:
        """storeJob: the job hash and the `added` event."""
        dedup = op.opts.get("de")
        job: dict[str, str | JsonText] = {
            "name": op.name,
            "data": JsonText(op.data),
            "opts": JsonText(dict(op.opts), exact=False),
            "timestamp": lua_int_text(op.timestamp),
            "delay": str(int(op.opts.get("delay", 0) or 0)),
            "priority": str(int(op.opts.get("priority", 0) or 0)),
        }
        if link is not None:
            job["parentKey"] = link.key
            job["parent"] = flows.record_text(link.record)
        if dedup:
            job["deid"] = str(dedup["id"])
        for name, value in job.items():
            self.store.hset(job_id, name, value)
        self.event("event", "added", "jobId", job_id, "name", op.name)

    def _add_job(self, op: Add, job_id: str, counter: int, link: flows.ParentLink | None,
                 deduplicate: bool = True) -> str:
        dedup = op.opts.get("de")
        if dedup and deduplicate:
            owner = limits.deduplicate(self, dedup, job_id)
            if owner is not None:
                return owner
        delay = int(op.opts.get("delay", 0) or 0)
        priority = int(op.opts.get("priority", 0) or 0)
        self._store_job(op, job_id, link)
        route = op.route()
        if route == "delayed" and not self.since(versions.BAND_BUMP):
            fire = op.timestamp + delay if delay > 0 else 0
            self.store.zadd("delayed", scores.legacy_delayed_score(fire, counter), job_id)
            self.event("event", "delayed", "jobId", job_id, "delay", lua_int_text(fire))
            self._delay_marker_unless_paused()
        elif route == "delayed":
            fire = self._insert_delayed(job_id, op.timestamp, delay)
            self.event("event", "delayed", "jobId", job_id, "delay", lua_int_text(fire))
            self._delay_marker_unless_paused()
        elif route == "prioritized":
            self.prioritize(job_id, priority, self.paused_or_maxed())
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

    def move_to_active(self, op: MoveToActive) -> MoveResult:
        """moveToActive: sweep, rate limit, then wait before prioritized, then activate."""
        return self.take_next(op.now, op.token, op.lock_duration, op.limiter, op.name)

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
            self.prioritize(op.job_id, priority, paused_or_maxed)
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
        if not self.since(versions.BAND_BUMP):
            if not self.store.zrem("delayed", op.job_id):
                return JOB_NOT_IN_STATE
            self._legacy_redelay(op.job_id, op.delay, op.now + op.delay,
                                 self.since(versions.CHANGE_DELAY_MARKER))
            if self.since(versions.CHANGE_DELAY_MARKER):
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
        if not self.since(versions.CHANGE_PRIORITY_TO_WAIT):
            # Re-added with a fresh counter even for priority 0; a waiting job moves only for
            # a priority > 0; lifo is ignored.
            if self.store.zrem("prioritized", op.job_id) or (
                    op.priority > 0 and self.store.lrem_last(target, op.job_id)):
                self.prioritize(op.job_id, op.priority, paused_or_maxed)
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
                self.prioritize(op.job_id, op.priority, paused_or_maxed)
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
        if not self.since(versions.BAND_BUMP):
            if not op.skip_attempt:
                self.store.hincrby(op.job_id, "atm", 1)
            self._legacy_redelay(op.job_id, op.delay, max(0, op.now + op.delay),
                                 self.since(versions.MAX_EVENTS_ON_MOVE))
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

    def _rename_pause(self, source: str, target: str) -> None:
        """Before 6.0.0 pause and resume RENAMEd the whole list (overwriting the target)."""
        if self.store.exists(source):
            self.store.rename(source, target)

    def pause(self) -> int | None:
        """pause-7 'paused': flag meta and drop both markers; jobs stay where they are (before
        6.0.0: wait is renamed to paused, and the script returns nothing)."""
        if not self.since(versions.NO_PAUSED_LIST):
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
        if not self.since(versions.NO_PAUSED_LIST):
            had_jobs = self.store.exists("paused")
            self._rename_pause("paused", "wait")
            self.store.hdel("meta", "paused")
            if had_jobs or self.store.zrange("prioritized"):
                self.store.zadd("marker", 0, "0")
            else:
                self.delay_marker()
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
            self.delay_marker()
        self.event("event", "resumed")
        return left


def json_text(value: Any) -> str:
    """Compact JSON, as a client would send job data."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
