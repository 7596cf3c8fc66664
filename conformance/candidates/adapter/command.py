"""`command:CMD`: an implementation in any language, behind the JSON-lines adapter protocol.

The protocol (version 7: version 2's worker half, version 3's flow ops, version 4's cron
parity nextMillis, version 5's pickUpIteration, version 6's upsertJobScheduler, version 7's
getters and maintenance calls; an adapter that speaks an older version still
runs, and the vectors with newer ops are skipped) is specified by the bundled
`schemas/adapter-protocol.schema.json` and described in `docs/ADAPTERS.md`. Every reply is
validated against the schema. An adapter that exits, hangs past the per-op timeout, or writes
anything but a valid reply makes the current op raise `CandidateError` with the tail of its
stderr; it is then killed and started afresh for the next op, so one broken vector does not end
the run. Output that is not UTF-8 is such a reply too.

An adapter that fails to start (its program cannot be run, or it exits, stays silent past the
timeout, or answers anything but an `implementation` reply to `start`) errors the op that needed
it; when the next op's start fails as well, the candidate raises `CandidateUnusable` (one line),
which stops the run: every further vector would only repeat the same error.

Each adapter runs in a session (and so a process group) of its own, and every kill (after a
timeout, a broken reply, a failed start, at close and on an interrupt) kills the whole group:
the process a wrapper such as `sh -c` runs, and anything the adapter forked, go with it.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import shlex
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import redis

from conformance.candidates.base import Capabilities
from conformance.core import signals
from conformance.core.errors import (
    CandidateError,
    CandidateSkipped,
    CandidateUnusable,
    HarnessError,
    UsageError,
)
from conformance.core.options import ADAPTER_TIMEOUT_S
from conformance.core.queues import QueueRef
from reference_impl import versions
from reference_impl.getter_ops import GETTER_OPS, Paginate
from reference_impl.getters import canonical_page
from reference_impl.keys import KeyProfile
from reference_impl.maintenance_ops import MAINTENANCE_OPS
from reference_impl.ops import WORKER_OP_NAMES, Op, Result, op_to_dict
from reference_impl.repeatable_ops import REPEATABLE_OPS
from reference_impl.scheduler_ops import CLIENT_SIDE, QUEUE_CALLS
from reference_impl.worker_ops import FLOW_JOB_OPS

#: The adapter protocol version the suite speaks; an adapter's start reply names its own.
PROTOCOL_VERSION = 7
#: What an adapter speaks when its start reply does not say: version 1, without the worker
#: half's ops.
DEFAULT_ADAPTER_PROTOCOL = 1
_STDERR_LINES = 20
_SHOWN = 120  # characters of a bad line quoted in an error


#: Fields of version 1 ops that only adapter protocol version 2 has (op -> field names).
VERSION_2_FIELDS: dict[str, tuple[str, ...]] = {
    "moveToActive": ("limiter", "name"),
    "moveToDelayed": ("fields", "fetchNext"),
}


def version_2_part(step: dict[str, Any]) -> str | None:
    """What in an op request needs adapter protocol version 2 (a worker-half op, or a field
    added to a version 1 op), or None."""
    name: str = step["op"]
    if name in WORKER_OP_NAMES:
        return name
    if name == "add" and "de" in step.get("opts", {}):
        return "add opts.de (deduplication)"
    used = [field for field in VERSION_2_FIELDS.get(name, ()) if field in step]
    return f"{name} {', '.join(used)}" if used else None


#: The ops only adapter protocol version 3 has: flows.
VERSION_3_OPS = frozenset({"addParentJob", "addFlow", *FLOW_JOB_OPS})
#: Fields of an `add`'s opts that only version 3 has: the parent link and its policy flags.
VERSION_3_ADD_OPTS = ("parent", "fpof", "cpof", "idof", "rdof")


def version_3_part(step: dict[str, Any]) -> str | None:
    """What in an op request needs adapter protocol version 3 (a flow op, or an add with a
    parent), or None."""
    name: str = step["op"]
    if name in VERSION_3_OPS:
        return name
    used = [field for field in VERSION_3_ADD_OPTS if field in step.get("opts", {})]
    if name == "add" and used:
        return f"add opts.{', opts.'.join(used)} (flows)"
    return None


#: The ops only adapter protocol version 4 has: cron parity.
VERSION_4_OPS = frozenset(CLIENT_SIDE)
#: The ops only adapter protocol version 5 has: a worker's side of a job scheduler.
VERSION_5_OPS = frozenset({"pickUpIteration"})
#: The ops only adapter protocol version 6 has: a caller's upsert of a job scheduler.
VERSION_6_OPS = frozenset({"upsertJobScheduler"})


def version_4_part(step: dict[str, Any]) -> str | None:
    """What in an op request needs adapter protocol version 4 (cron parity's nextMillis), or
    None."""
    name: str = step["op"]
    return name if name in VERSION_4_OPS else None


def version_5_part(step: dict[str, Any]) -> str | None:
    """What in an op request needs adapter protocol version 5 (a worker picking up a
    scheduler's iteration), or None."""
    name: str = step["op"]
    return name if name in VERSION_5_OPS else None


def version_6_part(step: dict[str, Any]) -> str | None:
    """What in an op request needs adapter protocol version 6 (a caller's upsert of a job
    scheduler), or None."""
    name: str = step["op"]
    return name if name in VERSION_6_OPS else None


def scheduler_part(step: dict[str, Any]) -> str | None:
    """A job scheduler script call as a vector gives it (no adapter protocol version has
    addJobScheduler, updateJobScheduler, removeJobScheduler or getJobScheduler: the vectors
    that call them give the scripts' own arguments, a fire time and merged opts a client
    computes itself, so no adapter is sent one), or None."""
    name: str = step["op"]
    return name if name in QUEUE_CALLS else None


#: The ops only adapter protocol version 7 has: the queue's getters (with the plain reads of a
#: job and its logs) and its maintenance calls.
VERSION_7_OPS = frozenset({*GETTER_OPS, *MAINTENANCE_OPS})


def version_7_part(step: dict[str, Any]) -> str | None:
    """What in an op request needs adapter protocol version 7 (a getter or a maintenance
    call), or None."""
    name: str = step["op"]
    return name if name in VERSION_7_OPS else None


def reply_problem(reply: Any) -> str | None:
    """Why a decoded reply breaks the protocol schema, or None when it is valid."""
    from conformance.core import schemas  # jsonschema: only for command candidates

    found = schemas.problem(schemas.adapter_reply(), reply)
    return None if found is None else f"reply does not match the adapter protocol {found}"


class NotRunnable(CandidateError):
    """The adapter's program could not be run at all (not found, not executable)."""

    def __init__(self, argv: list[str], reason: str) -> None:
        self.reason = reason
        super().__init__(f"cannot start adapter {shlex.join(argv)}: {reason}")


class Adapter:
    """One running adapter process: send a request, get its validated reply.

    The pipes are binary and decoded here, one line at a time: a line that is not UTF-8 is a
    protocol error of the current request, never an exception in a reader thread.
    """

    def __init__(self, argv: list[str], cwd: Path | None = None) -> None:
        try:
            # A session of its own: killing only the direct child would leave behind the real
            # adapter under a wrapper (`sh -c 'node adapter.js'`) and any process it forked;
            # its process group holds all of them. (Also: a Ctrl-C at the terminal reaches
            # the suite only, which then stops the adapter itself.) Signals deferred: one
            # inside Popen would leave the adapter running with nobody holding it.
            with signals.deferred():
                self.proc = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, cwd=cwd, start_new_session=True)
        except OSError as exc:
            raise NotRunnable(argv, exc.strerror or str(exc)) from None
        except BaseException:
            if getattr(self, "proc", None) is not None:  # the signal came once it had started
                with contextlib.suppress(OSError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            raise
        #: Set once the group was killed: one SIGKILL reaches every member, and a later kill
        #: must not signal the group's id again (with every member gone, it may be reused).
        self._group_killed = False
        #: Replies as read: a decoded line, the raw bytes of a line that is not UTF-8, or None
        #: once stdout is closed.
        self.lines: queue.Queue[str | bytes | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        #: What broke the protocol, once something did (for a caller's own summary).
        self.failure: str | None = None
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._pump_stderr, daemon=True)
        self._stderr_reader.start()
        self.seq = 0
        self.pending = False

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        # A pipe torn down under the reader ends the stream like an EOF does.
        with contextlib.suppress(OSError, ValueError):
            for raw in self.proc.stdout:
                try:
                    self.lines.put(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    self.lines.put(raw)
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        with contextlib.suppress(OSError, ValueError):
            for raw in self.proc.stderr:
                # stderr is free text: show undecodable bytes escaped rather than fail on them.
                self.stderr.append(raw.decode("utf-8", "backslashreplace").rstrip("\r\n"))

    def stderr_tail(self) -> str:
        """The last lines the adapter wrote to stderr."""
        return " | ".join(self.stderr) if self.stderr else "(no stderr output)"

    def last_stderr_line(self) -> str:
        """The last non-blank line the adapter wrote to stderr."""
        last = next((line for line in reversed(self.stderr) if line.strip()), None)
        return "(no stderr output)" if last is None else last.strip()

    def _broken(self, what: str) -> CandidateError:
        self.failure = what
        self.kill()
        # The process is gone: let the reader collect what it wrote last, which is usually why.
        self._stderr_reader.join(timeout=1)
        return CandidateError(f"adapter {what}; stderr: {self.stderr_tail()}")

    def _exited(self, otherwise: str) -> str:
        """How the process ended (`otherwise` when it is still running after 5 s)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        code = self.proc.poll()
        return otherwise if code is None else f"exited with code {code}"

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and return its reply, validated against the protocol schema."""
        seq, self.seq = self.seq, self.seq + 1
        self.pending = True
        line = json.dumps({"seq": seq, **message}, separators=(",", ":"))
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):
            # Usually it exited before reading the request: the same failure as an exit seen on
            # stdout, whichever of the two pipes notices first.
            raise self._broken(self._exited("closed its stdin")) from None
        try:
            raw = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise self._broken(f"sent no reply within {timeout:g} s") from None
        if raw is None:
            raise self._broken(self._exited("closed its stdout"))
        if isinstance(raw, bytes):
            raise self._broken(f"wrote bytes that are not UTF-8: {_shown(raw)}")
        try:
            reply: dict[str, Any] = json.loads(raw)
        except (ValueError, RecursionError):
            raise self._broken(f"wrote a line that is not JSON: {_shown(raw)}") from None
        problem = reply_problem(reply)
        if problem is not None:
            raise self._broken(problem)
        if reply["seq"] != seq:
            raise self._broken(f"answered seq {reply['seq']} to request seq {seq}")
        self.pending = False
        return reply

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """Stop the process and everything in its process group (what it started) now."""
        if not self._group_killed:
            # SIGKILL: a forked child may ignore SIGTERM, and the adapter had its chance to
            # stop (`stop`) where one was due. The group's id is the child's pid, which cannot
            # be reused while the child is unreaped or any member of its group lives.
            self._group_killed = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)

    def stop(self, timeout: float) -> None:
        """Ask the adapter to stop, then make sure it is gone.

        One still working on a request (the run was interrupted while it hung) is killed at
        once: it would only answer the stop request after the request it is stuck in.
        """
        try:
            if self.alive() and not self.pending:
                with contextlib.suppress(CandidateError):
                    self.request({"type": "stop"}, timeout)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=timeout)
        finally:  # also when a signal interrupts the wait
            self.kill()


