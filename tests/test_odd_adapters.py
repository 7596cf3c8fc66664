"""Adapters that misbehave below the protocol: bytes that are not UTF-8, and adapters that do not
start. The candidate is driven directly (start, apply) on the session Redis."""

from __future__ import annotations

import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.candidates.adapter.command import CommandCandidate
from conformance.core.errors import CandidateError, CandidateUnusable, Exit
from conformance.core.queues import QueueRef
from conformance.run.spec import profile_for
from conformance.servers import ServerInfo
from reference_impl import versions
from reference_impl.ops import Add, Pause
from tests.cli_helpers import cli

FAULTY = Path(__file__).parent / "adapters" / "faulty.py"
PROFILE = profile_for("bullmq")
QUEUE = QueueRef(PROFILE, "bmqc-odd-adapters", versions.CURRENT)
ADD = Add("a", 1_700_000_000_000, {"n": 1})
LONG_TIMEOUT = 30.0


def faulty(mode: str) -> str:
    return shlex.join([sys.executable, str(FAULTY), mode])


@pytest.fixture(autouse=True)
def no_thread_dies(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the test if any thread (a pipe reader) ends with an exception."""
    died: list[str] = []
    monkeypatch.setattr(threading, "excepthook",
                        lambda args: died.append(f"{args.exc_type.__name__}: {args.exc_value}"))
    yield
    assert died == []


@pytest.fixture
def started(request: pytest.FixtureRequest, redis_server: ServerInfo) -> Iterator[CommandCandidate]:
    """A command candidate for `request.param` (command line, timeout), started."""
    command, timeout = request.param
    candidate = CommandCandidate(command, timeout=timeout)
    candidate.start(redis_server.url, PROFILE)
    yield candidate
    candidate.close()


def apply(candidate: CommandCandidate, op: Add | Pause = ADD) -> object:
    return candidate.apply(None, QUEUE, op)  # type: ignore[arg-type]  # the adapter has its own


# --- bytes that are not UTF-8 ------------------------------------------------------------------


@pytest.mark.parametrize("started", [(faulty("non-utf8"), LONG_TIMEOUT)], indirect=True)
def test_a_reply_that_is_not_utf8_errors_the_op_at_once(started: CommandCandidate) -> None:
    began = time.monotonic()
    with pytest.raises(CandidateError) as caught:
        apply(started)
    # A hang check, not a performance target: the old reader died and the op waited 30 s.
    assert time.monotonic() - began < LONG_TIMEOUT / 2
    message = str(caught.value)
    assert not isinstance(caught.value, CandidateUnusable)
    assert "adapter wrote bytes that are not UTF-8: b'\\xff\\xfe{\"ok\": true, \"pad\": \"xx" \
        in message
    assert "\n" not in message
    assert len(message) < 300  # the 1,000-byte line is cut, and the cut is marked
    assert "xxx'..." in message


@pytest.mark.parametrize("started", [(faulty("non-utf8"), LONG_TIMEOUT)], indirect=True)
def test_after_a_reply_that_is_not_utf8_the_next_op_gets_a_fresh_adapter(
        started: CommandCandidate) -> None:
    with pytest.raises(CandidateError, match="not UTF-8"):
        apply(started)
    assert apply(started, Pause()) == 0
    with pytest.raises(CandidateError, match="not UTF-8"):
        apply(started)
    assert apply(started, Pause()) == 0


@pytest.mark.parametrize("started", [(faulty("stderr-non-utf8"), LONG_TIMEOUT)], indirect=True)
def test_stderr_that_is_not_utf8_is_shown_escaped(started: CommandCandidate) -> None:
    with pytest.raises(CandidateError) as caught:
        apply(started)
    assert str(caught.value) == "adapter exited with code 3; stderr: caf\\xe9 \\xff"


# --- adapters that do not start ----------------------------------------------------------------


def not_executable(tmp_path: Path) -> str:
    path = tmp_path / "adapter"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o644)
    return str(path)


@pytest.mark.parametrize(
    ("started", "first", "then"),
    [
        ((faulty("cannot-start"), LONG_TIMEOUT),
         "adapter failed to start: it exited with code 2; stderr: faulty: cannot start: no config",
         "it exited with code 2; its last stderr line: faulty: cannot start: no config"),
        (("/nonexistent/adapter --flag", LONG_TIMEOUT),
         "cannot start adapter /nonexistent/adapter --flag: No such file or directory",
         "it cannot be run: No such file or directory"),
        ((faulty("start-non-utf8"), LONG_TIMEOUT),
         "adapter failed to start: it wrote bytes that are not UTF-8: b'\\xff\\xfe{\"seq\": 0}'",
         "it wrote bytes that are not UTF-8: b'\\xff\\xfe{\"seq\": 0}'"),
        ((faulty("start-refused"), LONG_TIMEOUT),
         "adapter answered start with",
         "cannot reach Redis"),
        ((faulty("start-hang"), 1.0),
         "adapter failed to start: it sent no reply within 1 s",
         "it sent no reply within 1 s"),
    ],
    indirect=["started"],
    ids=["exits", "not-found", "not-utf8", "refused", "start-hang"],
)
def test_an_adapter_that_fails_to_start_twice_makes_the_candidate_unusable(
        started: CommandCandidate, first: str, then: str) -> None:
    with pytest.raises(CandidateError) as caught:
        apply(started)
    assert not isinstance(caught.value, CandidateUnusable)
    assert first in str(caught.value)
    with pytest.raises(CandidateUnusable) as unusable:
        apply(started)
    message = str(unusable.value)
    assert "\n" not in message
    assert message.startswith(f"adapter {shlex.join(started.argv)} failed to start twice in a "
                              "row: ")
    assert then in message


def test_an_adapter_that_is_not_executable_is_unusable(tmp_path: Path,
                                                        redis_server: ServerInfo) -> None:
    candidate = CommandCandidate(not_executable(tmp_path), timeout=LONG_TIMEOUT)
    candidate.start(redis_server.url, PROFILE)
    with pytest.raises(CandidateError, match="Permission denied"):
        apply(candidate)
    with pytest.raises(CandidateUnusable, match=r"failed to start twice in a row: it cannot be "
                                                r"run: Permission denied$"):
        apply(candidate)


def test_a_good_start_resets_the_count(tmp_path: Path, redis_server: ServerInfo) -> None:
    # Starts fail and succeed in turn; each good start is followed by a crash on its first op.
    marker = tmp_path / "failed-once"
    candidate = CommandCandidate(faulty(f"every-other-start:{marker}"), timeout=LONG_TIMEOUT)
    candidate.start(redis_server.url, PROFILE)  # fails; not counted: no op could report it
    crashed = "adapter exited with code 3; stderr: about to crash"
    try:
        with pytest.raises(CandidateError, match=crashed):
            apply(candidate)  # the start works, the op crashes the adapter
        for _ in range(3):
            with pytest.raises(CandidateError, match="failed to start") as failed:
                apply(candidate)  # the start fails
            assert not isinstance(failed.value, CandidateUnusable)
            with pytest.raises(CandidateError, match=crashed):
                apply(candidate)
    finally:
        candidate.close()


# --- adapter check -----------------------------------------------------------------------------


def check(command: str, redis_url: str) -> subprocess.CompletedProcess[str]:
    """`adapter check COMMAND` on `redis_url`, with a short adapter timeout."""
    return cli("adapter", "check", command, "--redis", redis_url, "--adapter-timeout", "5")


@pytest.mark.parametrize(
    ("command", "fail"),
    [
        (faulty("cannot-start"), "FAIL start: adapter exited with code 2; stderr: faulty: cannot "
                                 "start: no config"),
        ("/nonexistent/adapter", "FAIL start: cannot start adapter /nonexistent/adapter: No such "
                                 "file or directory"),
        (faulty("start-non-utf8"), "FAIL start: adapter wrote bytes that are not UTF-8: "
                                   "b'\\xff\\xfe{\"seq\": 0}'"),
    ],
    ids=["exits", "not-found", "not-utf8"],
)
def test_adapter_check_on_an_adapter_that_does_not_start(redis_url: str, command: str,
                                                         fail: str) -> None:
    proc = check(command, redis_url)
    assert proc.returncode == Exit.CANDIDATE == 4, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    failed = [line for line in lines if line.startswith("FAIL")]
    assert len(failed) == 1 and failed[0].startswith(fail), failed
    assert lines[-1] == "adapter check: the adapter did not start"
    assert proc.stderr == ""


def test_adapter_check_on_a_reply_that_is_not_utf8(redis_url: str) -> None:
    proc = check(faulty("non-utf8"), redis_url)
    assert proc.returncode == Exit.FAILED == 1, proc.stdout + proc.stderr
    assert "ok   start" in proc.stdout
    assert "FAIL adapter wrote bytes that are not UTF-8: b'\\xff\\xfe{\"ok\"" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
