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
  `Job.moveToFailed` makes for a retry with backoff (without its `fieldsToUpdate`); a release
  whose `Scripts.moveToDelayed` has no opts argument (it always counts the attempt) is called
  `(id, time, delay, token)` without skipAttempt, `time` being the fire time before 5.8.6
  (its client computed the score) and `now` after;
- `pause` and `resume` are `Queue.pause()` and `Queue.resume()`; the result is the script's
  reply (the legacy paused jobs left, 0 when pausing).

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
from typing import Any, cast

import redis

from conformance.candidates.base import Capabilities, QueueRef
from conformance.candidates.bullmq_package import (
    PINNED_VERSION,
    check_signature,
    describe,
    error_code,
    frozen_clock,
    one_line,
    parent_key,
)
from conformance.errors import CandidateError, CandidateSkipped, UsageError
from reference_impl import versions
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
from reference_impl.versions import Version

INSTALL_HINT = ("--candidate bullmq-py needs the official client: "
                f"pip install bullmq=={PINNED_VERSION}")
#: KEYS of changeDelay-4 (PROTOCOL.md §7.3).
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
            MoveToDelayed: self._move_to_delayed,
            Pause: self._pause,
            Resume: self._pause,
        }
        # the protocol judged: what an older client's arguments mean (moveToDelayed)
        self._protocol = queue.protocol
        try:
            return handlers[type(op)](self._queue_for(queue), op)
        except _REDIS_DOWN as exc:
            if not _answers(client):
                raise
            raise CandidateError(f"{self._package} could not reach Redis ({one_line(exc)}) "
                                 "while the suite's connection works: does it take the "
                                 "`connection` URL?") from None
        except (CandidateError, CandidateSkipped):
            raise
        except Exception as exc:  # the package differs somewhere no handler checks
            raise CandidateError(f"{self._package}: {_PackageError(exc)}") from None

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
        package raises comes back as _PackageError (for mapping to a script code).
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
            raise _PackageError(exc) from exc

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
            raise CandidateError(f"Queue() failed: {_PackageError(exc)}") from None
        self._queue, self._queue_name = queue, ref.name
        keys = getattr(queue, "keys", None)
        base = keys.get("") if isinstance(keys, dict) else None
        # Without queue.keys the state diff shows a wrong BASE as missing and stray keys.
        if base is not None and base != ref.base:
            raise CandidateError(f"the client's BASE is {base!r}, the suite expects "
                                 f"{ref.base!r}: start() got another key profile")
        return queue

    def _close_queue(self) -> None:
        queue, self._queue, self._queue_name = self._queue, None, None
        if queue is not None and self._loop is not None:
            # An older release closes its connection through a redis-py call since deprecated:
            # a warning per vector about the package, not about what it wrote.
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                self._loop.run_until_complete(_awaited(queue.close()))

    def _job_handle(self, queue: Any, job_id: str) -> Any:
        """A `Job` for an id, as `Job.fromId` gives for an existing one (no hash read needed)."""
        import bullmq

        job_class = self._member(bullmq, "Job", "Job")
        args: tuple[Any, ...] = (queue, "", None, {}, job_id)
        check_signature(job_class, args, "Job()")
        try:
            return job_class(*args)
        except Exception as exc:
            raise CandidateError(f"Job() failed: {_PackageError(exc)}") from None

    def _scripts(self, queue: Any) -> Any:
        return self._member(queue, "scripts", "Queue.scripts")

    # -- ops ----------------------------------------------------------------------------------

    def _add(self, queue: Any, op: Add) -> Result:
        opts: dict[str, Any] = {**op.opts, "timestamp": op.timestamp}
        if op.job_id is not None:
            opts["jobId"] = op.job_id
        add = self._member(queue, "add", "Queue.add")
        try:
            job = self._run("Queue.add", op.timestamp, add, op.name, op.data, opts)
        except _PackageError as exc:
            context = {"parentKey": parent_key(opts.get("parent")), "command": "addJob"}
            return _code_or_raise(queue, exc, context, "Queue.add")
        job_id = getattr(job, "id", None)
        if job_id is None:
            raise CandidateError(f"Queue.add returned {job!r}, not a job with an id")
        return str(job_id)

    def _move_to_active(self, queue: Any, op: MoveToActive) -> Result:
        method = self._member(self._scripts(queue), "moveToActive", "Scripts.moveToActive")
        try:
            reply = self._run("Scripts.moveToActive", op.now, method, op.token,
                              {"lockDuration": op.lock_duration})
        except _PackageError as exc:
            raise CandidateError(f"Scripts.moveToActive raised {exc}") from None
        if isinstance(reply, list) and len(reply) == 4:
            _, job, ttl, next_ms = reply
            with contextlib.suppress(TypeError, ValueError):  # else shown as it came
                return fetched(None if job in (0, "0", None) else str(job), int(ttl or 0),
                               int(next_ms or 0))
        return _as_is(reply)

    def _promote(self, queue: Any, op: Promote) -> Result:
        job = self._job_handle(queue, op.job_id)
        try:
            reply = self._run("Job.promote", None, self._member(job, "promote", "Job.promote"))
        except _PackageError as exc:
            context = {"jobId": op.job_id, "command": "promote", "state": "delayed"}
            return _code_or_raise(queue, exc, context, "Job.promote")
        return 0 if reply is None else _as_is(reply)

    def _change_priority(self, queue: Any, op: ChangePriority) -> Result:
        job = self._job_handle(queue, op.job_id)
        method = self._member(job, "changePriority", "Job.changePriority")
        try:
            reply = self._run("Job.changePriority", None, method,
                              {"priority": op.priority, "lifo": op.lifo})
        except _PackageError as exc:
            context = {"jobId": op.job_id, "command": "changePriority"}
            return _code_or_raise(queue, exc, context, "Job.changePriority")
        return 0 if reply is None else _as_is(reply)

    def _move_to_delayed(self, queue: Any, op: MoveToDelayed) -> Result:
        if op.skip_attempt and op.delay >= 0:
            # Job.moveToDelayed reads the (frozen) clock: delay = timestamp - now.
            what = "Job.moveToDelayed"
            job = self._job_handle(queue, op.job_id)
            reply = self._delayed(queue, op, what, self._member(job, "moveToDelayed", what),
                                  op.now + op.delay, op.token)
        else:
            what = "Scripts.moveToDelayed"
            method = self._member(self._scripts(queue), "moveToDelayed", what)
            args: tuple[Any, ...] = (op.job_id, op.now, op.delay, op.token,
                                     {"skipAttempt": op.skip_attempt})
            if not op.skip_attempt and not _takes(method, args) and _takes(method, args[:4]):
                # Releases before the opts argument always counted the attempt; the time they
                # take is the fire time while the client computed the score (before 5.8.6),
                # then `now`.
                at = op.now if self._protocol >= versions.BAND_BUMP else op.now + op.delay
                args = (op.job_id, at, op.delay, op.token)
            reply = self._delayed(queue, op, what, method, *args)
        # Only a fetch-next (never asked for) returns a job.
        return 0 if reply is None else _as_is(reply)

    def _delayed(self, queue: Any, op: MoveToDelayed, what: str, method: Any,
                 *args: Any) -> Any:
        try:
            return self._run(what, op.now, method, *args)
        except _PackageError as exc:
            context = {"jobId": op.job_id, "command": "moveToDelayed", "state": "active"}
            return _code_or_raise(queue, exc, context, what)

    def _pause(self, queue: Any, op: Pause | Resume) -> Result:
        what = "Queue.pause" if isinstance(op, Pause) else "Queue.resume"
        method = self._member(queue, what.removeprefix("Queue."), what)
        try:
            # Any reply is passed on: one of another shape (None from a release whose script
            # returns nothing) is a return difference, judged with the state.
            return _as_is(self._run(what, None, method))
        except _PackageError as exc:
            raise CandidateError(f"{what} raised {exc}") from None

    def _change_delay(self, queue: Any, op: ChangeDelay) -> Result:
        scripts = self._scripts(queue)
        commands = getattr(scripts, "commands", None)
        command = commands.get("changeDelay") if isinstance(commands, dict) else None
        if command is None:
            raise CandidateSkipped(f"{self._package} has no Job.changeDelay, and its Scripts "
                                   "does not load the changeDelay-4.lua it ships")
        keys = [scripts.keys[suffix] for suffix in CHANGE_DELAY_KEYS]
        args = [op.delay, str(op.now), op.job_id, scripts.toKey(op.job_id)]
        try:
            return _as_is(self._run("changeDelay", op.now, lambda: command(keys=keys, args=args)))
        except _PackageError as exc:
            raise CandidateError(f"changeDelay raised {exc}") from None


class _PackageError(Exception):
    """An exception the package raised during an op (kept for mapping back to a code)."""

    def __init__(self, cause: BaseException) -> None:
        self.cause = cause
        kind = type(cause).__name__
        super().__init__(f"{kind}: {one_line(cause)}" if str(cause).strip() else kind)


def _takes(method: Any, args: tuple[Any, ...]) -> bool:
    """Whether `method` can be called with these positional arguments."""
    try:
        inspect.signature(method).bind(*args)
    except TypeError:
        return False
    except ValueError:  # no signature to read: let the call say
        return True
    return True


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _as_is(reply: Any) -> Result:
    # Passed on unchanged: the runner compares it with the expected return and shows it.
    return cast(Result, reply)


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def _code_or_raise(queue: Any, exc: _PackageError, context: dict[str, Any], what: str) -> int:
    code = error_code(getattr(queue, "scripts", None), exc.cause, context)
    if code is None or code >= 0:
        raise CandidateError(f"{what} raised {exc}") from None
    return code
