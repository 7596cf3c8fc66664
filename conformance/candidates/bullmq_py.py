"""`bullmq-py`: drive the official PyPI `bullmq` client (3.4.4) against the suite's Redis.

Each op goes through the package's own Python code, not through our script runner:

- `add` is `Queue.add(name, data, opts)`, with `opts.timestamp` = the op's timestamp and
  `opts.jobId` when the vector gives one (the package routes to the add script itself);
- `moveToActive` is `Scripts.moveToActive(token, {lockDuration})`, the call a `Worker` makes
  (the worker's public `getNextJob` blocks and hides the raw `[job, id, ttl, next]` reply);
- `promote` is `Job.promote()` and `changePriority` is `Job.changePriority({priority, lifo})`,
  on a `Job` handle for the id (the scripts read nothing but the id);
- `changeDelay` has no Python API. The package ships `changeDelay-4.lua` but does not load it;
  if a `Scripts` object ever has it in its `commands`, it is called with PROTOCOL §7.3 args,
  otherwise the op raises `CandidateSkipped`;
- `moveToDelayed` with `skipAttempt` and a delay >= 0 is `Job.moveToDelayed(now + delay, token)`
  (the public API, which always skips the attempt and clamps a negative delay to 0); otherwise
  it is `Scripts.moveToDelayed(id, now, delay, token, {"skipAttempt": ...})`, the call
  `Job.moveToFailed` makes for a retry with backoff (without its `fieldsToUpdate`);
- `pause` and `resume` are `Queue.pause()` and `Queue.resume()`; the result is the script's
  reply (the legacy paused jobs left, 0 when pausing).

The package is asyncio-based; the candidate owns one private event loop and runs each op to
completion on it. The package reads the wall clock (`time.time()` in `bullmq.job` and
`bullmq.scripts`); for the duration of an op those module attributes are patched to a clock
frozen at the op's `timestamp`/`now`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import math
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from types import ModuleType
from typing import Any, TypeVar
from unittest import mock

import redis

from conformance.candidates.base import Capabilities, QueueRef
from conformance.errors import CandidateError, CandidateSkipped, UsageError
from reference_impl.keys import KeyProfile
from reference_impl.ops import (
    Add,
    ChangeDelay,
    ChangePriority,
    MoveToActive,
    MoveToDelayed,
    Op,
    Pause,
    Promote,
    Result,
    Resume,
    fetched,
)

INSTALL_HINT = "--candidate bullmq-py needs the official client: pip install bullmq==3.4.4"
#: The package modules whose `time.time()` an op can reach (Job.__init__, Job.moveToDelayed,
#: Scripts.moveToActive).
CLOCK_MODULES = ("bullmq.job", "bullmq.scripts")
#: KEYS of changeDelay-4 (PROTOCOL.md §7.3).
CHANGE_DELAY_KEYS = ("delayed", "meta", "marker", "events")
_UNKNOWN_CODE = re.compile(r"Unknown code (-?\d+) error for ")
_REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)
T = TypeVar("T")


def _import_bullmq() -> ModuleType:
    try:
        import bullmq
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    module: ModuleType = bullmq
    return module


def frozen_seconds(ms: int) -> float:
    """A float `s` with `round(s * 1000) == ms`, the way the package turns seconds into ms."""
    s = ms / 1000
    while round(s * 1000) < ms:
        s = math.nextafter(s, math.inf)
    while round(s * 1000) > ms:
        s = math.nextafter(s, -math.inf)
    return s


class _FrozenTime:
    """Stands in for the `time` module inside a bullmq module: `time()` is the op's clock."""

    def __init__(self, ms: int) -> None:
        self._now = frozen_seconds(ms)

    def time(self) -> float:
        """The op's clock in seconds."""
        return self._now

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@contextlib.contextmanager
def frozen_clock(ms: int | None) -> Iterator[None]:
    """Patch `time` in every module of `CLOCK_MODULES` to read `ms`, then restore it."""
    if ms is None:
        yield
        return
    clock = _FrozenTime(ms)
    with contextlib.ExitStack() as stack:
        for name in CLOCK_MODULES:
            module = importlib.import_module(name)
            if getattr(module, "time", None) is not time:
                raise CandidateError(f"{name} no longer reads the clock through `time`; "
                                     "cannot inject the op's clock")
            stack.enter_context(mock.patch.object(module, "time", clock))
        yield


