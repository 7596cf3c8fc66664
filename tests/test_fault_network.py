"""The fault matrix, network half: latency, connection resets, a reset storm, a blackhole, a
`CLIENT PAUSE`, someone else's `FLUSHALL`, and a crowded `url:` server. Whatever the network
or another client does, a run of the reference gives no false verdict (README: "Fault matrix").

The verdict rule for each: exit 0 with every selected vector (and the `properties` item)
passed, or exit 3 with one stderr line naming the fault; never exit 1, never a *failed* or
*errored* verdict against the reference, never a traceback; and no run key left behind.

Each test starts a redis-server of its own (`fault_helpers.server`), and the network faults
put a loopback proxy (`tests/fault_proxy.py`) between it and the run. A fault is set off by a
condition on the server (`INFO commandstats`, keys of the run), never after a fixed sleep.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.fault_helpers import (
    OPS_BEFORE_FAULT,
    Ended,
    ServerProcess,
    calls,
    finish,
    ops_past,
    poll,
    run_in_background,
    run_past_vector_20,
    wait_until,
)
from tests.fault_proxy import FaultProxy

#: The seed of the issue's reports (its properties item failed on a crowded server).
SEED = "1951074537"
#: A few vectors of one area: enough to see vectors pass under a fault, cheap at 40 ms RTT.
SOME_VECTORS = "key-naming"
#: The properties item's test id, for `-k`.
PROPERTIES = "properties"
#: What exit 3's one stderr line starts with.
INFRA_LINE = "bullmq-conformance: infrastructure error: "
#: Longer than the run's 5 s socket timeout: a run that waits on the dead link shows it.
BLACKHOLE_S = 12.0


@pytest.fixture
def proxy(server: ServerProcess) -> Iterator[FaultProxy]:
    """A fault proxy in front of the test's own server."""
    with FaultProxy(server.port) as running:
        yield running


def run_on(url: str, report: Path, *args: str) -> subprocess.Popen[str]:
    """`run -q --redis url:URL --seed SEED --report-json REPORT ARGS` in the background."""
    return run_in_background("-q", "--redis", f"url:{url}", "--seed", SEED,
                             "--report-json", str(report), *args)


def run_keys(client: redis.Redis) -> list[str]:
    """Every key of a run on the test's own server (a few: its keyspace is the run's)."""
    return sorted(client.scan_iter(match="*bmqc-*", count=1000))


def describe(ended: Ended, seconds: float | None = None) -> str:
    """The facts of a run's end, for an assertion message: exit, time, the header, the first
    lines of its failures, its tally and stderr."""
    lines = ended.out.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if line.startswith(("--- failed", "--- errored"))), None)
    failures = ["...", *lines[start:start + 24]] if start is not None else []
    shown = [*lines[:4], *failures, "...", *lines[-2:]]
    took = f" after {seconds:.1f} s" if seconds is not None else ""
    return (f"exit {ended.code}{took}\n--- stdout:\n" + "\n".join(shown)
            + "\n--- stderr:\n" + ended.err[-2500:])


def assert_true_verdict(ended: Ended, *, properties: bool, seconds: float | None = None) -> None:
    """Exit 0 with everything selected passed, or exit 3 with one line naming the fault; no
    failed or errored verdict, no traceback either way."""
    text = ended.out + ended.err
    facts = describe(ended, seconds)
    print(facts)  # shown with -rP: what the run did, passed or not
    assert "Traceback" not in text and "INTERNALERROR" not in text, facts
    assert ended.code in (0, 3), facts
    bad = ended.results("failed", "errored")
    assert not bad, f"{len(bad)} false verdict(s), e.g. {bad[:3]}\n{facts}"
    if ended.code == 0:
        assert ended.report is not None, facts
        ids = {row["id"]: row["outcome"] for row in ended.results()}
        assert any(outcome == "passed" for outcome in ids.values()), facts
        if properties:
            item = [outcome for name, outcome in ids.items() if name.startswith("properties/")]
            assert item and set(item) == {"passed"}, f"properties item: {item}\n{facts}"
    else:
        assert len(ended.stop_lines) == 1, facts
        assert ended.stop_lines[0].startswith(INFRA_LINE), facts


def assert_no_run_key(client: redis.Redis, timeout: float = 10.0) -> None:
    """No key of the run left (polled: bytes the run wrote before it ended may still be on
    their way through the proxy)."""
    poll(lambda: not run_keys(client), timeout, every=0.02)
    left = run_keys(client)
    assert not left, f"{len(left)} run key(s) left, e.g. {left[:6]}"


def finish_timed(run: subprocess.Popen[str], report: Path, started: float,
                 timeout: float = 120) -> tuple[Ended, float]:
    ended = finish(run, report, timeout=timeout)
    return ended, time.monotonic() - started


