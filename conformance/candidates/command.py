"""`command:CMD`: an implementation in any language, behind the JSON-lines adapter protocol.

The protocol (version 1) is specified by the bundled `schemas/adapter-protocol.schema.json` and
described in `docs/ADAPTERS.md`. Every reply is validated against the schema. An adapter that
exits, hangs past the per-op timeout, or writes anything but a valid reply makes the current op
raise `CandidateError` with the tail of its stderr; it is then killed and started afresh for the
next op, so one broken vector does not end the run.
"""

from __future__ import annotations

import collections
import contextlib
import json
import queue
import shlex
import subprocess
import threading
from pathlib import Path
from typing import Any

import redis

from conformance import schemas
from conformance.candidates.base import Capabilities, QueueRef
from conformance.errors import CandidateError, CandidateSkipped, UsageError
from conformance.options import ADAPTER_TIMEOUT_S
from reference_impl.keys import KeyProfile
from reference_impl.ops import Op, Result, op_to_dict

PROTOCOL_VERSION = 1
_STDERR_LINES = 20


def reply_problem(reply: Any) -> str | None:
    """Why a decoded reply breaks the protocol schema, or None when it is valid."""
    found = schemas.problem(schemas.adapter_reply(), reply)
    return None if found is None else f"reply does not match the adapter protocol {found}"


class Adapter:
    """One running adapter process: send a request, get its validated reply."""

    def __init__(self, argv: list[str], cwd: Path | None = None) -> None:
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, encoding="utf-8", bufsize=1, cwd=cwd)
        except OSError as exc:
            raise CandidateError(f"cannot start adapter {shlex.join(argv)}: {exc.strerror}") \
                from None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()
        self.seq = 0
        self.pending = False

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n"))

    def stderr_tail(self) -> str:
        """The last lines the adapter wrote to stderr."""
        return " | ".join(self.stderr) if self.stderr else "(no stderr output)"

    def _broken(self, what: str) -> CandidateError:
        self.kill()
        return CandidateError(f"adapter {what}; stderr: {self.stderr_tail()}")

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and return its reply, validated against the protocol schema."""
        seq, self.seq = self.seq, self.seq + 1
        self.pending = True
        line = json.dumps({"seq": seq, **message}, separators=(",", ":"))
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._broken(f"exited (code {self.proc.poll()}) before reading a request") \
                from None
        try:
            raw = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise self._broken(f"sent no reply within {timeout:g} s") from None
        if raw is None:
            self.proc.wait(timeout=5)
            raise self._broken(f"exited with code {self.proc.returncode}")
        try:
            reply: dict[str, Any] = json.loads(raw)
        except ValueError:
            shown = raw.strip()[:120]
            raise self._broken(f"wrote a line that is not JSON: {shown!r}") from None
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
        """Stop the process now."""
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)

    def stop(self, timeout: float) -> None:
        """Ask the adapter to stop, then make sure it is gone.

        One still working on a request (the run was interrupted while it hung) is killed at
        once: it would only answer the stop request after the request it is stuck in.
        """
        if self.alive() and not self.pending:
            with contextlib.suppress(CandidateError):
                self.request({"type": "stop"}, timeout)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=timeout)
        self.kill()


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
        self._adapter: Adapter | None = None
        self._redis_url: str | None = None
        self._profile: KeyProfile | None = None

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
        """Start the adapter. If it fails, each op retries and reports the cause as errored."""
        self._redis_url, self._profile = redis_url, profile
        with contextlib.suppress(CandidateError):
            self._running()

    def _running(self) -> Adapter:
        if self._adapter is not None and self._adapter.alive():
            return self._adapter
        if self._redis_url is None or self._profile is None:
            raise CandidateError("adapter used before start()")
        adapter = Adapter(self.argv, self.cwd)
        profile = self._profile
        reply = adapter.request({
            "type": "start", "protocol": PROTOCOL_VERSION, "redis": self._redis_url,
            "profile": {"name": profile.name, "prefix": profile.prefix,
                        "hash_tag": profile.hash_tag},
        }, self.timeout)
        if "implementation" not in reply:
            adapter.kill()
            raise CandidateError(f"adapter answered start with {json.dumps(reply)}")
        self.implementation = reply["implementation"]
        self._adapter = adapter
        return adapter

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        """Send one op to the adapter and return its result."""
        adapter = self._running()
        reply = adapter.request(
            {"type": "op", "queue": queue.name, "base": queue.base, "op": op_to_dict(op)},
            self.timeout)
        if "result" in reply:
            result: Result = reply["result"]
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