class PythonClientCandidate:
    """The official PyPI `bullmq` client: Queue for adds, Job/Scripts for the rest."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._url: str | None = None
        self._profile: KeyProfile | None = None
        self._queue_name: str | None = None
        self._queue: Any = None

    @property
    def name(self) -> str:
        """Label used in reports."""
        return "bullmq-py"

    @property
    def capabilities(self) -> Capabilities:
        """Ops are skipped per op (changeDelay, where the installed release lacks it); the
        client connects to one node."""
        return Capabilities()

    @property
    def version(self) -> str:
        """The installed package version."""
        return f"bullmq (PyPI) {_import_bullmq().__version__}"

    def start(self, redis_url: str, profile: KeyProfile) -> None:
        """Remember the server and key profile, and open the private event loop."""
        _import_bullmq()
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
            MoveToDelayed: self._move_to_delayed,
            Pause: self._pause,
            Resume: self._pause,
        }
        return handlers[type(op)](self._queue_for(queue), op)

    # -- queues and the loop --------------------------------------------------------------

    def _run(self, awaitable: Awaitable[T], clock_ms: int | None, what: str) -> T:
        assert self._loop is not None

        async def wrapped() -> T:
            return await awaitable

        try:
            with frozen_clock(clock_ms):
                return self._loop.run_until_complete(wrapped())
        except (CandidateError, CandidateSkipped, *_REDIS_DOWN):
            raise
        except redis.ResponseError as exc:
            raise CandidateError(f"{what}: Redis replied {_one_line(exc)}") from None
        except Exception as exc:
            raise _PackageError(exc) from exc

    def _queue_for(self, ref: QueueRef) -> Any:
        if self._queue_name == ref.name:
            return self._queue
        self._close_queue()
        from bullmq import Queue

        assert self._profile is not None
        try:
            queue = Queue(self._profile.queue_part(ref.name),
                          {"prefix": self._profile.prefix, "connection": self._url})
        except Exception as exc:
            raise CandidateError(f"Queue() failed: {_one_line(exc)}") from None
        self._queue, self._queue_name = queue, ref.name
        if queue.keys[""] != ref.base:
            raise CandidateError(f"the client's BASE is {queue.keys['']!r}, the suite expects "
                                 f"{ref.base!r}: start() got another key profile")
        return queue

    def _close_queue(self) -> None:
        queue, self._queue, self._queue_name = self._queue, None, None
        if queue is not None and self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(queue.close())

    # -- ops ------------------------------------------------------------------------------

    def _add(self, queue: Any, op: Add) -> Result:
        opts: dict[str, Any] = {**op.opts, "timestamp": op.timestamp}
        if op.job_id is not None:
            opts["jobId"] = op.job_id
        try:
            job = self._run(queue.add(op.name, op.data, opts), op.timestamp, "Queue.add")
        except _PackageError as exc:
            from bullmq.utils import get_parent_key

            context = {"parentKey": get_parent_key(opts.get("parent")), "command": "addJob"}
            return _code_or_raise(queue, exc, context, "Queue.add")
        if job.id is None:
            raise CandidateError("Queue.add returned a job without an id")
        return str(job.id)

    def _move_to_active(self, queue: Any, op: MoveToActive) -> Result:
        opts = {"lockDuration": op.lock_duration}
        try:
            reply = self._run(queue.scripts.moveToActive(op.token, opts), op.now,
                              "Scripts.moveToActive")
        except _PackageError as exc:
            raise CandidateError(f"Scripts.moveToActive raised {exc}") from None
        if not isinstance(reply, list) or len(reply) != 4:
            raise CandidateError(f"moveToActive returned {reply!r}, expected a 4-element array")
        _, job, ttl, next_ms = reply
        job_id = None if job in (0, "0", None) else str(job)
        return fetched(job_id, int(ttl or 0), int(next_ms or 0))

    def _promote(self, queue: Any, op: Promote) -> Result:
        job = _job_handle(queue, op.job_id)
        try:
            self._run(job.promote(), None, "Job.promote")
        except _PackageError as exc:
            context = {"jobId": op.job_id, "command": "promote", "state": "delayed"}
            return _code_or_raise(queue, exc, context, "Job.promote")
        return 0

    def _change_priority(self, queue: Any, op: ChangePriority) -> Result:
        job = _job_handle(queue, op.job_id)
        opts = {"priority": op.priority, "lifo": op.lifo}
        try:
            self._run(job.changePriority(opts), None, "Job.changePriority")
        except _PackageError as exc:
            context = {"jobId": op.job_id, "command": "changePriority"}
            return _code_or_raise(queue, exc, context, "Job.changePriority")
        return 0

    def _move_to_delayed(self, queue: Any, op: MoveToDelayed) -> Result:
        if op.skip_attempt and op.delay >= 0:
            # Job.moveToDelayed reads the (frozen) clock: delay = timestamp - now.
            job = _job_handle(queue, op.job_id)
            call, what = job.moveToDelayed(op.now + op.delay, op.token), "Job.moveToDelayed"
        else:
            opts = {"skipAttempt": op.skip_attempt}
            call = queue.scripts.moveToDelayed(op.job_id, op.now, op.delay, op.token, opts)
            what = "Scripts.moveToDelayed"
        try:
            reply = self._run(call, op.now, what)
        except _PackageError as exc:
            context = {"jobId": op.job_id, "command": "moveToDelayed", "state": "active"}
            return _code_or_raise(queue, exc, context, what)
        if reply is not None:  # only a fetch-next (never asked for) returns a job
            raise CandidateError(f"{what} returned {reply!r}, expected nothing")
        return 0

    def _pause(self, queue: Any, op: Pause | Resume) -> Result:
        pausing = isinstance(op, Pause)
        what = "Queue.pause" if pausing else "Queue.resume"
        try:
            reply = self._run(queue.pause() if pausing else queue.resume(), None, what)
        except _PackageError as exc:
            raise CandidateError(f"{what} raised {exc}") from None
        if isinstance(reply, bool) or not isinstance(reply, int):
            raise CandidateError(f"{what} returned {reply!r}, expected an integer")
        return reply

    def _change_delay(self, queue: Any, op: ChangeDelay) -> Result:
        scripts = queue.scripts
        command = getattr(scripts, "commands", {}).get("changeDelay")
        if command is None:
            raise CandidateSkipped("PyPI bullmq has no Job.changeDelay, and its Scripts does not "
                                   "load the changeDelay-4.lua it ships")
        keys = [scripts.keys[suffix] for suffix in CHANGE_DELAY_KEYS]
        args = [op.delay, str(op.now), op.job_id, scripts.toKey(op.job_id)]
        try:
            reply = self._run(command(keys=keys, args=args), op.now, "changeDelay")
        except _PackageError as exc:
            raise CandidateError(f"changeDelay raised {exc}") from None
        if isinstance(reply, bool) or not isinstance(reply, int):
            raise CandidateError(f"changeDelay returned {reply!r}, expected an integer code")
        return reply


class _PackageError(Exception):
    """An exception the package raised during an op (kept for mapping back to a code)."""

    def __init__(self, cause: BaseException) -> None:
        self.cause = cause
        super().__init__(f"{type(cause).__name__}: {_one_line(cause)}")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _job_handle(queue: Any, job_id: str) -> Any:
    """A `Job` for an id, as `Job.fromId` gives for an existing one (no hash read needed)."""
    from bullmq import Job

    return Job(queue, "", None, {}, job_id)


def error_code(scripts: Any, exc: BaseException, context: dict[str, Any]) -> int | None:
    """The script code behind an exception from `Scripts.finishedErrors`, or None.

    The package turns a negative script reply into an exception whose type and message depend
    only on the code and `context` (jobId, command, state, parentKey). This rebuilds the
    exception for each known code with the same context and compares; unknown codes are read
    from the "Unknown code N error" message.
    """
    from bullmq.error_code import ErrorCode

    for member in ErrorCode:
        code = int(member.value)
        expected = scripts.finishedErrors({**context, "code": code})
        if type(expected) is type(exc) and str(expected) == str(exc):
            return code
    match = _UNKNOWN_CODE.match(str(exc)) if isinstance(exc, TypeError) else None
    return int(match.group(1)) if match else None


def _code_or_raise(queue: Any, exc: _PackageError, context: dict[str, Any], what: str) -> int:
    code = error_code(queue.scripts, exc.cause, context)
    if code is None or code >= 0:
        raise CandidateError(f"{what} raised {exc}") from None
    return code