# ------------------------------------------------------------------------------- latency


@pytest.mark.slow
def test_20_ms_each_way(server: ServerProcess, proxy: FaultProxy, tmp_path: Path) -> None:
    """A link with 20 ms each way (a 40 ms round trip) is slow, not wrong: some vectors and
    the properties item (a handful of examples) all pass."""
    proxy.latency = 0.020
    report = tmp_path / "r.json"
    started = time.monotonic()
    run = run_on(proxy.url, report, "-k", f"{SOME_VECTORS} or {PROPERTIES}", "--examples", "4")
    ended, seconds = finish_timed(run, report, started, timeout=240)
    assert ended.code == 0, describe(ended, seconds)
    assert_true_verdict(ended, properties=True, seconds=seconds)
    assert_no_run_key(server.client())


# -------------------------------------------------------------------------------- resets


@pytest.mark.slow
def test_one_reset_of_every_connection_during_the_properties_item(
        server: ServerProcess, proxy: FaultProxy, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    watcher = server.client()
    started = time.monotonic()
    run = run_on(proxy.url, report, "-k", PROPERTIES, "--examples", "25")
    wait_until(ops_past(watcher, OPS_BEFORE_FAULT), run, "the properties item's ops")
    # Each connection is reset as its next reply comes: the command ran, its reply is lost,
    # and the run sees the reset mid-command (a reset between commands, redis-py would
    # quietly connect again and nothing would be tested).
    assert proxy.reset_all(when="next_reply") >= 1
    wait_until(lambda: proxy.resets >= 1, run, "a reset")
    ended, seconds = finish_timed(run, report, started)
    assert_true_verdict(ended, properties=True, seconds=seconds)
    assert_no_run_key(watcher)


@pytest.mark.slow
def test_a_5_s_blackhole_during_the_properties_item(
        server: ServerProcess, proxy: FaultProxy, tmp_path: Path) -> None:
    """The link holds every byte for 5 s, then lets them through: longer than redis-py 8's
    default 5 s socket timeout, well inside the suite's own wait for a reply."""
    report = tmp_path / "r.json"
    watcher = server.client()
    started = time.monotonic()
    run = run_on(proxy.url, report, "-k", PROPERTIES, "--examples", "25")
    wait_until(ops_past(watcher, OPS_BEFORE_FAULT), run, "the properties item's ops")
    back = proxy.blackhole(5.0, then="resume")
    ended, seconds = finish_timed(run, report, started)
    back.result(timeout=10)
    assert_true_verdict(ended, properties=True, seconds=seconds)
    assert ended.code == 0, ended.err
    assert_no_run_key(watcher)


@pytest.mark.slow
def test_a_reset_storm_under_two_workers(
        server: ServerProcess, proxy: FaultProxy, tmp_path: Path) -> None:
    """Every connection reset at its next reply, again every 200 ms for 3 s, while two
    workers run the properties item's shards (the issue's `-n 2 --examples 200`: 8
    failed)."""
    report = tmp_path / "r.json"
    watcher = server.client()
    started = time.monotonic()
    run = run_on(proxy.url, report, "-n", "2", "-k", PROPERTIES, "--examples", "50")
    wait_until(ops_past(watcher, OPS_BEFORE_FAULT), run, "the shards' first ops")
    storm = proxy.reset_storm(every=0.2, duration=3.0)
    ended, seconds = finish_timed(run, report, started, timeout=180)
    assert storm.result(10) >= 1 and proxy.resets >= 1
    assert_true_verdict(ended, properties=True, seconds=seconds)
    assert_no_run_key(watcher)


@pytest.mark.slow
def test_sigterm_while_the_link_is_blackholed(
        server: ServerProcess, proxy: FaultProxy, tmp_path: Path) -> None:
    """SIGTERM while every byte to and from Redis is held: exit 143 within 1 s (the run may
    not wait on the dead link), and once the link is back no run key is left. That is
    possible without waiting: what the run writes before it exits (a cleanup behind the op
    in flight, on the same connection) reaches the server when the link is back, as TCP
    delivers a closed socket's bytes. The issue's 10.3 s and 6 run keys left are defects;
    a warning that keys may be left, since the cleanup could not be confirmed, is not."""
    report = tmp_path / "r.json"
    watcher = server.client()
    run = run_on(proxy.url, report, "-k", PROPERTIES, "--examples", "400")
    wait_until(ops_past(watcher, OPS_BEFORE_FAULT), run, "the properties item's ops")
    link_back = proxy.blackhole(BLACKHOLE_S)
    wait_until(lambda: proxy.held() > 0, run, "the run to wait on the dead link")
    run.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    try:
        code = run.wait(30)
    finally:
        ended = finish(run, report)
    seconds = time.monotonic() - sent
    link_back.result(BLACKHOLE_S + 5)
    try:
        assert_no_run_key(watcher)
        left = ""
    except AssertionError as exc:
        left = f"\nonce the link was back: {exc}"
    print(describe(ended, seconds) + left)  # shown with -rP
    assert code == 143 and seconds < 1.0 and not left, describe(ended, seconds) + left
    assert "Traceback" not in ended.out + ended.err, describe(ended, seconds)
    # The cleanup could not be confirmed over the dead link: one warning that keys may be
    # left (with how to find them) is honest; anything else is not.
    assert ended.stop_lines == ["bullmq-conformance: stopped by SIGTERM"], describe(ended)


# ------------------------------------------------------------------ other clients' faults


@pytest.mark.slow
def test_a_7_s_client_pause_during_the_properties_item(
        server: ServerProcess, tmp_path: Path) -> None:
    """`CLIENT PAUSE 7000 ALL` from someone else: longer than a 5 s socket timeout. Waiting
    it out and passing, or exit 3 naming it, are both true; a failed item is not."""
    report = tmp_path / "r.json"
    watcher, admin = server.client(), server.client()
    started = time.monotonic()
    run = run_on(server.url, report, "-k", PROPERTIES, "--examples", "25")
    wait_until(ops_past(watcher, OPS_BEFORE_FAULT), run, "the properties item's ops")
    admin.execute_command("CLIENT", "PAUSE", "7000", "ALL")
    ended, seconds = finish_timed(run, report, started)
    assert_true_verdict(ended, properties=True, seconds=seconds)
    assert_no_run_key(watcher)


@pytest.mark.slow
def test_someone_elses_flushall_during_the_vectors(
        server: ServerProcess, tmp_path: Path) -> None:
    """Another client flushes the server (it kills no client) while vectors run: the vector
    in flight lost its keys to someone else, not to the candidate."""
    report = tmp_path / "r.json"
    run = run_past_vector_20(server, report, "--seed", SEED)
    started = time.monotonic()
    admin = server.client()
    flushes = _flush_until_ended(admin, run)
    ended, seconds = finish_timed(run, report, started)
    assert flushes >= 1
    assert_true_verdict(ended, properties=False, seconds=seconds)
    assert_no_run_key(admin)


@pytest.mark.slow
def test_someone_elses_flushall_during_the_properties_item(
        server: ServerProcess, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    watcher, admin = server.client(), server.client()
    started = time.monotonic()
    run = run_on(server.url, report, "-k", PROPERTIES, "--examples", "25")
    wait_until(ops_past(watcher, OPS_BEFORE_FAULT), run, "the properties item's ops")
    flushes = _flush_until_ended(admin, run)
    ended, seconds = finish_timed(run, report, started)
    assert flushes >= 1
    assert_true_verdict(ended, properties=True, seconds=seconds)
    assert_no_run_key(watcher)


def _flush_until_ended(admin: redis.Redis, run: subprocess.Popen[str],
                       every: float = 0.05, limit: int = 20) -> int:
    """`FLUSHALL` every `every` s (at most `limit` times, so a run that waits it out can
    still finish) until the run ends; how many were sent."""
    sent = 0
    while run.poll() is None and sent < limit:
        admin.flushall()
        sent += 1
        time.sleep(every)  # a pace, not a wait for anything
    return sent


# ------------------------------------------------------------------- a crowded url: server


@pytest.mark.slow
def test_200000_foreign_keys_default_run_sends_no_scan(tmp_path: Path) -> None:
    """The issue's crowded server: the default run (properties item included) with its seed
    passes, and finds keys without a single `SCAN` of the keyspace (it cost 12 s at 200,000
    keys, and did not finish in 8 minutes at 1,000,000)."""
    crowded = ServerProcess(("--enable-debug-command", "local")).start()
    try:
        admin = crowded.client()
        admin.execute_command("DEBUG", "POPULATE", "200000", "foreign")
        assert admin.dbsize() == 200_000
        admin.config_resetstat()
        report = tmp_path / "r.json"
        started = time.monotonic()
        run = run_on(crowded.url, report)
        ended, seconds = finish_timed(run, report, started, timeout=240)
        assert_true_verdict(ended, properties=True, seconds=seconds)
        assert ended.code == 0, describe(ended, seconds)
        assert calls(admin, "scan") == 0, f"{calls(admin, 'scan')} SCAN calls"
        assert admin.dbsize() == 200_000  # only the foreign keys, untouched in number
    finally:
        crowded.stop()
