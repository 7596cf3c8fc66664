"""A script that never ends: the candidate's own is the candidate's fault (its vector errored,
the script killed, the run goes on), and one that has written, so cannot be killed, stops the
run (exit 3). Someone else's is the server's (exit 3, the candidate not blamed):
`test_fault_matrix.py`.

Every script call has a limit (`--adapter-timeout`), kept above the server's busy threshold:
then a call of ours with no reply at all is our own script still running, while someone else's
script makes Redis answer BUSY (README: "Fault matrix").
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import redis

from conformance.core.resources import lua_dir, vectors_dir
from conformance.vectors import iter_vectors, load_dir
from reference_impl.ops import Promote
from tests.fault_helpers import (
    Ended,
    ServerProcess,
    finish,
    local_spec,
    run_in_background,
)

pytestmark = pytest.mark.slow

#: Vectors of the pause area at the current protocol; 3 of them call promote (checked below).
SELECTION = ("-k", "pause and not promote-job and not promote-range and not key-naming")
RUNAWAY = ("promote-9.lua still ran after {limit} s; the suite killed it with SCRIPT KILL (a "
           "script that never ends is a defect of the candidate)")


def scripts_with_promote(tmp_path: Path, body: str) -> Path:
    """Our Lua, with promote-9.lua replaced by `body`."""
    lua = tmp_path / "lua"
    shutil.copytree(lua_dir(), lua)
    (lua / "promote-9.lua").write_text(body)
    return lua


def calls_promote() -> set[str]:
    """The ids of every vector with a promote op."""
    return {v.id for v in iter_vectors(load_dir(vectors_dir()))
            if any(isinstance(op, Promote) for op in v.when)}


def timed_run(*args: str, report: Path) -> tuple[Ended, float]:
    started = time.monotonic()
    ended = finish(run_in_background("-q", "--examples", "0", *SELECTION, "--report-json",
                                     str(report), *args), report)
    return ended, time.monotonic() - started


def assert_only_promote_errored(ended: Ended, reference: Ended, limit: int) -> None:
    """Exit 1; the vectors calling promote errored with the reason, every other one has the
    reference's verdict."""
    assert ended.code == 1, ended.out[-2000:] + ended.err
    assert ended.err == "" and "Traceback" not in ended.out
    passed = {r["id"] for r in reference.results("passed")}
    runaway = passed & calls_promote()
    assert runaway and passed - runaway, "the selection calls promote in some vectors only"
    errored = ended.results("errored")
    assert {r["id"] for r in errored} == runaway
    wanted = f"candidate error in promote: {RUNAWAY.format(limit=limit)}"
    assert all(r["message"] == wanted for r in errored), errored[0]["message"]
    assert {r["id"] for r in ended.results("passed")} == passed - runaway
    assert not ended.results("failed")


@pytest.fixture
def reference(tmp_path: Path) -> Ended:
    """The selection run on our Lua: every vector passes."""
    report = tmp_path / "reference.json"
    ended, _ = timed_run("--redis", local_spec(), report=report)
    assert ended.code == 0, ended.out[-2000:] + ended.err
    return ended


def test_the_candidates_runaway_script_on_a_server_the_suite_started(
        tmp_path: Path, reference: Ended) -> None:
    """In a batch (the pipelined path): the script is killed, the batch's vectors run again
    one by one, and only those calling promote error. The suite's server keeps Redis's
    default threshold (5 s), so the limit is 6 s."""
    lua = scripts_with_promote(tmp_path, "while true do end\n")
    ended, seconds = timed_run("--redis", local_spec(), "--candidate", f"scripts:{lua}",
                               "--adapter-timeout", "6", report=tmp_path / "r.json")
    assert_only_promote_errored(ended, reference, 6)
    # The batch's wait, then each runaway call once more on its own; the others are fast.
    runaways = len(ended.results("errored"))
    assert seconds < 6 * (runaways + 1) + 5 * runaways + 10, seconds


def test_the_candidates_runaway_script_on_a_url_server(tmp_path: Path,
                                                       reference: Ended) -> None:
    """On a server not the suite's, the script is still ours to kill: the vector errors, the
    run goes on, and no key of the run is left."""
    server = ServerProcess(("--busy-reply-threshold", "1000")).start()
    try:
        lua = scripts_with_promote(tmp_path, "while true do end\n")
        ended, seconds = timed_run("--redis", f"url:{server.url}", "--candidate",
                                   f"scripts:{lua}", "--adapter-timeout", "2",
                                   report=tmp_path / "r.json")
        left = list(server.client().scan_iter(match="*bmqc-*", count=1000))
        busy = server.client().ping()
    finally:
        server.stop()
    assert_only_promote_errored(ended, reference, 2)
    assert left == [] and busy
    runaways = len(ended.results("errored"))
    assert seconds < 2 * runaways + 10, seconds


@pytest.mark.parametrize("where", ["local", "url"])
def test_a_runaway_script_that_has_written_stops_the_run(tmp_path: Path, where: str) -> None:
    """SCRIPT KILL answers UNKILLABLE: the run stops with exit 3 and says so; the suite shuts
    its own server down (SHUTDOWN NOSAVE), never a `url:` one."""
    lua = scripts_with_promote(tmp_path, "redis.call('SET', KEYS[1] .. ':x', '1')\n"
                                         "while true do end\n")
    server = ServerProcess(("--busy-reply-threshold", "1000")).start()
    try:
        redis_spec = local_spec() if where == "local" else f"url:{server.url}"
        limit = "6" if where == "local" else "2"
        ended, _ = timed_run("--redis", redis_spec, "--candidate", f"scripts:{lua}",
                             "--adapter-timeout", limit, report=tmp_path / "r.json")
        if where == "url":
            with pytest.raises(redis.ResponseError, match="BUSY"):
                server.client().ping()  # still running: not ours to shut down
    finally:
        server.stop()
    assert ended.code == 3, ended.out[-2000:] + ended.err
    [line] = ended.stop_lines
    assert line.startswith("bullmq-conformance: infrastructure error: a script of the "
                           "candidate's cannot be killed: "), line
    assert f" still ran after {limit} s, and SCRIPT KILL answered UNKILLABLE" in line
    if where == "local":
        # In a batch, Redis holds back every reply of the connection whose script runs: the
        # line names the scripts whose replies were not read, promote among them.
        assert "promote-9.lua" in line.split(" still ran after ")[0], line
        assert line.endswith("the suite shut its server down (SHUTDOWN NOSAVE)")
    else:
        assert f"cannot be killed: promote-9.lua still ran after {limit} s" in line
        assert "not the suite's to shut down" in line
    assert "Traceback" not in ended.out + ended.err


