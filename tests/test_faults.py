"""Faults are named for what they are: a broken candidate makes the vectors that need the broken
part *errored* (the run goes on, exit 1); a Redis that dies mid-run is an infrastructure error
(exit 3, one line), and no vector is reported failed because of it."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from conformance.core.resources import lua_dir
from conformance.vectors import Vector
from reference_impl.ops import ChangeDelay, ChangePriority, Op, Promote
from tests.cli_helpers import cli
from tests.fault_helpers import FAULTY_ADAPTER, ServerProcess, finish, run_past_vector_20

LUA_DIR = lua_dir()


def _syntax_error(lua: Path) -> None:
    path = lua / "changeDelay-4.lua"
    path.write_text(path.read_text() + "\nlocal x = = 1\n")


def _raises(lua: Path) -> None:
    path = lua / "promote-9.lua"
    path.write_text('error("planted failure")\n' + path.read_text())


def _wrong_key_count(lua: Path) -> None:
    # 5 KEYS: no release's changePriority (6 KEYS is an older release's, and is called as one).
    (lua / "changePriority-7.lua").rename(lua / "changePriority-5.lua")


@pytest.mark.parametrize(
    ("breakage", "op", "cause"),
    [
        (_syntax_error, ChangeDelay, "changeDelay-4.lua raised: Error compiling script"),
        (_raises, Promote, "promote-9.lua raised: user_script:1: planted failure"),
        (_wrong_key_count, ChangePriority,
         "missing script changePriority-7.lua in {lua}; found changePriority-5.lua, but "
         "the suite calls changePriority with 6 or 7 KEYS only"),
    ],
    ids=["lua-syntax-error", "raises-at-runtime", "wrong-keys-count"],
)
def test_a_broken_script_errors_exactly_the_vectors_that_call_it(
        tmp_path: Path, redis_url: str, all_vectors: list[Vector],
        profile_skips: Callable[[str], set[str]], breakage: Callable[[Path], None],
        op: type[Op], cause: str) -> None:
    lua = tmp_path / "lua"
    shutil.copytree(LUA_DIR, lua)
    breakage(lua)
    report = tmp_path / "r.json"
    proc = cli("run", "-q", "--redis", redis_url, "--examples", "0", "--candidate",
               f"scripts:{lua}", "--report-json", str(report))
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    results = json.loads(report.read_text())["results"]
    errored = {r["id"] for r in results if r["outcome"] == "errored"}
    calling = {v.id for v in all_vectors if any(isinstance(o, op) for o in v.when)}
    assert errored == calling - profile_skips("bullmq")
    assert all(cause.format(lua=lua) in r["message"] for r in results if r["id"] in errored)
    # The run went on: everything else still passed.
    assert {r["outcome"] for r in results if r["id"] not in errored} <= {"passed", "skipped"}


def test_a_crashing_adapter_leaves_no_keys_on_a_shared_server(redis_server: object,
                                                              tmp_path: Path) -> None:
    url = f"{redis_server.url.rsplit('/', 1)[0]}/11"  # type: ignore[attr-defined]
    client = redis.Redis.from_url(url, decode_responses=True)
    client.set("someone-else", "kept")
    try:
        # Vectors that seed keys before the first op, which then kills the adapter.
        proc = cli("run", "-q", "--redis", f"url:{url}", "--examples", "0", "-k",
                   "pause/legacy-rename or promote-job/legacy-zero-marker-dropped",
                   "--adapter-timeout", "2", "--candidate",
                   f"command:{sys.executable} {FAULTY_ADAPTER} crash")
        assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
        assert sorted(client.scan_iter(match="*", count=1000)) == ["someone-else"]
        assert client.get("someone-else") == "kept"
    finally:
        client.delete("someone-else")
        client.close()


# --- Redis dies mid-run -------------------------------------------------------------------------


def test_redis_killed_mid_run_is_an_infrastructure_error(server: ServerProcess,
                                                         tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    # Killed once the 20th vector's queue exists, so that some vectors ran before.
    run = run_past_vector_20(server, report)
    server.kill()
    ended = finish(run, report)
    assert ended.code == 3, ended.out[-2000:] + ended.err
    assert len(ended.err_lines) == 1 and ended.err_lines[0].startswith(
        "bullmq-conformance: infrastructure error: Redis connection lost"), ended.err
    assert "Traceback" not in ended.out + ended.err
    assert ended.report is not None, "the run wrote its report"
    assert ended.results(), "some vectors ran before the kill"
    assert not ended.results("failed", "errored"), ended.results()[-3:]
