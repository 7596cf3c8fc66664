"""conformance.checks.crash: workers killed or frozen mid-job, jobs recovered by the stall
check, every job completed exactly once, and the negative controls that must be caught."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import redis

from conformance import servers
from conformance.candidates.base import Candidate
from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.checks.crash import plan_dooms, run_crash
from conformance.checks.crash_verdict import (
    CrashVerdict,
    Events,
    Finish,
    FlowOutcome,
    LockSet,
    Outcome,
    StallPass,
    StreamEvent,
    flow_value,
    judge,
    judge_flows,
)
from conformance.cli import main
from conformance.core.errors import UsageError
from conformance.core.queues import QueueRef
from conformance.core.resources import lua_dir, node_adapter_source
from conformance.state.snapshot import delete_queue
from reference_impl import versions
from reference_impl.keys import BULLMQ
from reference_impl.ops import Add, MoveToActive, Op, Result
from reference_impl.worker_ops import MoveStalledJobsToWait, MoveToFinished
from tests.scripts_helpers import WrappedScripts

#: The official 6.7.0 scripts the Node adapter installs (the PyPI package's lack the deferred
#: parent release, releaseParentIfNoPendingDependencies, that addFlow sends from 6.5.1).
NODE_SCRIPTS = node_adapter_source() / "node_modules" / "bullmq" / "dist" / "cjs" / "commands"


@pytest.fixture(scope="session")
def node_scripts() -> Path:
    """The bundled Node adapter's official scripts; skip when `npm ci` was not run."""
    if not (NODE_SCRIPTS / "addParentJob-6.lua").is_file():
        pytest.skip("needs `npm ci` in conformance/bundled/node-bullmq")
    return NODE_SCRIPTS


def leftover(info: servers.ServerInfo) -> list[str]:
    client = servers.client_for(info)
    try:
        return list(client.scan_iter(match="*bmqc-crash-*", count=1000))
    finally:
        client.close()


def mutated(official: Path, tmp_path: Path, script: str, old: str, new: str) -> Path:
    """A copy of the official scripts with one line of one script replaced."""
    target = tmp_path / "scripts"
    shutil.copytree(official, target)
    path = target / script
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {script}"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return target


def assert_clean(verdict: CrashVerdict, jobs: int) -> None:
    assert verdict.passed, verdict.report()
    assert not verdict.lost and not verdict.duplicated and not verdict.moved_under_lock
    assert verdict.successes == jobs == verdict.jobs
    assert verdict.recovered >= verdict.killed + verdict.frozen, verdict.report()
    # Each frozen worker's late finish is refused.
    assert sum(verdict.refusals.values()) >= verdict.frozen, verdict.report()


def test_official_scripts_recover_every_job(redis_server: servers.ServerInfo,
                                            official_scripts: Path) -> None:
    verdict = run_crash(f"scripts:{official_scripts}", redis_server.url, BULLMQ, workers=8,
                        jobs=150, kill=3, freeze=2, seed=1)
    assert_clean(verdict, 150)
    assert (verdict.killed, verdict.frozen) == (3, 2)
    assert verdict.recovered_from["killed"] == 3, verdict.report()
    assert verdict.recovered_from["frozen"] == 2, verdict.report()
    assert leftover(redis_server) == []


def test_reference_recovers_every_job(redis_server: servers.ServerInfo) -> None:
    verdict = run_crash("reference", redis_server.url, BULLMQ, workers=8, jobs=150, kill=3,
                        freeze=2, seed=2)
    assert_clean(verdict, 150)
    assert (verdict.killed, verdict.frozen) == (3, 2)
    assert verdict.recovered_from["killed"] == 3, verdict.report()
    assert verdict.recovered_from["frozen"] == 2, verdict.report()
    assert leftover(redis_server) == []


def test_official_scripts_release_every_parent_once(redis_server: servers.ServerInfo,
                                                    node_scripts: Path) -> None:
    verdict = run_crash(f"scripts:{node_scripts}", redis_server.url, BULLMQ, workers=6, jobs=20,
                        kill=3, freeze=2, seed=1, flows=True, children=3)
    assert_clean(verdict, 80)
    assert (verdict.parents, verdict.children, verdict.released_once) == (20, 3, 20)
    assert not (verdict.release_faults or verdict.completed_early or verdict.processed_faults)
    assert "flows: 20 parents x 3 children; released exactly once 20" in verdict.report()
    assert leftover(redis_server) == []


