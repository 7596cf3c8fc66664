"""The worker half's rules of the `properties` state machine: finishing, retrying, locks, the
stall check, rate limits, deduplication, removal and job updates, mixed into the queue half's
rules (`conformance.properties.check.DifferentialMachine`).

Each rule drives one op through `_apply` (candidate and model, then compare). Jobs a rule acts
on come from the machine's fetched jobs (with their lock tokens) or its known ids; some calls
use a wrong token or a missing id on purpose.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
from hypothesis.stateful import precondition, rule

from conformance.properties.queue_rules import MachineState, nameable
from reference_impl import versions
from reference_impl.ops import Add, MoveToActive, MoveToDelayed, Op, Result
from reference_impl.versions import Version
from reference_impl.worker_ops import (
    AddLog,
    ExtendLock,
    GetRateLimitTtl,
    MoveJobFromActiveToWait,
    MoveStalledJobsToWait,
    MoveToFinished,
    ReleaseLock,
    RemoveDeduplicationKey,
    RemoveJob,
    RetryJob,
    UpdateData,
    UpdateProgress,
)

#: keepJobs a client packs: keep all, remove at once, keep the newest n, age trims.
KEEP_JOBS: tuple[dict[str, Any], ...] = (
    {"count": -1}, {"count": 0}, {"count": 1}, {"count": 2}, {"age": 1}, {"age": 5, "count": 3},
)
DEDUP_IDS = ("d1", "d2")
#: A token no worker holds.
WRONG_TOKEN = "not-the-holder"


def _worker_protocol(machine: Any) -> bool:
    """The worker half's ops are claimed from WORKER_SINCE on only."""
    protocol: Version = machine.ctx.protocol
    return protocol >= versions.WORKER_SINCE


def _fetched(machine: Any) -> bool:
    return _worker_protocol(machine) and bool(machine.fetched)


def _numeric_ids(machine: Any) -> bool:
    # The stall check walks SMEMBERS stalled; only an intset has an order to predict.
    return _worker_protocol(machine) and all(job_id.isdigit() for job_id in machine.ids)


