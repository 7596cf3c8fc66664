"""conformance.checks.concurrency: exactly-once claims and claim order under concurrency."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import redis

from conformance import servers
from conformance.candidates.base import Candidate
from conformance.checks.concurrency import (
    Claim,
    Verdict,
    check_order,
    run_concurrency,
    textbook_claims,
)
from conformance.cli import main
from conformance.core.queues import QueueRef
from conformance.core.resources import lua_dir
from reference_impl.keys import BULLMQ, ECHOMQ
from reference_impl.ops import MoveToActive, Op, Result
from tests.scripts_helpers import WrappedScripts, replace_once

LUA_DIR = lua_dir()

FETCH = LUA_DIR / "includes" / "fetchNextJob.lua"
POP = 'local jobId = rcall("RPOPLPUSH", waitKey, activeKey)'


def leftover(info: servers.ServerInfo, pattern: str) -> list[str]:
    client = servers.client_for(info)
    try:
        return list(client.scan_iter(match=pattern, count=1000))
    finally:
        client.close()


def lua_copy(tmp_path: Path, replacement: str) -> Path:
    """A copy of lua/ whose plain-job fetch line is replaced."""
    target = tmp_path / "lua"
    shutil.copytree(LUA_DIR, target)
    replace_once(target / "includes" / "fetchNextJob.lua", POP, replacement)
    return target


def test_reference_is_exactly_once_and_fifo(redis_server: servers.ServerInfo) -> None:
    verdict = run_concurrency("reference", redis_server.url, BULLMQ, workers=8, jobs=2000)
    assert verdict.ok, verdict.summary()
    assert len(verdict.order) == 2000 == len(set(verdict.added))
    assert {c.worker for c in verdict.order} == set(range(8)), "every fetcher claimed some"
    assert set(verdict.order_violations) >= {"plain FIFO", "tier 1 FIFO", "tier 2 FIFO",
                                             "tier 5 FIFO", "tier 1 after earlier classes"}
    assert verdict.claims_per_second > 0
    assert leftover(redis_server, "*bmqc-conc-*") == []


def test_reference_under_echomq_profile(redis_server: servers.ServerInfo) -> None:
    verdict = run_concurrency("reference", redis_server.url, ECHOMQ, workers=4, jobs=400,
                              seed=7)
    assert verdict.ok, verdict.summary()


def test_fetch_that_leaves_the_job_in_wait_duplicates(redis_server: servers.ServerInfo,
                                                      tmp_path: Path) -> None:
    broken = lua_copy(tmp_path, 'local jobId = rcall("LINDEX", waitKey, -1)\n'
                                '  if jobId then rcall("LPUSH", activeKey, jobId) end')
    verdict = run_concurrency(f"scripts:{broken}", redis_server.url, BULLMQ, workers=8,
                              jobs=300)
    assert not verdict.ok
    assert verdict.duplicated and verdict.lost, verdict.summary()
    assert any("claim cap" in e for e in verdict.errors)
    assert leftover(redis_server, "*bmqc-conc-*") == []


def test_lifo_fetch_is_exactly_once_but_out_of_order(redis_server: servers.ServerInfo,
                                                     tmp_path: Path) -> None:
    lifo = lua_copy(tmp_path, 'local jobId = rcall("LPOP", waitKey)\n'
                              '  if jobId then rcall("LPUSH", activeKey, jobId) end')
    verdict = run_concurrency(f"scripts:{lifo}", redis_server.url, BULLMQ, workers=8,
                              jobs=500)
    assert not verdict.lost and not verdict.duplicated and not verdict.errors
    assert len(verdict.order_violations["plain FIFO"]) > 10, verdict.summary()
    assert not verdict.order_violations["tier 1 FIFO"], verdict.summary()


class ReplaysAClaim(WrappedScripts):
    """A wrapper candidate that hands the previous job out again after every 50th claim."""

    def __init__(self) -> None:
        super().__init__(LUA_DIR, label="replays-a-claim")
        self.claimed = 0
        self.last: Result | None = None

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        if isinstance(op, MoveToActive) and self.claimed and self.claimed % 50 == 0 \
                and self.last is not None:
            self.claimed += 1
            return self.last
        reply = super().apply(client, queue, op)
        if isinstance(op, MoveToActive) and isinstance(reply, dict) and reply["job"]:
            self.claimed += 1
            self.last = reply
        return reply


def test_a_candidate_returning_a_job_twice_is_caught(redis_server: servers.ServerInfo) -> None:
    assert isinstance(ReplaysAClaim(), Candidate)
    verdict = run_concurrency(ReplaysAClaim, redis_server.url, BULLMQ, workers=8, jobs=1000)
    assert not verdict.ok
    assert verdict.duplicated and not verdict.lost and not verdict.unknown, verdict.summary()
    assert sum(verdict.duplicated.values()) - len(verdict.duplicated) == verdict.violations


def claim(job: str, sent: int, returned: int) -> Claim:
    return Claim(job, 0, sent, returned, 0)


def test_order_check_counts_only_certain_inversions() -> None:
    # b's call overlapped a's: it may have run first in Redis, so it is only ambiguous.
    overlapping = Verdict("x", 2, ["a", "b"], [claim("b", 2, 3), claim("a", 1, 4)], 1.0)
    check_order(overlapping, [("plain", ["a", "b"])])
    assert overlapping.order_violations == {"plain FIFO": []} and overlapping.ambiguous == 1
    # b's call returned before a's was sent: certainly out of order.
    disjoint = Verdict("x", 1, ["a", "b"], [claim("b", 1, 2), claim("a", 3, 4)], 1.0)
    check_order(disjoint, [("plain", ["a", "b"]), ("tier 1", ["c"])])
    assert disjoint.order_violations["plain FIFO"] == ["b"] and disjoint.violations == 1
    # A later class claimed before an earlier class was fetched.
    cross = Verdict("x", 1, ["a", "c"], [claim("c", 1, 2), claim("a", 3, 4)], 1.0)
    check_order(cross, [("plain", ["a"]), ("tier 1", ["c"])])
    assert cross.order_violations["tier 1 after earlier classes"] == ["c"]


def test_textbook_race_respecting_zrem_is_exactly_once(
        redis_server: servers.ServerInfo) -> None:
    verdict = textbook_claims(redis_server.url, workers=8, jobs=2000)
    assert verdict.ok, verdict.summary()
    assert len(verdict.order) == 2000
    assert leftover(redis_server, "bmqc-textbook-*") == []


def test_textbook_race_ignoring_zrem_duplicates(redis_server: servers.ServerInfo) -> None:
    verdict = textbook_claims(redis_server.url, workers=8, jobs=1000, respect_reply=False)
    assert not verdict.ok
    assert verdict.duplicated and not verdict.lost, verdict.summary()
    assert leftover(redis_server, "bmqc-textbook-*") == []


@pytest.mark.parametrize("extra", [[], ["--textbook"]])
def test_cli(redis_url: str, extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["concurrency", "--redis", redis_url, "--workers", "4", "--jobs", "300",
                 "--seed", "3", *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "300 jobs, 4 workers" in out and "0 violations" in out and "claims/s" in out


def test_cli_exits_1_on_violations(redis_url: str, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    broken = lua_copy(tmp_path, 'local jobId = rcall("LINDEX", waitKey, -1)\n'
                                '  if jobId then rcall("LPUSH", activeKey, jobId) end')
    code = main(["concurrency", "--redis", redis_url, "--jobs", "100",
                 "--candidate", f"scripts:{broken}"])
    assert code == 1
    assert "duplicated" in capsys.readouterr().out


def test_cli_rejects_zero_workers(redis_url: str) -> None:
    assert main(["concurrency", "--redis", redis_url, "--workers", "0"]) == 2


def test_bullmq_py_is_refused(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["concurrency", "--redis", redis_url, "--candidate", "bullmq-py"]) == 2
    assert "concurrent threads" in capsys.readouterr().err
