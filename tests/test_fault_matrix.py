"""The fault matrix, Redis half: whatever happens to the server, the run ends with exit 3 and one
line on stderr, and no vector is failed or errored because of it (README: "Fault matrix").

Each test starts a redis-server of its own, so that it may kill, restart or misconfigure it.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest
import redis

from conformance.core.resources import lua_dir
from tests.fault_helpers import (
    FAULTY_ADAPTER,
    OPS_BEFORE_FAULT,
    Ended,
    ServerProcess,
    descendants,
    finish,
    has_keys,
    kill_script,
    local_spec,
    ops_past,
    run_in_background,
    run_past_vector_20,
    survivors,
    wait_until,
)

pytestmark = pytest.mark.slow



def assert_infrastructure_error(ended: Ended, *wording: str) -> None:
    """Exit 3, one stderr line naming the cause, no traceback, no verdict against the
    candidate. Before it, at most the warning that the final sweep could not delete the run's
    keys (a server left busy or read-only refuses the deletes: true, and worth saying)."""
    assert ended.code == 3, ended.out[-2000:] + ended.err
    lines = ended.stop_lines
    assert len(lines) == 1, ended.err
    line = lines[0]
    assert line.startswith("bullmq-conformance: infrastructure error: "), line
    assert any(word in line for word in wording), line
    assert (ended.out + ended.err).count(line.split(": ", 2)[2]) == 1, "printed once"
    assert "Traceback" not in ended.out + ended.err
    assert "INTERNALERROR" not in ended.out + ended.err
    assert not ended.results("failed", "errored"), ended.results("failed", "errored")[:3]


def test_killed_during_properties(server: ServerProcess, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    run = run_in_background("-q", "--redis", f"url:{server.url}", "-k", "properties",
                            "--examples", "400", "--report-json", str(report))
    # Well inside the examples, not at their first op.
    wait_until(ops_past(server.client(), OPS_BEFORE_FAULT), run, "the properties item's ops")
    server.kill()
    assert_infrastructure_error(finish(run, report), "Redis connection lost")


def test_killed_with_two_workers(server: ServerProcess, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    run = run_past_vector_20(server, report, "-n", "2", workers=True)
    workers = descendants(run.pid)
    server.kill()
    ended = finish(run, report)
    assert_infrastructure_error(ended, "Redis connection lost")
    assert ended.results("passed"), "vectors ran before the kill"
    assert len(workers) >= 2 and not survivors(workers), "an xdist worker outlived the run"


def test_restarted_mid_run(server: ServerProcess, tmp_path: Path) -> None:
    """Killed and started again on the same port: redis-py reconnects by itself, so only the
    server's run_id (or a lost connection) tells that the vector in flight lost its keys."""
    report = tmp_path / "r.json"
    run = run_past_vector_20(server, report)
    server.kill()
    server.start()
    assert_infrastructure_error(finish(run, report), "restarted", "connection lost",
                                "dropped")