@pytest.mark.parametrize(("script", "old", "new", "caught"), [
    ("includes/updateParentDepsIfNeeded.lua",
     'rcall("HSET", processedSet, jobIdKey, returnvalue)', "local _ = 0", "processed_faults"),
    # The release's event loses its `prev` field.
    ("includes/moveParentToWait.lua", '"waiting", "jobId", parentId, "prev",',
     '"waiting", "jobId", parentId, "was",', "release_faults"),
], ids=["processed-not-recorded", "released-no-event"])
def test_a_broken_flow_is_caught(redis_server: servers.ServerInfo, node_scripts: Path,
                                 tmp_path: Path, script: str, old: str, new: str,
                                 caught: str) -> None:
    broken = mutated(node_scripts, tmp_path, script, old, new)
    verdict = run_crash(f"scripts:{broken}", redis_server.url, BULLMQ, workers=4, jobs=8,
                        kill=1, freeze=0, seed=6, flows=True, children=2)
    assert not verdict.passed
    # Every parent shows the defect; nothing else is wrong.
    assert len(getattr(verdict, caught)) >= 8, verdict.report()
    assert not verdict.lost and not verdict.unexpected, verdict.report()
    assert leftover(redis_server) == []


class IgnoresTheToken(WrappedScripts):
    """Negative control: finishes with token "0", which skips the lock check."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, label="finish-ignores-token")

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        if isinstance(op, MoveToFinished):
            op = dataclasses.replace(op, token="0")
        return super().apply(client, queue, op)


@pytest.mark.parametrize("scripts", ["official", "reference"])
def test_a_finish_that_ignores_the_lock_is_caught(redis_server: servers.ServerInfo,
                                                  official_scripts: Path, scripts: str) -> None:
    directory = official_scripts if scripts == "official" else lua_dir()
    assert isinstance(IgnoresTheToken(directory), Candidate)
    verdict = run_crash(lambda: IgnoresTheToken(directory), redis_server.url, BULLMQ,
                        workers=6, jobs=60, kill=1, freeze=3, seed=3)
    assert not verdict.passed
    # The frozen workers complete jobs other workers hold, who then get -3.
    assert verdict.finished_without_lock, verdict.report()
    assert any("after" in item and "fetched it" in item
               for item in verdict.finished_without_lock), verdict.report()
    assert verdict.unexpected and not verdict.lost, verdict.report()
    assert leftover(redis_server) == []


@pytest.mark.parametrize(("script", "old", "new"), [
    ("moveStalledJobsToWait-9.lua", 'if (rcall("EXISTS", jobKey .. ":lock") == 0) then',
     "if true then"),
    ("extendLock-2.lua", 'if rcall("SET", KEYS[1], ARGV[1], "PX", ARGV[2]) then', "if true then"),
], ids=["stall-check-ignores-locks", "extend-lock-does-not-renew"])
def test_moving_a_locked_job_is_caught(redis_server: servers.ServerInfo, official_scripts: Path,
                                       tmp_path: Path, script: str, old: str, new: str) -> None:
    broken = mutated(official_scripts, tmp_path, script, old, new)
    verdict = run_crash(f"scripts:{broken}", redis_server.url, BULLMQ, workers=6, jobs=60,
                        kill=0, freeze=0, seed=4)
    assert not verdict.passed
    assert verdict.moved_under_lock, verdict.report()
    assert "moved under a live lock" in verdict.report()


T = 100.0  # a monotonic origin for the synthetic events below (seconds)
D = 100  # lock ms


def run_of(locks: list[LockSet], finishes: list[Finish], passes: list[StallPass]) -> Events:
    return Events(tuple(locks), tuple(finishes), tuple(passes))


def verdict_of(events: Events, completed: set[str] | None = None) -> CrashVerdict:
    return judge("x", ["1"], events, Outcome(frozenset(completed or {"1"}), {"wait": 0}),
                 workers=1, killed=0, frozen=0, lock_ms=D, duration=1.0)


def test_a_move_is_counted_only_inside_a_certain_lock_lifetime() -> None:
    fetch = LockSet("1", "a", T, T + 0.01, fetch=True)
    inside = run_of([fetch], [], [StallPass(T + 0.02, T + 0.05, ("1",))])
    overlapping = run_of([fetch], [], [StallPass(T + 0.005, T + 0.03, ("1",))])
    after = run_of([fetch], [], [StallPass(T + 0.06, T + 0.098, ("1",))])
    late = run_of([fetch], [], [StallPass(T + 0.09, T + 0.12, ("1",))])
    assert len(verdict_of(inside).moved_under_lock) == 1
    for events in (overlapping, after, late):
        assert not verdict_of(events).moved_under_lock


def test_finishes_without_the_lock() -> None:
    mine = LockSet("1", "a", T, T + 0.01, fetch=True)
    theirs = LockSet("1", "b", T + 0.3, T + 0.31, fetch=True)
    took_over = run_of([mine, theirs], [Finish("1", "a", T + 0.32, T + 0.33, 0)], [])
    expired = run_of([mine], [Finish("1", "a", T + 0.2, T + 0.21, 0)], [])
    renewed = run_of([mine, LockSet("1", "a", T + 0.08, T + 0.09)],
                     [Finish("1", "a", T + 0.15, T + 0.16, 0)], [])
    stranger = run_of([mine], [Finish("1", "z", T + 0.02, T + 0.03, 0)], [])
    refused = run_of([mine, theirs], [Finish("1", "a", T + 0.32, T + 0.33, -6)], [])
    found = [verdict_of(e).finished_without_lock
             for e in (took_over, expired, renewed, stranger, refused)]
    assert "after b fetched it" in found[0][0]
    assert "after its lock expired" in found[1][0]
    assert found[2] == () and found[4] == ()
    assert "never fetched it" in found[3][0]


def test_verdict_counts_and_report() -> None:
    lock = LockSet("1", "a", T, T + 0.01, fetch=True)
    events = run_of([lock], [Finish("1", "a", T + 0.02, T + 0.03, 0),
                             Finish("1", "a", T + 0.04, T + 0.05, 0),
                             Finish("1", "b", T + 0.04, T + 0.05, -3)], [])
    verdict = judge("x", ["1", "2"], events, Outcome(frozenset({"1"}), {"wait": 1, "active": 0}),
                    workers=1, killed=0, frozen=0, lock_ms=D, duration=1.0)
    assert verdict.lost == ("2",) and verdict.duplicated == {"1": 2}
    assert len(verdict.unexpected) == 1 and verdict.left == {"wait": 1}
    assert verdict.violations == 4 and not verdict.passed
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.jobs = 3  # type: ignore[misc]
    text = verdict.report()
    assert "FAILED (4 violations)" in text and "lost: 2" in text and "left: wait 1" in text
    assert len(text.splitlines()) <= 24


def flow_run(*entries: tuple[str, str, str | None],
             processed: dict[str, dict[str, str]] | None = None) -> FlowOutcome:
    """Parent p with children a and b; the stream holds the adds, then `entries`."""
    adds = tuple(StreamEvent("added", job) for job in ("p", "a", "b"))
    held = {"p": {c: flow_value(c) for c in ("a", "b")}} if processed is None else processed
    return FlowOutcome({"p": ("a", "b")}, adds + tuple(StreamEvent(*e) for e in entries), held)


RELEASE = ("waiting", "p", "waiting-children")
GOOD = (("completed", "a", "active"), ("completed", "b", "active"), RELEASE,
        ("active", "p", "waiting"), ("completed", "p", "active"))


def test_a_good_flow_passes() -> None:
    found = judge_flows(flow_run(*GOOD))
    assert found.released_once == 1
    assert not (found.release_faults or found.completed_early or found.processed_faults
                or found.errors)


def test_a_parent_released_twice_or_never_is_caught() -> None:
    twice = judge_flows(flow_run(*GOOD[:3], RELEASE, *GOOD[3:]))
    never = judge_flows(flow_run(*GOOD[:2], *GOOD[3:]))
    # A stall's return to wait (prev active) is no release.
    stalled = judge_flows(flow_run(*GOOD[:2], ("waiting", "p", "active"), *GOOD[3:]))
    assert twice.release_faults == ("parent p released 2 times",)
    assert never.release_faults == stalled.release_faults == ("parent p released 0 times",)
    assert twice.released_once == never.released_once == 0


def test_a_parent_completed_before_a_child_is_caught() -> None:
    early = judge_flows(flow_run(GOOD[0], RELEASE, *GOOD[3:], GOOD[1]))
    missing = judge_flows(flow_run(GOOD[0], RELEASE, *GOOD[3:]))
    assert early.completed_early == ("parent p completed before child b",)
    assert missing.completed_early == ("parent p completed before child b",)
    assert early.release_faults == ()


def test_processed_faults_are_caught() -> None:
    found = judge_flows(flow_run(*GOOD, processed={"p": {"a": '"done b"', "z": "1"}}))
    assert found.processed_faults == ('p:processed holds "done b" for a', "p:processed lacks b",
                                      "p:processed holds z (not a child)")


def test_a_trimmed_stream_is_an_error() -> None:
    outcome = flow_run(*GOOD)
    trimmed = dataclasses.replace(outcome, stream=outcome.stream[1:])
    assert "no `added` event" in judge_flows(trimmed).errors[0]


def test_flow_faults_count_as_violations_and_are_reported() -> None:
    lock = LockSet("p", "t", T, T + 0.01, fetch=True)
    events = run_of([lock], [Finish("p", "t", T + 0.02, T + 0.03, 0)], [])
    flows = flow_run(GOOD[0], RELEASE, RELEASE, *GOOD[3:], GOOD[1], processed={"p": {}})
    verdict = judge("x", ["p"], events, Outcome(frozenset({"p"}), {"waiting-children": 1}),
                    workers=1, killed=0, frozen=0, lock_ms=D, duration=1.0, flows=flows)
    # released twice, completed before b, :processed lacks a and b, one left waiting.
    assert verdict.violations == 5 and (verdict.parents, verdict.children) == (1, 2)
    text = verdict.report()
    assert "flows: 1 parents x 2 children; released exactly once 0, release faults 1" in text
    assert "completed before a child 1, :processed faults 2, left waiting for children 1" in text
    assert "release: parent p released 2 times" in text
    assert "completed before a child: parent p completed before child b" in text
    # A plain run's report has no flows line.
    assert "flows:" not in verdict_of(run_of([], [], [])).report()


def test_dooms_are_seeded_and_bounded() -> None:
    assert plan_dooms(50, 3, 2, seed=9) == plan_dooms(50, 3, 2, seed=9)
    dooms = plan_dooms(50, 3, 2, seed=9)
    assert sorted(d.fate for d in dooms.values()) == ["frozen"] * 2 + ["killed"] * 3
    assert all(1 <= n <= 50 for n in dooms)
    with pytest.raises(UsageError):
        plan_dooms(3, 2, 2, seed=0)


def test_cli(redis_url: str, official_scripts: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["concurrency", "--crash", "--candidate", f"scripts:{official_scripts}",
                 "--redis", redis_url, "--workers", "4", "--jobs", "40", "--kill", "2",
                 "--freeze", "1", "--seed", "5"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "40 jobs, 4 workers, 2 killed, 1 frozen" in out and "PASSED" in out


def test_cli_flows(redis_url: str, node_scripts: Path,
                   capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["concurrency", "--crash", "--flows", "--candidate", f"scripts:{node_scripts}",
                 "--redis", redis_url, "--workers", "4", "--jobs", "10", "--children", "2",
                 "--kill", "2", "--freeze", "1", "--seed", "5"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "30 jobs, 4 workers, 2 killed, 1 frozen" in out and "PASSED" in out
    assert "flows: 10 parents x 2 children; released exactly once 10" in out


def test_cli_exits_1_when_caught(redis_url: str, official_scripts: Path, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    broken = mutated(official_scripts, tmp_path, "moveStalledJobsToWait-9.lua",
                     'if (rcall("EXISTS", jobKey .. ":lock") == 0) then', "if true then")
    code = main(["concurrency", "--crash", "--candidate", f"scripts:{broken}", "--redis",
                 redis_url, "--workers", "4", "--jobs", "40"])
    assert code == 1
    assert "FAILED" in capsys.readouterr().out


def test_cli_usage_errors(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["concurrency", "--crash", "--textbook", "--redis", redis_url]) == 2
    assert main(["concurrency", "--crash", "--jobs", "3", "--kill", "4",
                 "--redis", redis_url]) == 2
    assert "--kill" in capsys.readouterr().err
    assert main(["concurrency", "--flows", "--redis", redis_url]) == 2
    assert main(["concurrency", "--crash", "--flows", "--children", "0",
                 "--redis", redis_url]) == 2
    assert "--children" in capsys.readouterr().err


def test_help_documents_the_crash_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["concurrency", "--help"])
    out = capsys.readouterr().out
    for flag in ("--crash", "--kill", "--freeze", "--lock-ms", "--flows", "--children"):
        assert flag in out


def test_a_stall_check_of_four_ids_is_a_list(redis_server: servers.ServerInfo,
                                             official_scripts: Path) -> None:
    # Four ids once came back as a fetch-next {job, ttl, next}.
    cand = ScriptsCandidate(official_scripts)
    client = servers.client_for(redis_server)
    queue = QueueRef(BULLMQ, "bmqc-crash-four", versions.CURRENT)
    try:
        for i in range(4):
            cand.apply(client, queue, Add(name="j", timestamp=1, data={"i": i}))
            cand.apply(client, queue, MoveToActive(now=2, token=f"t{i}"))
        assert cand.apply(client, queue, MoveStalledJobsToWait(3)) == []
        client.delete(*(queue.key(f"{i}:lock") for i in range(1, 5)), queue.key("stalled-check"))
        ids = cand.apply(client, queue, MoveStalledJobsToWait(4, max_stalled_count=10))
        assert sorted(ids) == ["1", "2", "3", "4"]  # type: ignore[arg-type]
    finally:
        delete_queue(client, queue)
        client.close()