class WorkerRules(MachineState):
    """Rules for the worker half's ops."""

    def _holder(self, index: int, honest: bool) -> tuple[str, str]:
        job_id, token = self.fetched[index % len(self.fetched)]
        return job_id, token if honest else WRONG_TOKEN

    def _took(self, returned: Result | None, token: str) -> None:
        """Remember a job a fetch-next handed out, with the token it was locked with."""
        if isinstance(returned, dict) and nameable(returned.get("job")):
            self.fetched.append((returned["job"], token))

    @precondition(_fetched)
    @rule(index=st.integers(0, 7), failed=st.booleans(), keep=st.sampled_from(KEEP_JOBS),
          attempts=st.integers(0, 2), fetch_next=st.booleans(), honest=st.booleans())
    def move_to_finished(self, index: int, failed: bool, keep: dict[str, Any], attempts: int,
                         fetch_next: bool, honest: bool) -> None:
        """The holder (or a stranger) completes or fails a fetched job."""
        job_id, token = self._holder(index, honest)
        fields = {"failedReason": "boom", "stacktrace": "[]"} if failed else None
        op = MoveToFinished(job_id, self.now, "failed" if failed else "completed",
                            "boom" if failed else '"ok"', token, keep, attempts, fields,
                            fetch_next)
        self._took(self._apply(op), token)

    @precondition(_fetched)
    @rule(index=st.integers(0, 7), lifo=st.booleans(), honest=st.booleans())
    def retry_job(self, index: int, lifo: bool, honest: bool) -> None:
        """The holder retries a failed job at once (no backoff)."""
        job_id, token = self._holder(index, honest)
        self._apply(RetryJob(job_id, self.now, token, lifo, {"failedReason": "boom"}))

    @precondition(_fetched)
    @rule(index=st.integers(0, 7), delay=st.sampled_from((1, 1000)), fetch_next=st.booleans())
    def back_off(self, index: int, delay: int, fetch_next: bool) -> None:
        """The holder fails a job with a backoff (moveToDelayed with the failure's fields)."""
        job_id, token = self._holder(index, True)
        op = MoveToDelayed(job_id, self.now, delay, token, fields={"failedReason": "boom"},
                           fetch_next=fetch_next)
        self._took(self._apply(op), token)

    @precondition(_fetched)
    @rule(index=st.integers(0, 7), honest=st.booleans(), release=st.booleans())
    def lock(self, index: int, honest: bool, release: bool) -> None:
        """The lock manager renews a lock, or the worker releases one."""
        job_id, token = self._holder(index, honest)
        self._apply(ReleaseLock(job_id, token) if release else ExtendLock(job_id, token, 60000))

    @precondition(_numeric_ids)
    @rule(max_stalled=st.integers(0, 2))
    def stall_check(self, max_stalled: int) -> None:
        """One stall check (its stalled-check key then holds off the next for 30 s)."""
        self._apply(MoveStalledJobsToWait(self.now, max_stalled))

    @precondition(_fetched)
    @rule(index=st.integers(0, 7))
    def push_back(self, index: int) -> None:
        """A rate-limited worker hands its job back."""
        job_id, token = self._holder(index, True)
        self._apply(MoveJobFromActiveToWait(job_id, token))

    @precondition(_worker_protocol)
    # Windows of 30 s and more: the model's clock stands still while Redis's runs, and a
    # window that ends in real time mid-example (1 s did, on a slow link) is no verdict.
    @rule(limit=st.integers(1, 3), duration=st.sampled_from((30000, 60000)))
    def limited_fetch(self, limit: int, duration: int) -> None:
        """A fetch by a rate-limited worker."""
        self.fetches += 1
        token = f"tok-{self.fetches}"
        returned = self._apply(MoveToActive(self.now, token=token,
                                            limiter={"max": limit, "duration": duration}))
        self._took(returned, token)

    @precondition(_worker_protocol)
    @rule(max_jobs=st.integers(0, 3))
    def rate_limit_ttl(self, max_jobs: int) -> None:
        """Queue.getRateLimitTtl."""
        self._apply(GetRateLimitTtl(max_jobs))

    @precondition(_worker_protocol)
    @rule(dedup=st.sampled_from(DEDUP_IDS), ttl=st.sampled_from((0, 60000)),
          delay=st.sampled_from((0, 1000)))
    def deduplicated_add(self, dedup: str, ttl: int, delay: int) -> None:
        """Queue.add with a deduplication id."""
        opts: dict[str, Any] = {"de": {"id": dedup, **({"ttl": ttl} if ttl else {})}}
        if delay:
            opts["delay"] = delay
        returned = self._apply(Add("job", self.now, opts=opts))
        if isinstance(returned, str) and returned not in self.ids:
            self.ids.append(returned)

    @precondition(_worker_protocol)
    @rule(dedup=st.sampled_from(DEDUP_IDS), ref=st.integers(-1, 7))
    def remove_deduplication_key(self, dedup: str, ref: int) -> None:
        """Job.removeDeduplicationKey."""
        self._apply(RemoveDeduplicationKey(dedup, self._job(ref)))

    @precondition(_worker_protocol)
    @rule(ref=st.integers(-1, 7))
    def remove_job(self, ref: int) -> None:
        """Job.remove (no children)."""
        self._apply(RemoveJob(self._job(ref)))

    @precondition(_worker_protocol)
    @rule(ref=st.integers(-1, 7), what=st.sampled_from(("progress", "data", "log", "keep")),
          value=st.integers(0, 100))
    def update_job(self, ref: int, what: str, value: int) -> None:
        """Job.updateProgress, Job.updateData, Job.log (with and without keepLogs)."""
        job_id = self._job(ref)
        op: Op
        if what == "progress":
            op = UpdateProgress(job_id, value)
        elif what == "data":
            op = UpdateData(job_id, {"v": value})
        else:
            op = AddLog(job_id, f"row {value}", 2 if what == "keep" else None)
        self._apply(op)