def _shown(raw: str | bytes) -> str:
    """A line as quoted in an error: stripped, at most `_SHOWN` characters, escaped by repr."""
    line = raw.strip()
    cut = line[:_SHOWN]
    return f"{cut!r}..." if len(line) > _SHOWN else repr(cut)


def start_request(redis_url: str, profile: KeyProfile) -> dict[str, Any]:
    """The `start` request (without its seq) for this Redis and key profile."""
    return {"type": "start", "protocol": PROTOCOL_VERSION, "redis": redis_url,
            "profile": {"name": profile.name, "prefix": profile.prefix,
                        "hash_tag": profile.hash_tag}}


def _one_line(text: str) -> str:
    """`text` with its line breaks escaped, so that it prints as one line."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class CommandCandidate:
    """A candidate reached through an adapter process speaking the JSON-lines protocol."""

    def __init__(self, command: str, label: str | None = None, timeout: float = ADAPTER_TIMEOUT_S,
                 cwd: Path | None = None) -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise UsageError(f"cannot parse adapter command {command!r}: {exc}") from None
        if not self.argv:
            raise UsageError("command: needs a command line, e.g. command:'node adapter.js'")
        self._label = label or f"command:{command}"
        self.timeout = timeout
        self.cwd = cwd
        self.implementation: dict[str, Any] = {}
        #: The adapter protocol version the running adapter speaks (from its start reply).
        self.speaks: int = DEFAULT_ADAPTER_PROTOCOL
        self._adapter: Adapter | None = None
        self._redis_url: str | None = None
        self._profile: KeyProfile | None = None
        self._start_failures = 0  # by ops, since the last good start

    @property
    def name(self) -> str:
        """Label used in reports."""
        return self._label

    @property
    def capabilities(self) -> Capabilities:
        """The adapter answers `skipped` per op; it talks to one node, not a cluster."""
        return Capabilities()

    @property
    def version(self) -> str:
        """What the adapter said about itself in its start reply."""
        if not self.implementation:
            return "(not started)"
        impl = self.implementation
        return f"{impl.get('name')} {impl.get('version')} ({impl.get('language', '?')})"

    def start(self, redis_url: str, profile: KeyProfile) -> None:
        """Start the adapter (for its version in the header). If that fails, each op starts it
        again: the first failure there errors that op, a second in a row raises
        `CandidateUnusable`."""
        self._redis_url, self._profile = redis_url, profile
        with contextlib.suppress(CandidateError):
            self._running()
        # Not counted: no vector could show why; the first op's own start will.
        self._start_failures = 0

    def _running(self) -> Adapter:
        if self._adapter is not None and self._adapter.alive():
            return self._adapter
        if self._redis_url is None or self._profile is None:
            raise CandidateError("adapter used before start()")
        if self._adapter is not None:
            self._adapter.kill()  # reap the one that died
            self._adapter = None
        try:
            adapter = Adapter(self.argv, self.cwd)
        except NotRunnable as exc:
            raise self._start_failed(exc, f"it cannot be run: {exc.reason}") from None
        try:
            reply = adapter.request(start_request(self._redis_url, self._profile), self.timeout)
        except CandidateError:
            first = CandidateError(f"adapter failed to start: it {adapter.failure}; "
                                   f"stderr: {adapter.stderr_tail()}")
            raise self._start_failed(first, f"it {adapter.failure}; its last stderr line: "
                                            f"{adapter.last_stderr_line()}") from None
        except BaseException:
            adapter.kill()  # interrupted while it started: nobody else holds it
            raise
        if "implementation" not in reply:
            adapter.kill()
            what = f"answered start with {_shown(json.dumps(reply))}"
            raise self._start_failed(CandidateError(f"adapter {what}"), f"it {what}")
        self._start_failures = 0
        self.implementation = reply["implementation"]
        self.speaks = reply.get("protocol", DEFAULT_ADAPTER_PROTOCOL)
        self._adapter = adapter
        return adapter

    def _start_failed(self, exc: CandidateError, summary: str) -> HarnessError:
        """The error for a failed start: `exc` the first time, `CandidateUnusable` (one line,
        with `summary`) when the previous start failed too."""
        self._start_failures += 1
        if self._start_failures < 2:
            return exc
        return CandidateUnusable(_one_line(
            f"adapter {shlex.join(self.argv)} failed to start twice in a row: {summary}"))

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        """Send one op to the adapter and return its result (an op newer than the protocol
        version the adapter speaks is skipped, never sent)."""
        adapter = self._running()
        step = op_to_dict(op)
        if (unsent := scheduler_part(step)) is not None:
            raise CandidateSkipped(
                f"no adapter protocol version has {unsent}: its vectors give the scripts' "
                f"own arguments (a client's calls are upsertJobScheduler and "
                f"pickUpIteration)")
        if step["op"] in REPEATABLE_OPS:
            raise CandidateSkipped(
                f"no adapter protocol version has {step['op']}: the 5.x repeatable job calls "
                "(gone at 6.0.0) are judged on scripts directories only")
        for version, part in ((2, version_2_part), (3, version_3_part), (4, version_4_part),
                              (5, version_5_part), (6, version_6_part), (7, version_7_part)):
            if self.speaks < version and (newer := part(step)) is not None:
                raise CandidateSkipped(
                    f"the adapter speaks adapter protocol {self.speaks}, which has no {newer}; "
                    f"it reaches adapters whose start reply says \"protocol\": {version}")
        reply = adapter.request(
            {"type": "op", "queue": queue.name, "base": queue.base,
             "bullmq": versions.text(queue.protocol), "op": step},
            self.timeout)
        if "result" in reply:
            result: Result = reply["result"]
            if isinstance(op, Paginate) and isinstance(result, list):
                return canonical_page(result)  # a set's members in no order of the protocol
            return result
        if reply.get("skipped"):
            raise CandidateSkipped(reply["reason"])
        if reply.get("errored"):
            trace = reply.get("traceback", "").strip().splitlines()
            last = trace[-1].strip() if trace else ""
            tail = f" ({last})" if last and last not in reply["message"] else ""
            raise CandidateError(f"{reply['message']}{tail}")
        adapter.kill()
        raise CandidateError(f"adapter answered an op with {json.dumps(reply)}")

    def close(self) -> None:
        """Stop the adapter."""
        if self._adapter is not None:
            self._adapter.stop(self.timeout)
            self._adapter = None
