"""The fault matrix, signal half: SIGINT, SIGTERM and SIGHUP at several points of a run, with
and without a hanging adapter. Each ends the run promptly with 128 + the signal's number and one
stderr line, leaves no run key on a `url:` server and no child process alive (README: "Fault
matrix")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance.core import signals
from tests.fault_helpers import (
    FAULTY_ADAPTER,
    PAST_20,
    PAST_20_WORKERS,
    ServerProcess,
    descendants,
    finish,
    has_keys,
    local_spec,
    run_in_background,
    runs_server,
    server_binary,
    survivors,
    wait_until,
)

pytestmark = pytest.mark.slow

#: Far longer than a prompt stop may take: a run that waited for the adapter would show.
ADAPTER_TIMEOUT = "30"
#: The target: a signal takes effect within a second (README gives the times measured, about
#: 0.01-0.04 s, so a loaded test machine still has room).
PROMPT_S = 1.0

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
#: The name of the server process a `local:` run starts (redis-server, or valkey-server on a
#: machine with only Python).
SERVER = Path(server_binary()).name



def _hanging(marker: Path) -> list[str]:
    """An adapter that hangs in its first op, and creates `marker` as it starts to hang."""
    return ["--candidate", f"command:{sys.executable} {FAULTY_ADAPTER} hang:{marker}",
            "--adapter-timeout", ADAPTER_TIMEOUT]


#: Vectors whose `given` keys are written before the first op (where the adapter hangs).
SEEDED = "pause/legacy-rename or promote-job/legacy-zero-marker-dropped"

# name: (run arguments, keys a started run has on the server, what it is busy with); the
# `hanging` ones run with `_hanging`'s adapter, and are signalled once it hangs.
SCENARIOS = {
    "vectors": (["--examples", "0"], PAST_20),
    "properties": (["-k", "properties", "--examples", "400"], ("*bmqc-*",)),
    "hanging-adapter": (["--examples", "0", "-k", SEEDED], ("*bmqc-*",)),
    "two-workers": (["-n", "2", "--examples", "0"], PAST_20_WORKERS),
    "two-workers-hanging": (["-n", "2", "--examples", "0", "-k", SEEDED], ("*bmqc-*-w*",)),
}


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_signal_stops_the_run_cleanly(server: ServerProcess, tmp_path: Path, scenario: str,
                                        signum: int) -> None:
    args, started = SCENARIOS[scenario]
    hangs = tmp_path / "hangs"
    hanging = "hanging" in scenario
    run = run_in_background("-q", "--redis", f"url:{server.url}",
                            *(_hanging(hangs) if hanging else []), *args)
    watcher = server.client()
    wait_until(has_keys(watcher, *started), run, "the run to be busy")
    if hanging:
        wait_until(hangs.exists, run, "the adapter to hang")
    children = descendants(run.pid)
    if hanging or "workers" in scenario:
        assert children, "the run has children (an adapter or xdist workers) to clean up"
    sent = time.monotonic()
    run.send_signal(signum)
    ended = finish(run, timeout=60)
    took = time.monotonic() - sent
    assert ended.code == 128 + signum, ended.out[-2000:] + ended.err
    assert took < PROMPT_S, f"{took:.2f} s"
    assert ended.err_lines == [f"bullmq-conformance: stopped by {signal.Signals(signum).name}"]
    assert "Traceback" not in ended.out + ended.err
    assert not survivors(children), "a child of the run outlived it"
    assert sorted(watcher.scan_iter(match="*bmqc-*", count=1000)) == []


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_stops_the_redis_server_the_run_started(tmp_path: Path, signum: int) -> None:
    hangs = tmp_path / "hangs"
    run = run_in_background("-q", "--redis", local_spec(), *_hanging(hangs), "--examples", "0")
    wait_until(hangs.exists, run, "the adapter to hang in the first vector")
    children = descendants(run.pid)
    assert any(runs_server(pid) for pid in children), f"no {SERVER} started"
    run.send_signal(signum)
    ended = finish(run, timeout=60)
    assert ended.code == 128 + signum, ended.out[-2000:] + ended.err
    assert not survivors(children)


def test_a_signal_before_redis_answers(tmp_path: Path) -> None:
    """SIGTERM while the run waits on its Redis (here: one that never replies) still ends it
    at once, with its own exit code."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        silent.setblocking(False)
        port = silent.getsockname()[1]
        run = run_in_background("-q", "--redis", f"url:redis://127.0.0.1:{port}/0")

        def connected() -> socket.socket | None:
            try:
                return silent.accept()[0]
            except BlockingIOError:
                return None

        # Held open, never answered: the run waits for its first reply.
        with wait_until(connected, run, "the run to connect to its Redis"):
            sent = time.monotonic()
            run.send_signal(signal.SIGTERM)
            ended = finish(run, timeout=60)
    assert ended.code == 143, ended.out + ended.err
    assert time.monotonic() - sent < PROMPT_S
    assert "Traceback" not in ended.out + ended.err


