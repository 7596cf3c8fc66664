"""`bullmq-py`: drive the pinned official PyPI `bullmq` client against the suite's Redis.

Each op goes through the package's own Python code, not through our script runner:

- `add` is `Queue.add(name, data, opts)`, with `opts.timestamp` = the op's timestamp, `opts.jobId`
  when the vector gives one, and `opts.de` passed as the client's `deduplication` option;
- `moveToActive` is `Scripts.moveToActive(token, {lockDuration, limiter})`, the call a `Worker`
  makes with its options (its public `getNextJob` blocks and hides the raw reply); an op with a
  worker `name` is skipped: the package never sends one (no `pb`);
- `promote` is `Job.promote()` and `changePriority` is `Job.changePriority({priority, lifo})`,
  on a `Job` handle for the id (the scripts read nothing but the id);
- `changeDelay` has no Python API. The package ships `changeDelay-4.lua` but does not load it;
  if a `Scripts` object ever has it in its `commands`, it is called with RESEARCH §7.3 args,
  otherwise the op raises `CandidateSkipped`;
- `moveToDelayed` with fields or fetchNext is `Scripts.moveToDelayed(id, now, delay, token,
  {skipAttempt, fieldsToUpdate, fetchNext, workerOpts})`, the call `Job.moveToFailed` makes for
  a retry with backoff (workerOpts: a default Worker's options); otherwise, with `skipAttempt`
  and a delay >= 0, `Job.moveToDelayed(now + delay, token)` (the public API, which always skips
  the attempt), else `Scripts.moveToDelayed(id, now, delay, token, {"skipAttempt": ...})`; a
  release without the opts argument (it always counts the attempt) is called `(id, time, delay,
  token)`, `time` being the fire time before 5.8.6 (its client computed the score), else `now`;
- `pause` and `resume` are `Queue.pause()` and `Queue.resume()`; the result is the script's
  reply (the legacy paused jobs left, 0 when pausing);
- an `add` with `opts.parent` passes the policy flags under their long names; `addFlow` is
  `FlowProducer.add` and `addParentJob` the `Scripts.addParentJob` call it makes for a parent;
  `moveToWaitingChildren` is `Job.moveToWaitingChildren`: `bullmq_py_flows` (its docstring
  says how, which flags are skipped, and why getDependencyCounts, removeChildDependency and
  removeUnprocessedChildren are);
- `nextMillis` (cron parity) is the package's repeat strategy, and `pickUpIteration` its
  `Worker.nextJobFromJobData` with the picked-up job: `bullmq_py_cron`; `upsertJobScheduler`
  is `Queue.upsertJobScheduler(id, repeat, name, data, opts)` on the op's clock;
- the worker half's ops are in `bullmq_py_worker` (its docstring says which call each is, and
  why releaseLock, moveJobFromActiveToWait, getRateLimitTtl, removeDeduplicationKey and addLog
  are skipped).

The package is asyncio-based; the candidate owns one private event loop and runs each op to
completion on it. The package reads the wall clock (`time.time()` in `bullmq.job` and
`bullmq.scripts`); for the duration of an op those module attributes are patched to a clock
frozen at the op's `timestamp`/`now`.

Another package may provide the `bullmq` import (a fork, an older release). The run header
names the distribution that does and warns unless it is the pinned official one (`describe`).
Where its API differs, each op says so in one line: a method it lacks skips the op; a method
whose signature does not take the arguments, and any exception the package raises, errors it;
a reply of another shape than the op's result is passed on, to be judged with the state.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import redis

from conformance.candidates.base import Capabilities
from conformance.candidates.clients.bullmq_py_cron import (
    fetched_hash,
    next_iteration_id,
    next_millis,
    recording_upserts,
)
from conformance.candidates.clients.bullmq_py_flows import FlowOps, client_opts, refused_flags
from conformance.candidates.clients.bullmq_py_worker import WorkerOps
from conformance.candidates.clients.package import (
    PackageError,
    as_is,
    check_signature,
    code_or_raise,
    describe,
    frozen_clock,
    one_line,
    parent_key,
    shipped_scripts,
)
from conformance.core.candidate_forms import BULLMQ_PY
from conformance.core.errors import CandidateError, CandidateSkipped, UsageError
from conformance.core.pins import PINNED_VERSION
from conformance.core.queues import QueueRef
from reference_impl import versions
from reference_impl.keys import KeyProfile
from reference_impl.ops import (
    Add,
    ChangeDelay,
    ChangePriority,
    MoveToActive,
    Op,
    Pause,
    Promote,
    Result,
    Resume,
    fetched,
    op_name,
)
from reference_impl.scheduler_ops import NextMillis, PickUpIteration, UpsertJobScheduler
from reference_impl.versions import Version

INSTALL_HINT = ("--candidate bullmq-py needs the official client: "
                f"pip install bullmq=={PINNED_VERSION}")
#: KEYS of changeDelay-4 (RESEARCH.md §7.3).
CHANGE_DELAY_KEYS = ("delayed", "meta", "marker", "events")
_REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)


def _import_bullmq() -> ModuleType:
    try:
        import bullmq
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    module: ModuleType = bullmq
    return module


class PythonClientCandidate:
    """The official PyPI `bullmq` client: Queue for adds, Job/Scripts for the rest."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._url: str | None = None
        self._profile: KeyProfile | None = None
        self._queue_name: str | None = None
        self._queue: Any = None
        self._described: tuple[str, str] | None = None
        self._protocol: Version = versions.CURRENT
        self._workers: dict[str, Any] = {}  # bullmq Workers of the open queue, by their options
        self._producer: Any = None  # the open queue's FlowProducer, once addFlow needs one
        self._worker_ops = WorkerOps(self)
        self._flow_ops = FlowOps(self)

    @property
    def name(self) -> str:
        """Label used in reports."""
        return BULLMQ_PY.name

    @property
    def capabilities(self) -> Capabilities:
        """Ops are skipped per op (changeDelay, where the installed release lacks it; a set of
        parent policy flags its Job refuses); the client connects to one node."""
        return Capabilities()

    @property
    def version(self) -> str:
        """The distribution providing `bullmq` and its version, with a warning unless it is
        the pinned official release."""
        return self._describe()[1]

    @property
    def _package(self) -> str:
        return self._describe()[0]

    def _describe(self) -> tuple[str, str]:
        if self._described is None:  # reads every installed distribution's metadata: once
            self._described = describe(_import_bullmq())
        return self._described

    def start(self, redis_url: str, profile: KeyProfile) -> None:
        """Remember the server and key profile, and open the private event loop."""
        self._describe()
        self.close()
        self._url = redis_url
        self._profile = profile
        self._loop = asyncio.new_event_loop()

    def close(self) -> None:
        """Close the open queue (and its connection) and the event loop."""
        if self._loop is None:
            return
        try:
            self._close_queue()
        finally:
            loop, self._loop = self._loop, None
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        """Perform one op through the package and normalize its result."""
        if self._loop is None:
            raise CandidateError("bullmq-py: start() was not called before the first op")
        handlers: dict[type[Op], Callable[[Any, Any], Result]] = {
            Add: self._add,
            MoveToActive: self._move_to_active,
            Promote: self._promote,
            ChangeDelay: self._change_delay,
            ChangePriority: self._change_priority,
            Pause: self._pause,
            Resume: self._pause,
            **self._worker_ops.handlers(),
            **self._flow_ops.handlers(),
            NextMillis: lambda _queue, found: next_millis(self._package, found),
            PickUpIteration: self._pick_up_iteration,
            UpsertJobScheduler: self._upsert_job_scheduler,
        }
        # the protocol judged: what an older client's arguments mean (moveToDelayed)
        self._protocol = queue.protocol
        handler = handlers.get(type(op))
        if handler is None:
            raise CandidateSkipped(f"the suite does not drive {op_name(op)} through "
                                   f"{self._package} yet")
        try:
            return handler(self._queue_for(queue), op)
        except _REDIS_DOWN as exc:
            if not _answers(client):
                raise
            raise CandidateError(f"{self._package} could not reach Redis ({one_line(exc)}) "
                                 "while the suite's connection works: does it take the "
                                 "`connection` URL?") from None
        except (CandidateError, CandidateSkipped):
            raise
        except Exception as exc:  # the package differs somewhere no handler checks
            raise CandidateError(f"{self._package}: {PackageError(exc)}") from None

    # -- the package's API --------------------------------------------------------------------

    def _member(self, owner: Any, attr: str, what: str) -> Any:
        """`owner.attr`, or CandidateSkipped naming what the installed package lacks."""
        found = getattr(owner, attr, None)
        if found is None:
            raise CandidateSkipped(f"{self._package} has no {what}")
        return found

    def _run(self, what: str, clock_ms: int | None, method: Any, *args: Any) -> Any:
        """Call `method(*args)` on the frozen clock and await what it returns.

        A signature that does not take the arguments is a CandidateError; an exception the
        package raises comes back as PackageError (for mapping to a script code).
        """
        assert self._loop is not None
        if not callable(method):
            raise CandidateSkipped(f"{self._package}'s {what} is not callable")
        check_signature(method, args, what)
        try:
            with frozen_clock(clock_ms):
                reply = method(*args)
                if inspect.isawaitable(reply):
                    reply = self._loop.run_until_complete(_awaited(reply))
                return reply
        except (CandidateError, CandidateSkipped, *_REDIS_DOWN):
            raise
        except redis.ResponseError as exc:
            raise CandidateError(f"{what}: Redis replied {one_line(exc)}") from None
        except Exception as exc:
            raise PackageError(exc) from exc

    def _queue_for(self, ref: QueueRef) -> Any:
        if self._queue_name == ref.name:
            return self._queue
        self._close_queue()
        import bullmq

        assert self._profile is not None
        queue_class = self._member(bullmq, "Queue", "Queue")
        try:
            queue = queue_class(self._profile.queue_part(ref.name),
                                {"prefix": self._profile.prefix, "connection": self._url})
        except Exception as exc:
            raise CandidateError(f"Queue() failed: {PackageError(exc)}") from None
        self._queue, self._queue_name = queue, ref.name
        keys = getattr(queue, "keys", None)
        base = keys.get("") if isinstance(keys, dict) else None
        # Without queue.keys the state diff shows a wrong BASE as missing and stray keys.
        if base is not None and base != ref.base:
            raise CandidateError(f"the client's BASE is {base!r}, the suite expects "
                                 f"{ref.base!r}: start() got another key profile")
        return queue

    def _queue_named(self, qualified: str) -> str:
        """The client's queue name (`Queue(name)`) of a qualified name a flow node gives."""
        assert self._profile is not None
        try:
            return self._profile.queue_part(self._profile.queue_of(qualified))
        except ValueError as exc:
            raise CandidateError(f"a flow node's queue: {exc}") from None

    def _close_queue(self) -> None:
        queue, self._queue, self._queue_name = self._queue, None, None
        workers, self._workers = list(self._workers.values()), {}
        if self._producer is not None:
            workers.append(self._producer)  # closed the same way: its own connection
            self._producer = None
        if self._loop is not None:
            for worker in workers:
                with contextlib.suppress(Exception):
                    self._loop.run_until_complete(_awaited(worker.close()))
        if queue is not None and self._loop is not None:
            # An older release closes its connection through a redis-py call since deprecated:
            # a warning per vector about the package, not about what it wrote.
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                self._loop.run_until_complete(_awaited(queue.close()))

    def _job_handle(self, queue: Any, job_id: str, opts: dict[str, Any] | None = None) -> Any:
        """A `Job` for an id, as `Job.fromId` gives for an existing one (no hash read needed:
        the scripts read nothing of it but the id, and the `opts` the op names). `queue` may be
        a Worker, as for the jobs a Worker fetches."""
        import bullmq

        job_class = self._member(bullmq, "Job", "Job")
        args: tuple[Any, ...] = (queue, "", None, dict(opts or {}), job_id)
        check_signature(job_class, args, "Job()")
        try:
            return job_class(*args)
        except Exception as exc:
            raise CandidateError(f"Job() failed: {PackageError(exc)}") from None

    def _scripts(self, queue: Any) -> Any:
        return self._member(queue, "scripts", "Queue.scripts")

    def _worker(self, queue: Any, opts: dict[str, Any]) -> Any:
        """A `Worker` of the open queue built with `opts` (lockDuration, limiter, metrics; the
        rest its defaults). It has no processor, so it never runs: the ops use its options and
        backend, as the jobs it fetches do."""
        import bullmq

        key = repr(sorted(opts.items()))
        if key not in self._workers:
            worker_class = self._member(bullmq, "Worker", "Worker")
            assert self._profile is not None
            try:
                self._workers[key] = worker_class(
                    queue.name, None,
                    {"prefix": self._profile.prefix, "connection": self._url, **opts})
            except Exception as exc:
                raise CandidateError(f"Worker() failed: {PackageError(exc)}") from None
        return self._workers[key]

    def _flow_producer(self) -> Any:
        """A `FlowProducer` on the suite's server and prefix (one per open queue: the flow's
        nodes name the queue)."""
        import bullmq

        if self._producer is None:
            producer_class = self._member(bullmq, "FlowProducer", "FlowProducer")
            assert self._profile is not None
            try:
                self._producer = producer_class(
                    None, {"prefix": self._profile.prefix, "connection": self._url})
            except Exception as exc:
                raise CandidateError(f"FlowProducer() failed: {PackageError(exc)}") from None
        return self._producer

    # -- ops ----------------------------------------------------------------------------------

    def _add(self, queue: Any, op: Add) -> Result:
        # The stored short names (de, fpof...) as the client takes them (deduplication,
        # failParentOnFailure...).
        opts: dict[str, Any] = {**client_opts(self._package, op.opts), "timestamp": op.timestamp}
        if op.job_id is not None:
            opts["jobId"] = op.job_id
        add = self._member(queue, "add", "Queue.add")
        try:
            job = self._run("Queue.add", op.timestamp, add, op.name, op.data, opts)
        except PackageError as exc:
            skip = refused_flags(self._package, exc)
            if skip is not None:
                raise skip from None
            context = {"parentKey": parent_key(opts.get("parent")), "command": "addJob"}
            return code_or_raise(queue, exc, context, "Queue.add")
        job_id = getattr(job, "id", None)
        if job_id is None:
            raise CandidateError(f"Queue.add returned {job!r}, not a job with an id")
        return str(job_id)

    def _move_to_active(self, queue: Any, op: MoveToActive) -> Result:
        method = self._member(self._scripts(queue), "moveToActive", "Scripts.moveToActive")
        if op.name is not None:
            raise CandidateSkipped(f"{self._package} never sends a worker name with a fetch "
                                   "(its moveToActive packs token, lockDuration and limiter: "
                                   "no pb)")
        opts: dict[str, Any] = {"lockDuration": op.lock_duration}
        if op.limiter is not None:
            opts["limiter"] = dict(op.limiter)
        try:
            reply = self._run("Scripts.moveToActive", op.now, method, op.token, opts)
        except PackageError as exc:
            raise CandidateError(f"Scripts.moveToActive raised {exc}") from None
        if isinstance(reply, list) and len(reply) == 4:
            _, job, ttl, next_ms = reply
            with contextlib.suppress(TypeError, ValueError):  # else shown as it came
                return fetched(None if job in (0, "0", None) else str(job), int(ttl or 0),
                               int(next_ms or 0))
        return as_is(reply)

    def _pick_up_iteration(self, queue: Any, op: PickUpIteration) -> Result:
        worker = self._worker(queue, {})
        method = self._member(worker, "nextJobFromJobData", "Worker.nextJobFromJobData")
        returned, undo = recording_upserts(worker)
        try:
            self._run("Worker.nextJobFromJobData", op.now, method, fetched_hash(op),
                      op.producer_id, 0, 0, "tok")
        except PackageError as exc:
            raise CandidateError(f"Worker.nextJobFromJobData raised {exc}") from None
        finally:
            undo()
        try:
            return next_iteration_id(returned)
        except ValueError as exc:
            raise CandidateError(str(exc)) from None

    def _upsert_job_scheduler(self, queue: Any, op: UpsertJobScheduler) -> Result:
        method = self._member(queue, "upsertJobScheduler", "Queue.upsertJobScheduler")
        try:
            job = self._run("Queue.upsertJobScheduler", op.now, method, op.scheduler_id,
                            dict(op.repeat), op.name, op.data, dict(op.opts))
        except PackageError as exc:
            raise CandidateError(f"Queue.upsertJobScheduler raised {exc}") from None
        if job is None:
            return None
        opts = getattr(job, "opts", None) or {}
        try:
            return {"job": str(job.id), "delay": int(opts.get("delay", 0))}
        except (TypeError, ValueError):
            raise CandidateError(f"Queue.upsertJobScheduler returned a job with delay "
                                 f"{opts.get('delay')!r}") from None

    def _promote(self, queue: Any, op: Promote) -> Result:
        job = self._job_handle(queue, op.job_id)
        try:
            reply = self._run("Job.promote", None, self._member(job, "promote", "Job.promote"))
        except PackageError as exc:
            context = {"jobId": op.job_id, "command": "promote", "state": "delayed"}
            return code_or_raise(queue, exc, context, "Job.promote")
        return 0 if reply is None else as_is(reply)

    def _change_priority(self, queue: Any, op: ChangePriority) -> Result:
        job = self._job_handle(queue, op.job_id)
        method = self._member(job, "changePriority", "Job.changePriority")
        try:
            reply = self._run("Job.changePriority", None, method,
                              {"priority": op.priority, "lifo": op.lifo})
        except PackageError as exc:
            context = {"jobId": op.job_id, "command": "changePriority"}
            return code_or_raise(queue, exc, context, "Job.changePriority")
        return 0 if reply is None else as_is(reply)

    def _pause(self, queue: Any, op: Pause | Resume) -> Result:
        what = "Queue.pause" if isinstance(op, Pause) else "Queue.resume"
        method = self._member(queue, what.removeprefix("Queue."), what)
        try:
            # Any reply is passed on: one of another shape (None from a release whose script
            # returns nothing) is a return difference, judged with the state.
            return as_is(self._run(what, None, method))
        except PackageError as exc:
            raise CandidateError(f"{what} raised {exc}") from None

    def _change_delay(self, queue: Any, op: ChangeDelay) -> Result:
        scripts = self._scripts(queue)
        commands = getattr(scripts, "commands", None)
        command = commands.get("changeDelay") if isinstance(commands, dict) else None
        if command is None:
            shipped = shipped_scripts(_import_bullmq(), "changeDelay")
            what = f"does not load the {', '.join(shipped)} it ships" if shipped else \
                "loads no changeDelay script (it ships none)"
            raise CandidateSkipped(f"{self._package} has no Job.changeDelay, and its Scripts "
                                   f"{what}")
        keys = [scripts.keys[suffix] for suffix in CHANGE_DELAY_KEYS]
        args = [op.delay, str(op.now), op.job_id, scripts.toKey(op.job_id)]
        try:
            return as_is(self._run("changeDelay", op.now, lambda: command(keys=keys, args=args)))
        except PackageError as exc:
            raise CandidateError(f"changeDelay raised {exc}") from None


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
