"""The properties items checked in child processes (`conformance.properties.children`):
the same result as in-process, passing and failing; the child's exceptions re-raised; a dead
child's items run in-process; where a child is refused; and a signal stops the child too."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.checks.mutant_catalog import EVERY_ENTRY_DIFFERS
from conformance.checks.mutants import write_mutant
from conformance.core.errors import InfrastructureError
from conformance.core.outcomes import Outcome
from conformance.core.resources import lua_dir
from conformance.properties import check, children
from conformance.properties.check import PropertyResult, check_candidate
from conformance.run import batch
from conformance.run.session import Run
from conformance.run.spec import RunOptions
from conformance.servers import ServerInfo
from conformance.vectors import Vector
from reference_impl import versions
from tests.fault_helpers import (
    alive,
    descendants,
    finish,
    local_spec,
    run_in_background,
    runs_server,
    survivors,
    wait_until,
    what_runs,
)


def _started(server: ServerInfo, candidate: str = "reference") -> Iterator[Run]:
    run = Run(RunOptions(candidate=candidate))
    run.attach(server)
    run.start_candidate()
    try:
        yield run
    finally:
        run.candidate.close()


@pytest.fixture
def run(redis_server: ServerInfo) -> Iterator[Run]:
    assert redis_server.owned and not redis_server.cluster
    yield from _started(redis_server)


def _same(ahead: PropertyResult, here: PropertyResult) -> None:
    """Equal but for the clock."""
    assert dataclasses.replace(ahead, seconds=0) == dataclasses.replace(here, seconds=0)


def test_the_children_find_what_the_items_would(run: Run,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(children.os, "cpu_count", lambda: 2)
    started = children.start(run, [("a", 6, 11), ("b", 4, 12), ("c", 3, 13)])
    assert started is not None
    assert len(started.children) == 2 and started.by_item["a"] is started.by_item["c"]
    try:
        got = {name: started.take(name) for name in ("c", "b", "a")}  # in any order
    finally:
        started.stop()
    assert run.server is not None
    for name, examples, seed in (("a", 6, 11), ("b", 4, 12), ("c", 3, 13)):
        assert got[name].examples >= examples and got[name].seed == seed
        _same(got[name], check_candidate(run.candidate, run.server.url, run.profile, examples,
                                         seed, start_candidate=False, private=True,
                                         protocol=versions.CURRENT))
        assert got[name].passed


def test_a_failing_candidate_fails_the_same_in_the_child(redis_server: ServerInfo,
                                                         tmp_path: Path) -> None:
    write_mutant(lua_dir(), tmp_path / "m", EVERY_ENTRY_DIFFERS)
    for run in _started(redis_server, f"scripts:{tmp_path / 'm'}"):
        started = children.start(run, [("p", 20, 3)])
        assert started is not None and run.server is not None
        try:
            got = started.take("p")
        finally:
            started.stop()
        here = check_candidate(run.candidate, run.server.url, run.profile, 20, 3,
                               start_candidate=False, private=True, protocol=versions.CURRENT)
        assert not got.passed and got.failure and "minimal op sequence" in got.failure
        _same(got, here)


def test_what_the_check_raised_in_the_child_is_raised_by_take(
        run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    def down(*args: object, **kwargs: object) -> PropertyResult:
        raise InfrastructureError("Redis went away")

    monkeypatch.setattr(check, "check_candidate", down)  # the fork inherits it
    monkeypatch.setattr(children.os, "cpu_count", lambda: 1)  # one child for both
    started = children.start(run, [("a", 3, 1), ("b", 3, 2)])
    assert started is not None
    try:
        with pytest.raises(InfrastructureError, match="Redis went away"):
            started.take("a")
        assert started.take("b") is None  # the child stopped after it, as a run would
    finally:
        started.stop()


def test_a_dead_child_leaves_the_item_to_run_here(run: Run) -> None:
    started = children.start(run, [("a", 25, 1)])
    assert started is not None
    started.children[0].process.kill()
    try:
        assert started.take("a") is None
    finally:
        started.stop()
    assert not started.children[0].process.is_alive()


def test_no_child_where_it_could_disturb_something(run: Run, redis_server: ServerInfo,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    assert children.usable(run)
    assert children.start(run, []) is None
    shared = dataclasses.replace(redis_server, owned=False)
    monkeypatch.setattr(run, "server", shared)
    assert not children.usable(run)  # a url: server
    monkeypatch.setattr(run, "server", redis_server)
    monkeypatch.setattr(children.sys, "platform", "darwin")
    assert not children.usable(run)  # fork is offered there, but not safe
    monkeypatch.setattr(children.sys, "platform", "linux")
    assert children.usable(run)
    monkeypatch.setenv(batch.SERIAL_ENV, "1")
    assert not children.usable(run)


def test_the_childs_queues_are_out_of_the_batches_reach(run: Run,
                                                        every_vector: list[Vector]) -> None:
    assert run.client is not None
    child = f"bull:bmqc-{run.names.run_id}-p0-000001:wait"  # a key of the child's first queue
    run.client.rpush(child, "1")
    try:
        verdicts = batch.run_vectors(every_vector[:60], run.candidate, run.client, run.profile,
                                     run.names, run.server, protocol=versions.CURRENT)
        assert any(v.outcome is Outcome.PASSED for v in verdicts)
        assert run.client.lrange(child, 0, -1) == ["1"]  # not read and deleted by a batch
    finally:
        run.client.delete(child)


def _forks_recorded(monkeypatch: pytest.MonkeyPatch,
                    then: Callable[[list[int]], None] | None = None) -> list[int]:
    """Two CPUs for the children, and the pid of each child forked from now on, in order
    (`then` runs after each fork, with the pids so far)."""
    monkeypatch.setattr(children.os, "cpu_count", lambda: 2)
    fork = multiprocessing.get_context("fork").Process
    original = fork.start
    forked: list[int] = []

    def start_and_record(self: Any) -> None:
        original(self)
        assert self.pid is not None
        forked.append(self.pid)
        if then is not None:
            then(forked)

    monkeypatch.setattr(fork, "start", start_and_record)
    return forked


def test_a_signal_between_two_forks_leaves_no_child_behind(
        run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    def signal_once(forked: list[int]) -> None:
        if len(forked) == 1:  # as a Ctrl-C that lands before the child is on the list
            os.kill(os.getpid(), signal.SIGTERM)

    forked = _forks_recorded(monkeypatch, signal_once)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            children.start(run, [("a", 400, 1), ("b", 400, 2)])
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert forked and not survivors(set(forked), grace=0.5)


def test_the_children_are_held_before_start_returns(run: Run,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The plugin holds `into` before the call: a signal that lands as start() returns (after
    # the last fork, before the caller's assignment) still finds every child there to stop.
    held = children.PropertiesChildren([], {})
    seen = _forks_recorded(monkeypatch)
    try:
        assert children.start(run, [("a", 400, 1), ("b", 400, 2)], into=held) is held
        assert [child.process.pid for child in held.children] == seen and len(seen) == 2
        assert set(held.by_item) == {"a", "b"}
    finally:
        held.stop()
    assert not survivors(set(seen), grace=0.5)


def _start_then_die(run: Run, report: Any) -> None:
    """In a forked process: start the children, report their pids, and end without `stop`."""
    started = children.start(run, [("a", 400, 1), ("b", 400, 2)])
    assert started is not None
    report.send([child.process.pid for child in started.children])
    os._exit(0)


def test_the_children_die_with_the_process_that_forked_them(run: Run) -> None:
    # What a stop interrupted by a second signal would leave: a parent gone, `stop` never run.
    receiving, sending = multiprocessing.Pipe(duplex=False)
    parent = multiprocessing.get_context("fork").Process(target=_start_then_die,
                                                         args=(run, sending))
    parent.start()
    sending.close()
    assert receiving.poll(30), "the forked parent reported no children"
    pids = set(receiving.recv())
    parent.join(30)
    assert parent.exitcode == 0 and len(pids) == 2
    assert not survivors(pids, grace=5.0), "a child outlived the process that forked it"


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_child_too(signum: int) -> None:
    run = run_in_background("-q", "--redis", local_spec(), "--examples", "400")
    # Besides the redis-server, the properties child. The server first: the fork that
    # starts the server is a child that is not the server either, until it execs.
    def forked() -> bool:
        running = [pid for pid in descendants(run.pid) if alive(pid)]
        return any(map(runs_server, running)) and not all(map(runs_server, running))

    wait_until(forked, run, "the properties child to fork", timeout=30)
    children = descendants(run.pid)
    sent = time.monotonic()
    run.send_signal(signum)
    ended = finish(run, timeout=60)
    assert ended.code == 128 + signum, ended.out[-2000:] + ended.err
    assert time.monotonic() - sent < 1.0
    left = survivors(children)
    assert not left, f"a child of the run outlived it: {what_runs(left)}"