def test_a_signal_while_an_adapter_is_slow_to_stop(tmp_path: Path) -> None:
    """The run is over and closing; the adapter takes its time to stop. SIGTERM then still
    stops the suite's own redis-server."""
    stopping = tmp_path / "stopping"
    run = run_in_background("-q", "--redis", local_spec(), "--examples", "0", "--adapter-timeout",
                            ADAPTER_TIMEOUT, "--candidate",
                            f"command:{sys.executable} {FAULTY_ADAPTER} skip-slow-stop:{stopping}")
    wait_until(stopping.exists, run, "the adapter to be stopped")
    children = descendants(run.pid)
    assert any(runs_server(pid) for pid in children)
    run.send_signal(signal.SIGTERM)
    ended = finish(run, timeout=60)
    assert ended.code == 143, ended.out[-2000:] + ended.err
    assert not survivors(children)


def _cmdline(pid: int) -> str:
    """The command line of `pid`; empty once it has exited (short-lived children, such as a
    `redis-server --version` probe, may end between listing and reading)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _child_running(run_pid: int, word: str) -> set[int]:
    return {pid for pid in descendants(run_pid) if word in _cmdline(pid)}


def test_a_signal_while_the_adapter_starts(server: ServerProcess, tmp_path: Path) -> None:
    """The adapter never answers `start`: a signal then, before the suite holds the adapter
    as started, still leaves no adapter behind."""
    hangs = tmp_path / "hangs"
    run = run_in_background("-q", "--redis", f"url:{server.url}", "--examples", "0",
                            "--adapter-timeout", ADAPTER_TIMEOUT, "--candidate",
                            f"command:{sys.executable} {FAULTY_ADAPTER} start-hang:{hangs}")
    wait_until(hangs.exists, run, "the adapter to read its start request and hang")
    adapters = _child_running(run.pid, "start-hang")
    assert adapters, "the adapter runs"
    sent = time.monotonic()
    run.send_signal(signal.SIGTERM)
    ended = finish(run, timeout=60)
    assert ended.code == 143, ended.out[-2000:] + ended.err
    assert time.monotonic() - sent < PROMPT_S
    assert not survivors(adapters)


class Raises:
    """An object whose finalizer raises `exc` (Python reports it to sys.unraisablehook)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __del__(self) -> None:
        raise self.exc