def test_flushed_and_clients_killed_mid_run(server: ServerProcess, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    run = run_past_vector_20(server, report)
    admin = server.client()
    # Both at once, over and over, so that some vector is surely in flight.
    while run.poll() is None:
        pipe = admin.pipeline(transaction=True)
        pipe.flushall()
        pipe.client_kill_filter(_type="normal", skipme=True)
        pipe.execute()
        time.sleep(0.01)  # a pace of the faults, not a wait for anything
    # Whichever the run notices first: its connection dropped, or (by the key tracker) a
    # flush during a vector and again during its second try.
    assert_infrastructure_error(finish(run, report), "dropped", "connection lost",
                                "someone else flushed the server")


def test_a_read_only_replica_is_refused_before_the_first_vector(
        server: ServerProcess, tmp_path: Path) -> None:
    replica = ServerProcess(("--replicaof", "127.0.0.1", str(server.port))).start()
    try:
        report = tmp_path / "r.json"
        ended = finish(run_in_background("-q", "--redis", f"url:{replica.url}", "--examples",
                                         "0", "--report-json", str(report)), report)
    finally:
        replica.stop()
    assert_infrastructure_error(ended, "read-only replica")
    assert "before the first vector" in ended.err


def test_out_of_memory_mid_run(server: ServerProcess, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    run = run_past_vector_20(server, report)
    admin = server.client()
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", "1")
    ended = finish(run, report)
    assert_infrastructure_error(ended, "out of memory")
    assert ended.results("passed"), "vectors ran before memory ran out"
    # Deletes are allowed at maxmemory: the run cleaned up after itself.
    assert list(admin.scan_iter(match="*bmqc-*", count=1000)) == []


def test_an_acl_user_without_evalsha_is_refused(server: ServerProcess, tmp_path: Path) -> None:
    server.client().acl_setuser("limited", enabled=True, passwords=["+secret"], keys=["*"],
                                channels=["*"], commands=["+@all", "-evalsha"])
    url = f"redis://limited:secret@127.0.0.1:{server.port}/0"
    report = tmp_path / "r.json"
    ended = finish(run_in_background("-q", "--redis", f"url:{url}", "--examples", "0",
                                     "--report-json", str(report)), report)
    assert_infrastructure_error(ended, "lacks a permission")


def test_a_busy_script_mid_run(tmp_path: Path) -> None:
    """Another client's endless script on a `url:` server: exit 3, and the line says the
    script is neither the suite's nor the candidate's."""
    server = ServerProcess(("--busy-reply-threshold", "50")).start()
    try:
        report = tmp_path / "r.json"
        run = run_past_vector_20(server, report)
        # A script that loops until it is killed, from another client.
        looping = threading.Thread(target=_loop_script, args=(server,), daemon=True)
        looping.start()
        ended = finish(run, report)
        kill_script(server)
        looping.join(timeout=10)
    finally:
        server.stop()
    assert_infrastructure_error(ended, "busy running a script that is not the suite's or the "
                                       "candidate's")


def _loop_script(server: ServerProcess) -> None:
    with contextlib.suppress(redis.RedisError):  # killed by SCRIPT KILL
        server.client().eval("while true do end", 0)



def test_script_flush_mid_run_is_survived(server: ServerProcess, tmp_path: Path) -> None:
    """NOSCRIPT after a SCRIPT FLUSH is not a fault: the scripts are loaded again, and every
    vector still passes."""
    report = tmp_path / "r.json"
    run = run_in_background("-q", "--redis", f"url:{server.url}", "--examples", "0",
                            "--report-json", str(report))
    admin = server.client()
    wait_until(has_keys(admin, "*bmqc-*"), run, "the first vectors")
    flushes = 0
    while run.poll() is None:
        admin.script_flush()
        flushes += 1
        time.sleep(0.005)  # a pace of the flushes, not a wait for anything
    ended = finish(run, report)
    assert ended.code == 0, ended.out[-2000:] + ended.err
    assert flushes > 10
    assert not ended.results("failed", "errored")
    assert len(ended.results("passed")) > 250
    assert list(admin.scan_iter(match="*bmqc-*", count=1000)) == []


def test_an_adapter_on_a_replica_is_not_blamed(server: ServerProcess, tmp_path: Path) -> None:
    """A server that turns read-only mid-run (a failover) errors the adapter's writes; that is
    the server's fault, found by the probe after the first errored vector."""
    report = tmp_path / "r.json"
    adapter = Path(__file__).parent.parent / "examples" / "textbook" / "adapter.py"
    run = run_past_vector_20(server, report, "--expect",
                             str(adapter.parent / "expectations.yaml"),
                             "--candidate", f"command:{sys.executable} {adapter}")
    admin = server.client()
    other = ServerProcess().start()
    try:
        admin.replicaof("127.0.0.1", str(other.port))
        ended = finish(run, report)
    finally:
        admin.replicaof("NO", "ONE")
        other.stop()
    assert_infrastructure_error(ended, "read-only replica", "connection lost")


def test_a_user_without_admin_commands_is_no_fault(server: ServerProcess, tmp_path: Path) -> None:
    """The probe asks CLIENT LIST only to tell a dropped connection; a user denied it (as on
    many shared servers) still gets true verdicts: the reference passes, the textbook fails."""
    server.client().acl_setuser("shared", enabled=True, passwords=["+pw"], keys=["*"],
                                channels=["*"], commands=["+@all", "-@admin"])
    url = f"url:redis://shared:pw@127.0.0.1:{server.port}/0"
    adapter = Path(__file__).parent.parent / "examples" / "textbook" / "adapter.py"
    passing = finish(run_in_background("-q", "--redis", url, "--examples", "0"))
    assert passing.code == 0, passing.out[-2000:] + passing.err
    report = tmp_path / "r.json"
    failing = finish(run_in_background("-q", "--redis", url, "--examples", "0", "--candidate",
                                       f"command:{sys.executable} {adapter}", "--report-json",
                                       str(report)), report)
    assert failing.code == 1, failing.out[-2000:] + failing.err
    assert failing.err == ""
    assert len(failing.results("failed")) > 150


# --- the candidate's own faults stay the candidate's --------------------------------------------


def test_a_reply_that_is_not_utf8_is_the_candidates(server: ServerProcess, tmp_path: Path) -> None:
    """redis-py closes its connection on a reply it cannot decode; the probe must not take that
    for a dropped connection (exit 3). The vectors calling the script are errored, in a line."""
    lua = tmp_path / "lua"
    shutil.copytree(lua_dir(), lua)
    script = lua / "promote-9.lua"
    script.write_text("do return string.char(255) end\n" + script.read_text())
    report = tmp_path / "r.json"
    ended = finish(run_in_background("-q", "--redis", f"url:{server.url}", "--examples", "0",
                                     "--candidate", f"scripts:{lua}", "--report-json",
                                     str(report)), report)
    assert ended.code == 1, ended.out[-2000:] + ended.err
    assert "Traceback" not in ended.out + ended.err and ended.err == ""
    errored = ended.results("errored")
    assert errored and all("not UTF-8" in r["message"] and "\\xff" in r["message"]
                           for r in errored)
    assert all(r["message"].startswith("candidate error in promote: its reply holds bytes that "
                                       "are not UTF-8: b'\\xff'") for r in errored), errored[0]


def _runaway() -> list[str]:
    return ["--candidate", f"command:{sys.executable} {FAULTY_ADAPTER} runaway",
            "--adapter-timeout", "1", "--examples", "0", "-k", "promote-job/legacy-marker-dropped"]


def test_a_runaway_script_is_killed_on_a_server_the_suite_started(tmp_path: Path) -> None:
    """The candidate's script never ends: its vector is errored (exit 1), the suite kills the
    script on its own server, and says so."""
    report = tmp_path / "r.json"
    ended = finish(run_in_background("-q", "--redis", local_spec(), *_runaway(), "--report-json",
                                     str(report)), report)
    assert ended.code == 1, ended.out[-2000:] + ended.err
    [result] = ended.results("errored")
    assert "sent no reply within 1 s" in result["message"]
    assert "killed it with SCRIPT KILL" in result["message"]


def test_a_runaway_script_on_a_url_server_names_both_causes(tmp_path: Path) -> None:
    """On a server the suite does not own, an adapter that timed out while the server is busy
    may be waiting on its own script or on someone else's: the run stops (exit 3) and says
    both, killing neither."""
    server = ServerProcess(("--busy-reply-threshold", "100")).start()
    try:
        ended = finish(run_in_background("-q", "--redis", f"url:{server.url}", *_runaway()))
        kill_script(server)
    finally:
        server.stop()
    assert_infrastructure_error(ended, "busy running a script")
    assert "a script that is either the candidate's own" in ended.err
    assert "or someone else's" in ended.err
