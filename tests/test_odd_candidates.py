"""Odd candidates get clear verdicts: a `scripts:` directory without the scripts is refused
before Redis starts (naming the folder that has them); a script reply of the wrong shape is
judged (failed, with the return difference) rather than errored; and `bullmq-py` on a package
whose API differs from the pinned release skips or errors each op in one line, and says which
distribution it ran."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conformance.candidates.clients.package import describe
from conformance.candidates.scripts.candidate import LAYOUTS
from conformance.core.pins import PINNED_VERSION
from conformance.core.resources import lua_dir
from conformance.vectors import Vector
from reference_impl.flows import POLICY_FLAGS
from reference_impl.getter_ops import GETTER_OPS
from reference_impl.maintenance_ops import MAINTENANCE_OPS
from reference_impl.ops import (
    OP_NAMES,
    Add,
    AddFlow,
    AddParentJob,
    ChangeDelay,
    ChangePriority,
    MoveToActive,
    MoveToDelayed,
    Op,
    Pause,
    Promote,
    Resume,
)
from reference_impl.scheduler_ops import (
    SCHEDULER_OPS,
    NextMillis,
    PickUpIteration,
    UpsertJobScheduler,
)
from reference_impl.worker_ops import (
    AddLog,
    ExtendLock,
    ExtendLocks,
    GetDependencyCounts,
    GetRateLimitTtl,
    MoveJobFromActiveToWait,
    MoveStalledJobsToWait,
    MoveToFinished,
    MoveToWaitingChildren,
    ReleaseLock,
    RemoveChildDependency,
    RemoveDeduplicationKey,
    RemoveJob,
    RemoveUnprocessedChildren,
    RetryJob,
    UpdateData,
    UpdateProgress,
)
from tests.cli_helpers import cli
from tests.scripts_helpers import replace_once

ROOT = Path(__file__).resolve().parent.parent
FAKE_BULLMQ = Path(__file__).parent / "fixtures" / "fake_bullmq"
#: A port that refuses no connection: the check must come before any Redis is reached.
NO_REDIS = "url:redis://127.0.0.1:1/0"


def op_name(op: Op) -> str:
    return next(name for name, kind in OP_NAMES.items() if isinstance(op, kind))


# --- a scripts directory holding none of the scripts -------------------------------------------


def test_a_package_root_is_refused_naming_its_commands_folder(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    commands = package / "src" / "commands"
    shutil.copytree(lua_dir(), commands)
    (package / "README.md").write_text("a package root, not its scripts\n")
    proc = cli("run", "-q", "--redis", NO_REDIS, "--candidate", f"scripts:{package}")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for layout in LAYOUTS.values():
        assert layout.file_name in lines[0]
    assert f"did you mean {commands}?" in lines[0]


def test_an_empty_directory_is_refused_without_a_guess(tmp_path: Path) -> None:
    proc = cli("run", "-q", "--redis", NO_REDIS, "--candidate", f"scripts:{tmp_path}")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "holds none of the scripts" in lines[0], proc.stderr
    assert "did you mean" not in lines[0]


@pytest.mark.parametrize(("files", "said"), [
    # KEYS counts no BullMQ 5.x or 6.x release uses
    (("pause-4.lua", "promote-6.lua"), "pause-4.lua, promote-6.lua: other KEYS counts"),
    # a BullMQ 4.x release (no marker zset): older than protocol 5.0.0
    (("pause-5.lua", "promote-7.lua"), "pause-5.lua, promote-7.lua: BullMQ 4.x scripts, older "
     "than the earliest supported protocol (5.0.0)"),
], ids=["other-key-counts", "bullmq-4"])
def test_scripts_of_other_shapes_are_named(tmp_path: Path, files: tuple[str, ...],
                                           said: str) -> None:
    for name in files:
        (tmp_path / name).write_text("return 0\n")
    proc = cli("run", "-q", "--redis", NO_REDIS, "--candidate", f"scripts:{tmp_path}")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert said in proc.stderr


# --- a reply of the wrong shape is judged ------------------------------------------------------


def test_a_pause_script_that_returns_nothing_fails_with_the_return_difference(
        tmp_path: Path, redis_url: str, all_vectors: list[Vector],
        profile_skips: Callable[[str], set[str]]) -> None:
    """BullMQ 5.x's pause script returns nothing (nil): the vectors that pause or resume are
    judged on their returns and state (failed), not errored; the others still pass."""
    lua = tmp_path / "lua"
    shutil.copytree(lua_dir(), lua)
    replace_once(lua / "pause-7.lua", "\nreturn legacyLeft", "\n")
    report = tmp_path / "r.json"
    proc = cli("run", "-q", "--redis", redis_url, "--examples", "0", "--candidate",
               f"scripts:{lua}", "--report-json", str(report))
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    results = {r["id"]: r for r in json.loads(report.read_text())["results"]}
    skipped = profile_skips("bullmq")
    pausing = {v.id: v for v in all_vectors
               if v.id not in skipped and any(isinstance(o, Pause | Resume) for o in v.when)}
    assert pausing
    for vector_id, vector in pausing.items():
        result = results[vector_id]
        assert result["outcome"] == "failed", result
        for index, (op, want) in enumerate(zip(vector.when, vector.returns, strict=True)):
            if isinstance(op, Pause | Resume):
                line = f"return of op {index + 1} ({op_name(op)}): expected {want!r}, actual None"
                assert line in result["message"], result["message"]
    others = {r["outcome"] for i, r in results.items() if i not in pausing}
    assert others <= {"passed", "skipped"}


# --- bullmq-py on a package with another API ---------------------------------------------------


#: What the fake package lacks for each worker-half op (each is skipped, naming it).
FAKE_LACKS: dict[type[Op], str] = {
    MoveToFinished: "has no Worker",
    RetryJob: "has no Scripts.retryJob",
    ExtendLock: "has no Scripts.extendLock",
    ExtendLocks: "has no Queue.backend",
    ReleaseLock: "has no client call of releaseLock-1",
    MoveStalledJobsToWait: "has no Queue.backend",
    MoveJobFromActiveToWait: "has no Job.moveToWait",
    GetRateLimitTtl: "has no Queue.getRateLimitTtl",
    RemoveDeduplicationKey: "has no Job.removeDeduplicationKey",
    RemoveJob: "has no Queue.remove",
    UpdateProgress: "has no Job.updateProgress",
    UpdateData: "has no Job.updateData",
    AddLog: "has no Job.log",
    # The flows.
    AddParentJob: "has no Scripts.addParentJob",
    AddFlow: "has no FlowProducer",
    MoveToWaitingChildren: "has no Job.moveToWaitingChildren",
    GetDependencyCounts: "has no Job.getDependenciesCount",
    RemoveChildDependency: "has no Job.removeChildDependency",
    RemoveUnprocessedChildren: "has no Job.removeUnprocessedChildren",
    # Cron parity: the package's repeat strategy.
    NextMillis: "has no bullmq.job_scheduler (no job schedulers)",
    # A worker picking up a scheduler's iteration: the package's Worker.
    PickUpIteration: "has no Worker",
    # A caller's upsert of a scheduler: the package's Queue.
    UpsertJobScheduler: "has no Queue.upsertJobScheduler",
}
#: A child's policy flag: the fake's Job reads none of the clients' option names.
FLAG_UNREAD = "'s Job does not read"
#: moveToDelayed with fields or fetch-next packs a Worker's options: the fake has no Worker.
DELAY_FROM_WORKER = "fake-bullmq-fork 0.0.1 has no Worker"
#: The seven kinds of difference the queue half's ops meet.
QUEUE_HALF_KINDS = 7
#: The job scheduler ops: the candidate drives them through no package yet.
NOT_DRIVEN = "the suite does not drive"


def expected_outcome(vector: Vector) -> tuple[str, str]:
    """What the fake package (tests/fixtures/fake_bullmq) does to a vector: the first op it
    cannot run decides; pause and resume run, returning nothing."""
    for op in vector.when:
        if type(op) in FAKE_LACKS:
            return "skipped", FAKE_LACKS[type(op)]
        if type(op) in (*SCHEDULER_OPS.values(), *GETTER_OPS.values(),
                        *MAINTENANCE_OPS.values()):  # the others: driven through no package yet
            return "skipped", NOT_DRIVEN
        if isinstance(op, MoveToDelayed) and (op.fields or op.fetch_next):
            return "skipped", DELAY_FROM_WORKER
        if isinstance(op, Add) and any(flag in op.opts for flag in POLICY_FLAGS):
            return "skipped", FLAG_UNREAD
        if isinstance(op, Add):
            return "errored", "candidate error in add: Queue.add raised NotImplementedError"
        if isinstance(op, Promote):
            return "errored", "candidate error in promote: Job.promote raised ValueError"
        if isinstance(op, MoveToDelayed):
            return "errored", "argument(s) the suite passes: too many positional arguments"
        if isinstance(op, MoveToActive):
            return "skipped", "fake-bullmq-fork 0.0.1 has no Scripts.moveToActive"
        if isinstance(op, ChangePriority):
            return "skipped", "fake-bullmq-fork 0.0.1 has no Job.changePriority"
        if isinstance(op, ChangeDelay):
            return "skipped", "fake-bullmq-fork 0.0.1 has no Job.changeDelay"
    return "failed", ", actual None"


def test_a_package_with_another_api_skips_or_errors_each_op_in_one_line(
        tmp_path: Path, redis_url: str, all_vectors: list[Vector],
        profile_skips: Callable[[str], set[str]]) -> None:
    report = tmp_path / "r.json"
    path = [str(FAKE_BULLMQ), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    proc = cli("run", "-q", "--redis", redis_url, "--examples", "0", "--candidate", "bullmq-py",
               "--report-json", str(report), env=env)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    warning = f"fake-bullmq-fork 0.0.1 (provides the bullmq import; not the pinned official " \
              f"bullmq {PINNED_VERSION})"
    assert f"candidate bullmq-py [{warning}]" in proc.stdout.splitlines()[0]
    document = json.loads(report.read_text())
    assert document["candidate_version"] == warning
    results = {r["id"]: r for r in document["results"]}
    skipped = profile_skips("bullmq")
    seen = set()
    for vector in all_vectors:
        if vector.id in skipped:
            continue
        outcome, text = expected_outcome(vector)
        result = results[vector.id]
        assert (result["outcome"], text in result["message"]) == (outcome, True), result
        if outcome != "failed":
            assert "\n" not in result["message"], result
        seen.add(text)
    # every kind of difference was met by some vector
    assert len(seen - {*FAKE_LACKS.values(), DELAY_FROM_WORKER, FLAG_UNREAD, NOT_DRIVEN}) \
        == QUEUE_HALF_KINDS


def test_the_pinned_version_is_the_dev_extras_pin() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert f"bullmq=={PINNED_VERSION}" in pyproject["project"]["optional-dependencies"]["dev"]


def test_the_official_release_is_named_without_a_warning() -> None:
    bullmq = pytest.importorskip("bullmq", reason="the dev extra installs the official client")
    assert describe(bullmq) == (f"bullmq {PINNED_VERSION}", f"bullmq {PINNED_VERSION}")


def test_a_bullmq_from_a_folder_is_named_with_its_folder(tmp_path: Path) -> None:
    module: Any = ModuleType("bullmq")
    module.__file__ = str(tmp_path / "bullmq" / "__init__.py")
    module.__version__ = PINNED_VERSION
    package, version = describe(module)
    assert package == f"bullmq {PINNED_VERSION}"
    assert version == (f"bullmq {PINNED_VERSION} imported from {tmp_path / 'bullmq'}, not from "
                       f"an installed distribution; not the pinned official bullmq "
                       f"{PINNED_VERSION}")