def test_an_interrupt_dropped_in_a_finalizer_is_not_printed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Python reports an exception raised in __del__ (sys.unraisablehook) and drops it; our
    interrupt is delivered again instead, so only other exceptions reach the outer hook."""
    seen: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(info.exc_value))
    guard = signals.SignalGuard()
    with guard.installed():
        guard.received = signal.SIGINT
        guard.acknowledge()  # nothing to deliver again in this test
        Raises(KeyboardInterrupt())
        Raises(ValueError("a real bug"))
    assert [type(exc) for exc in seen] == [ValueError]


def test_a_stopped_worker_prints_nothing_it_raises_while_winding_down(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An xdist worker's stderr is the run's: after a signal, the controller's line is the only
    one. What the worker's interrupted code raises in finalizers is dropped, during the guard
    and after it (pytest's capture hook is collected once capture has stopped); before a
    signal, a finalizer's exception is still reported."""
    seen: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(info.exc_value))
    guard = signals.SignalGuard()
    with guard.installed(worker=True):
        Raises(ValueError("before the signal"))
        guard.received = signal.SIGINT
        guard.acknowledge()
        Raises(AssertionError("while winding down"))
    Raises(AssertionError("after the guard"))
    assert [str(exc) for exc in seen] == ["before the signal"]


@pytest.fixture
def no_watchdog(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests send the signal again themselves, at the step they choose."""
    class Idle:
        def __init__(self, *args: object) -> None:
            self.daemon = True

        def start(self) -> None:
            pass

    monkeypatch.setattr(threading, "Timer", Idle)


def _sent_again_after(guard: signals.SignalGuard, meanwhile: Callable[[], object]) -> None:
    """The watchdog's race, step by step: a first signal raised and caught; the watchdog finds
    the interrupt unseen and decides to send it again; `meanwhile` the main thread moves on;
    then the signal arrives."""
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)  # the handler raises at the next bytecode: never slept out
    guard._redeliver = True  # what _again sets before its kill
    meanwhile()
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # a raise would land here


def test_a_signal_sent_again_after_the_interrupt_landed_is_dropped(no_watchdog: None) -> None:
    """pytest acknowledged the interrupt and is stopping the session: the watchdog's late
    signal must not interrupt that (it once left the run's redis-server running)."""
    guard = signals.SignalGuard()
    with guard.installed():
        _sent_again_after(guard, guard.acknowledge)
        assert guard.received == signal.SIGINT


def test_a_signal_sent_again_during_cleanup_that_must_finish_is_dropped(no_watchdog: None) -> None:
    guard = signals.SignalGuard()
    with guard.installed(), guard.closing():
        _sent_again_after(guard, lambda: None)
        assert guard.received == signal.SIGINT


def test_a_signal_sent_again_while_the_interrupt_is_unseen_still_raises(no_watchdog: None) -> None:
    guard = signals.SignalGuard()
    with guard.installed(), pytest.raises(KeyboardInterrupt):
        _sent_again_after(guard, lambda: None)


def test_a_signal_in_a_deferred_block_is_raised_as_it_ends(no_watchdog: None) -> None:
    guard = signals.SignalGuard()
    reached: list[str] = []
    with guard.installed(), pytest.raises(KeyboardInterrupt), signals.deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # a raise would land here
        reached.append("the block's end")
    assert reached == ["the block's end"] and guard.received == signal.SIGTERM


def test_a_signal_inside_the_servers_spawn_stops_the_server(
        monkeypatch: pytest.MonkeyPatch, no_watchdog: None) -> None:
    """The signal lands in Popen once the server runs (the test's Popen signals itself as it
    returns): the interrupt comes after `proc` is held, and the server is stopped."""
    from conformance.servers import local

    spawned: list[int] = []
    real = subprocess.Popen

    def popen_then_signal(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = real(argv, **kwargs)
        spawned.append(proc.pid)
        # Once it serves: a server still starting would fail on its own (its directory gone).
        port = int(argv[argv.index("--port") + 1])
        wait_until(lambda: _answers(port), None, "the server to answer", timeout=30)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # still inside Popen, as far as the caller knows
        return proc

    monkeypatch.setattr(local.subprocess, "Popen", popen_then_signal)
    guard = signals.SignalGuard()
    with guard.installed(), pytest.raises(KeyboardInterrupt):
        local.start_process(server_binary(), "local")
    assert len(spawned) == 1 and not survivors(set(spawned), grace=5.0)


def _answers(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True
