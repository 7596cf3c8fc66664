"""The worker half's ops on the official PyPI `bullmq` client, for `bullmq-py` (bullmq_py.py).

Each op goes through the package's own code, on the op's frozen clock where it has one:

- `moveToDelayed` (listed in bullmq_py's docstring): with fields or fetchNext, the call
  `Job.moveToFailed` makes for a retry with backoff; else `Job.moveToDelayed` or the
  `Scripts.moveToDelayed` call without them;
- `moveToFinished`, completed: `Job.moveToCompleted(json.loads(value), token, fetchNext)`;
  skipped when `json.dumps` (the package's: compact, ASCII-escaped) would not give back the
  op's value text, or when the op has job fields (a completion sends none). Failed:
  `backend.moveToFailed(job, value, removeOnFail, token, fetchNext, fields)`, the call
  `Job.moveToFailed` makes for a final failure (`Job.moveToFailed` itself formats the stacktrace
  with `traceback.format_exc()` and decides on a retry). The Job is a handle on a `Worker` built
  with the op's lockDuration, limiter and `metrics.maxDataPoints` (maxMetricsSize), as the jobs
  a Worker fetches are; its opts hold the op's attempts and keepJobs (as removeOnComplete /
  removeOnFail, packed as they are). The Worker itself never passes fetchNext; `Job` does;
- `retryJob`: `Scripts.retryJob(id, lifo, token, {fieldsToUpdate})`, the call
  `Job.moveToFailed` makes for a retry without backoff;
- `extendLock`: `Scripts.extendLock(id, token, duration)`; `extendLocks`:
  `backend.extendLocks(ids, tokens, duration)`, what the LockManager calls;
- `moveStalledJobsToWait`: `backend.moveStalledJobsToWait(maxStalledCount, stalledInterval)`,
  what the Worker's stall check calls;
- `removeJob`: `Queue.remove(id, {removeChildren})`; `updateProgress` and `updateData`:
  `Job.updateProgress` / `Job.updateData`;
- skipped: `releaseLock` (the package ships releaseLock-1.lua but no code calls it),
  `moveJobFromActiveToWait` (no `Job.moveToWait`: no rate-limit push-back),
  `removeDeduplicationKey` (no `Job.removeDeduplicationKey`), `getRateLimitTtl` (its
  `Queue.getRateLimitTtl()` takes no maxJobs and is a plain PTTL of the limiter key, not the
  script) and `addLog` (`Job.log` writes with MULTI RPUSH/LTRIM, not addLog-2, so it has no
  existence check). A release that has the missing method is driven through it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from conformance.candidates.clients.package import (
    PackageError,
    as_is,
    code_or_raise,
    shipped_scripts,
    takes,
)
from conformance.core.errors import CandidateError, CandidateSkipped
from reference_impl import versions
from reference_impl.ops import MoveToDelayed, Result, fetched
from reference_impl.worker_ops import (
    AddLog,
    ExtendLock,
    ExtendLocks,
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


class Host(Protocol):
    """What the ops need of the candidate (PythonClientCandidate)."""

    @property
    def _package(self) -> str: ...

    def _member(self, owner: Any, attr: str, what: str) -> Any: ...

    def _run(self, what: str, clock_ms: int | None, method: Any, *args: Any) -> Any: ...

    def _job_handle(self, queue: Any, job_id: str, opts: dict[str, Any] | None = None
                    ) -> Any: ...

    def _scripts(self, queue: Any) -> Any: ...

    def _worker(self, queue: Any, opts: dict[str, Any]) -> Any: ...

    @property
    def _protocol(self) -> versions.Version: ...


def next_job(reply: Any) -> Result:
    """A finishing call's reply: None (the script's 0) as 0; `raw2NextJobData` of a fetch-next
    array (`[job or None, id, ttl, next]`; `[None] * 4` for the script's 0) as `{job, ttl,
    next}`; anything else as it came."""
    if reply is None:
        return 0
    if isinstance(reply, list) and len(reply) == 4:
        data, job, ttl, next_ms = reply
        if job is None:
            return 0
        try:
            return fetched(None if data is None or job in (0, "0") else str(job),
                           int(ttl or 0), int(next_ms or 0))
        except (TypeError, ValueError):
            pass  # shown as it came
    return as_is(reply)


class WorkerOps:
    """The worker half's op handlers, on the candidate's queue, Workers and frozen clock."""

    def __init__(self, host: Host) -> None:
        self._host = host

    def handlers(self) -> dict[type, Callable[[Any, Any], Result]]:
        """Op type -> handler(queue, op)."""
        return {
            MoveToDelayed: self._move_to_delayed,
            MoveToFinished: self._finish,
            RetryJob: self._retry,
            ExtendLock: self._extend,
            ExtendLocks: self._extend_many,
            ReleaseLock: self._release,
            MoveStalledJobsToWait: self._stalled,
            MoveJobFromActiveToWait: self._back_to_wait,
            GetRateLimitTtl: self._rate_limit_ttl,
            RemoveDeduplicationKey: self._remove_dedup,
            RemoveJob: self._remove,
            UpdateProgress: self._progress,
            UpdateData: self._data,
            AddLog: self._log,
        }

    def _call(self, queue: Any, what: str, clock_ms: int | None, method: Any, *args: Any,
              context: dict[str, Any] | None = None) -> Any:
        """`method(*args)` on the clock; a package exception is mapped back to its script code
        with `context` (jobId, command, state), else a CandidateError."""
        try:
            return self._host._run(what, clock_ms, method, *args)
        except PackageError as exc:
            if context is None:
                raise CandidateError(f"{what} raised {exc}") from None
            return code_or_raise(queue, exc, context, what)

    def _move_to_delayed(self, queue: Any, op: MoveToDelayed) -> Result:
        host = self._host
        what = "Scripts.moveToDelayed"
        context = {"jobId": op.job_id, "command": "moveToDelayed", "state": "active"}
        if op.fields or op.fetch_next:
            # Job.moveToFailed's call for a retry with backoff: the job's fields, and the
            # fetch-next options (lockDuration, limiter) from its Worker's options.
            method = host._member(host._scripts(queue), "moveToDelayed", what)
            opts = {"skipAttempt": op.skip_attempt, "fieldsToUpdate": dict(op.fields or {}),
                    "fetchNext": bool(op.fetch_next), "workerOpts": host._worker(queue, {}).opts}
            reply = self._call(queue, what, op.now, method, op.job_id, op.now, op.delay,
                               op.token, opts, context=context)
            return reply if isinstance(reply, int) else next_job(reply)
        if op.skip_attempt and op.delay >= 0:
            # Job.moveToDelayed reads the (frozen) clock: delay = timestamp - now.
            what = "Job.moveToDelayed"
            job = host._job_handle(queue, op.job_id)
            reply = self._call(queue, what, op.now, host._member(job, "moveToDelayed", what),
                               op.now + op.delay, op.token, context=context)
        else:
            method = host._member(host._scripts(queue), "moveToDelayed", what)
            args: tuple[Any, ...] = (op.job_id, op.now, op.delay, op.token,
                                     {"skipAttempt": op.skip_attempt})
            if not op.skip_attempt and not takes(method, args) and takes(method, args[:4]):
                # Releases before the opts argument always counted the attempt; the time they
                # take is the fire time while the client computed the score (before 5.8.6),
                # then `now`.
                at = op.now if host._protocol >= versions.BAND_BUMP else op.now + op.delay
                args = (op.job_id, at, op.delay, op.token)
            reply = self._call(queue, what, op.now, method, *args, context=context)
        # Only a fetch-next (not asked for here) returns a job.
        return 0 if reply is None else as_is(reply)

    def _finish(self, queue: Any, op: MoveToFinished) -> Result:
        host = self._host
        failed = op.target == "failed"
        worker_opts: dict[str, Any] = {}
        if op.lock_duration is not None:
            worker_opts["lockDuration"] = op.lock_duration
        if op.limiter is not None:
            worker_opts["limiter"] = dict(op.limiter)
        if op.max_metrics_size is not None:
            worker_opts["metrics"] = {"maxDataPoints": op.max_metrics_size}
        job_opts: dict[str, Any] = {}
        if op.attempts is not None:
            job_opts["attempts"] = op.attempts
        if op.keep_jobs is not None:
            job_opts["removeOnFail" if failed else "removeOnComplete"] = dict(op.keep_jobs)
        worker = host._worker(queue, worker_opts)
        job = host._job_handle(worker, op.job_id, job_opts)
        context = {"jobId": op.job_id, "command": "moveToFinished", "state": "active"}
        fetch = bool(op.fetch_next)
        if failed:
            what = "backend.moveToFailed"
            method = host._member(host._member(worker, "backend", "Worker.backend"),
                                  "moveToFailed", what)
            moved = self._call(queue, what, op.now, method, job, op.value,
                               job.opts.get("removeOnFail", False), op.token, fetch,
                               dict(op.fields or {}), context=context)
            reply = moved.get("result") if isinstance(moved, dict) else moved
        else:
            what = "Job.moveToCompleted"
            method = host._member(job, "moveToCompleted", what)
            if op.fields:
                raise CandidateSkipped(f"{host._package}'s {what} sends no job fields; the op "
                                       f"has {', '.join(op.fields)}")
            value = self._return_value(op.value)
            reply = self._call(queue, what, op.now, method, value, op.token, fetch,
                               context=context)
        return reply if isinstance(reply, int) else next_job(reply)

    def _return_value(self, text: str) -> Any:
        """The return value whose `json.dumps` (as the package sends it) is `text`."""
        try:
            value = json.loads(text)
        except ValueError:
            raise CandidateSkipped(f"{self._host._package} sends json.dumps(returnvalue) on "
                                   f"completion; the op's value {text!r} is not JSON") from None
        sent = json.dumps(value, separators=(",", ":"), allow_nan=False)
        if sent != text:
            raise CandidateSkipped(f"{self._host._package} sends json.dumps(returnvalue) on "
                                   f"completion: {sent!r} for the op's value {text!r}")
        return value

    def _retry(self, queue: Any, op: RetryJob) -> Result:
        what = "Scripts.retryJob"
        method = self._host._member(self._host._scripts(queue), "retryJob", what)
        context = {"jobId": op.job_id, "command": "retryJob", "state": "active"}
        reply = self._call(queue, what, op.now, method, op.job_id, bool(op.lifo), op.token,
                           {"fieldsToUpdate": dict(op.fields or {})}, context=context)
        return 0 if reply is None else as_is(reply)

    def _extend(self, queue: Any, op: ExtendLock) -> Result:
        what = "Scripts.extendLock"
        method = self._host._member(self._host._scripts(queue), "extendLock", what)
        return as_is(self._call(queue, what, None, method, op.job_id, op.token, op.duration))

    def _extend_many(self, queue: Any, op: ExtendLocks) -> Result:
        what = "backend.extendLocks"
        backend = self._host._member(queue, "backend", "Queue.backend")
        method = self._host._member(backend, "extendLocks", what)
        reply = self._call(queue, what, None, method, list(op.job_ids), list(op.tokens),
                           op.duration)
        return [str(item) for item in reply] if isinstance(reply, list) else as_is(reply)

    def _release(self, queue: Any, op: ReleaseLock) -> Result:
        import bullmq

        shipped = shipped_scripts(bullmq, "releaseLock")
        what = f"it ships {', '.join(shipped)}, unused" if shipped else \
            "it ships no releaseLock script"
        raise CandidateSkipped(f"{self._host._package} has no client call of releaseLock-1 "
                               f"({what})")

    def _stalled(self, queue: Any, op: MoveStalledJobsToWait) -> Result:
        what = "backend.moveStalledJobsToWait"
        backend = self._host._member(queue, "backend", "Queue.backend")
        method = self._host._member(backend, "moveStalledJobsToWait", what)
        reply = self._call(queue, what, op.now, method, op.max_stalled_count,
                           op.stalled_interval)
        return [str(item) for item in reply] if isinstance(reply, list) else as_is(reply)

    def _back_to_wait(self, queue: Any, op: MoveJobFromActiveToWait) -> Result:
        job = self._host._job_handle(queue, op.job_id)
        what = "Job.moveToWait (a rate-limited job's way back to wait)"
        method = self._host._member(job, "moveToWait", what)
        context = {"jobId": op.job_id, "command": "moveJobFromActiveToWait", "state": "active"}
        return as_is(self._call(queue, "Job.moveToWait", None, method, op.token,
                                context=context))

    def _rate_limit_ttl(self, queue: Any, op: GetRateLimitTtl) -> Result:
        what = "Queue.getRateLimitTtl"
        method = self._host._member(queue, "getRateLimitTtl", what)
        if not takes(method, (op.max_jobs,)):
            raise CandidateSkipped(f"{self._host._package}'s Queue.getRateLimitTtl() takes no "
                                   "maxJobs and is a plain PTTL of the limiter key, not "
                                   "getRateLimitTtl-2")
        return as_is(self._call(queue, what, None, method, op.max_jobs))

    def _remove_dedup(self, queue: Any, op: RemoveDeduplicationKey) -> Result:
        job = self._host._job_handle(queue, op.job_id,
                                     {"deduplication": {"id": op.deduplication_id}})
        what = "Job.removeDeduplicationKey"
        method = self._host._member(job, "removeDeduplicationKey", what)
        reply = self._call(queue, what, None, method)
        return int(reply) if isinstance(reply, bool) else as_is(reply)

    def _remove(self, queue: Any, op: RemoveJob) -> Result:
        what = "Queue.remove"
        method = self._host._member(queue, "remove", what)
        opts = {} if op.remove_children is None else {"removeChildren": op.remove_children}
        context = {"jobId": op.job_id, "command": "removeJob"}
        return as_is(self._call(queue, what, None, method, op.job_id, opts, context=context))

    def _progress(self, queue: Any, op: UpdateProgress) -> Result:
        return self._job_update(queue, op.job_id, "updateProgress", op.progress)

    def _data(self, queue: Any, op: UpdateData) -> Result:
        return self._job_update(queue, op.job_id, "updateData", op.data)

    def _job_update(self, queue: Any, job_id: str, method: str, value: Any) -> Result:
        """`Job.<method>(value)` on the job's handle: 0 for the None the package returns."""
        job = self._host._job_handle(queue, job_id)
        what = f"Job.{method}"
        context = {"jobId": job_id, "command": method}
        reply = self._call(queue, what, None, self._host._member(job, method, what), value,
                           context=context)
        return 0 if reply is None else as_is(reply)

    def _log(self, queue: Any, op: AddLog) -> Result:
        job = self._host._job_handle(queue, op.job_id)
        self._host._member(job, "log", "Job.log")
        raise CandidateSkipped(f"{self._host._package}'s Job.log writes the row with MULTI "
                               "RPUSH/LTRIM, not addLog-2 (no check that the job exists)")
