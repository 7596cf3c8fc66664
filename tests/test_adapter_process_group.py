"""An adapter is more than one process: a wrapper (`sh -c`) runs the real one, or the adapter
forks a grandchild, which may ignore SIGTERM. Whichever way the suite ends the adapter (close,
a timeout, a crash, a restart, a failed start, `adapter check`, or a signal to the suite), none
of those processes outlives it. Every adapter here writes its own pid and its grandchild's to a
file (tests/adapters/forking.py), so that a process re-parented away from the suite is still
checked."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.candidates.adapter.command import CommandCandidate
from conformance.core.errors import CandidateError, CandidateSkipped
from conformance.core.queues import QueueRef
from conformance.run.spec import profile_for
from conformance.servers import ServerInfo
from reference_impl import versions
from reference_impl.ops import Add
from tests.cli_helpers import cli
from tests.fault_helpers import alive, finish, run_in_background, survivors, wait_until

FORKING = Path(__file__).parent / "adapters" / "forking.py"
PROFILE = profile_for("bullmq")
QUEUE = QueueRef(PROFILE, "bmqc-process-group", versions.CURRENT)
ADD = Add("a", 1_700_000_000_000, {"n": 1})
SHORT_TIMEOUT = 1.0


def adapter(pidfile: Path, child: str, mode: str, wrapper: str = "") -> str:
    """The command line of forking.py, run directly or under `sh -c` (`exec`, or a shell that
    stays as the adapter's parent)."""
    inner = shlex.join([sys.executable, str(FORKING), str(pidfile), child, mode])
    if wrapper == "exec":
        return shlex.join(["sh", "-c", f"exec {inner}"])
    if wrapper == "sh":
        # Not the last command of the script: no shell may replace itself with it.
        return shlex.join(["sh", "-c", f"{inner}; exit $?"])
    return inner


def pids_in(pidfile: Path) -> set[int]:
    return {int(line) for line in pidfile.read_text().split()} if pidfile.exists() else set()


def _read_ordered(pidfile: Path) -> tuple[int, int]:
    """(the adapter's pid, its grandchild's), in the order the adapter wrote them."""
    first, second = (int(line) for line in pidfile.read_text().split())
    return first, second


def apply(candidate: CommandCandidate) -> object:
    return candidate.apply(None, QUEUE, ADD)  # type: ignore[arg-type]  # the adapter has its own


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pids"
    yield path
    for pid in pids_in(path):  # a failed test leaves nothing running either
        if alive(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


WRAPPERS = ["direct", "exec", "sh"]
CHILDREN = ["fork", "stubborn"]


@pytest.mark.parametrize("child", CHILDREN)
@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_close_stops_every_process_of_a_well_behaved_adapter(
        pidfile: Path, redis_server: ServerInfo, wrapper: str, child: str) -> None:
    candidate = CommandCandidate(adapter(pidfile, child, "serve", wrapper), timeout=30)
    candidate.start(redis_server.url, PROFILE)
    adapter_pid, grandchild = _read_ordered(pidfile)
    assert candidate._adapter is not None
    direct = candidate._adapter.proc
    if wrapper == "sh":
        assert direct.pid != adapter_pid, "the shell stays the adapter's parent"
    with pytest.raises(CandidateSkipped, match="forking skips everything"):
        apply(candidate)
    candidate.close()
    # It was asked to stop and did, on its own: exit code 0, not a kill.
    assert direct.returncode == 0
    assert not survivors({adapter_pid, grandchild}), "a process of the adapter outlived close"


@pytest.mark.parametrize(("wrapper", "child"), [
    (wrapper, child) for wrapper in WRAPPERS for child in ("none", *CHILDREN)
    if (wrapper, child) != ("direct", "none")  # one process: the direct child, killed before
])
def test_a_timeout_kills_the_whole_adapter_and_the_next_op_starts_a_fresh_one(
        pidfile: Path, redis_server: ServerInfo, wrapper: str, child: str) -> None:
    candidate = CommandCandidate(adapter(pidfile, child, "hang", wrapper), timeout=SHORT_TIMEOUT)
    candidate.start(redis_server.url, PROFILE)
    try:
        first = pids_in(pidfile)
        with pytest.raises(CandidateError, match="sent no reply within 1 s"):
            apply(candidate)
        assert not survivors(first), "the hanging adapter's processes outlived its timeout"
        with pytest.raises(CandidateError, match="sent no reply within 1 s"):
            apply(candidate)  # a fresh adapter, killed whole in turn
        second = pids_in(pidfile) - first
        assert second
        assert not survivors(second)
    finally:
        candidate.close()


def test_a_restart_kills_what_the_dead_adapter_left(pidfile: Path,
                                                    redis_server: ServerInfo) -> None:
    """The adapter exits between two ops (here: told to stop behind the candidate's back)
    and leaves its stubborn grandchild: the next op's restart kills that one too."""
    candidate = CommandCandidate(adapter(pidfile, "stubborn", "serve"), timeout=30)
    candidate.start(redis_server.url, PROFILE)
    try:
        first = pids_in(pidfile)
        assert candidate._adapter is not None
        candidate._adapter.request({"type": "stop"}, 30)  # it exits; its grandchild does not
        candidate._adapter.proc.wait(timeout=30)
        assert any(alive(pid) for pid in first)
        with pytest.raises(CandidateSkipped, match="forking skips everything"):
            apply(candidate)  # restarts it
        assert not survivors(first), "the dead adapter's grandchild outlived the restart"
    finally:
        candidate.close()
    assert not survivors(pids_in(pidfile))


@pytest.mark.parametrize("wrapper", WRAPPERS)
@pytest.mark.parametrize("child", CHILDREN)
def test_a_failed_start_leaves_no_process(pidfile: Path, redis_server: ServerInfo,
                                         child: str, wrapper: str) -> None:
    candidate = CommandCandidate(adapter(pidfile, child, "no-start", wrapper), timeout=30)
    candidate.start(redis_server.url, PROFILE)
    with pytest.raises(CandidateError, match="failed to start"):
        apply(candidate)
    candidate.close()
    pids = pids_in(pidfile)
    assert len(pids) == 4  # two starts, two processes each
    assert not survivors(pids)


def test_adapter_check_leaves_no_process(pidfile: Path, redis_url: str) -> None:
    proc = cli("adapter", "check", adapter(pidfile, "stubborn", "serve", "sh"), "--redis",
               redis_url)
    assert "ok   stop" in proc.stdout, proc.stdout + proc.stderr
    pids = pids_in(pidfile)
    assert len(pids) == 2
    assert not survivors(pids)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=lambda s: signal.Signals(s).name)
def test_a_signal_to_the_suite_leaves_no_adapter_process(pidfile: Path, redis_url: str,
                                                         signum: int) -> None:
    run = run_in_background("-q", "--redis", redis_url, "--examples", "0",
                            "--adapter-timeout", "30", "--candidate",
                            f"command:{adapter(pidfile, 'stubborn', 'hang', 'sh')}")
    wait_until(lambda: len(pids_in(pidfile)) == 2, run, "the adapter and its grandchild")
    pids = pids_in(pidfile)
    run.send_signal(signum)
    ended = finish(run, timeout=60)
    assert ended.code == 128 + signum, ended.out[-2000:] + ended.err
    assert not survivors(pids), "a process of the adapter outlived the suite"
