"""Cron parity: Node's answers stay Node's (the drift check), the model reads them, and the
bullmq-py candidate's nextMillis is what its upsert computes (hand-made strategies)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from conformance.candidates.clients import bullmq_py_cron
from conformance.core.errors import CandidateSkipped
from conformance.core.resources import node_adapter_source
from reference_impl import cron_answers
from reference_impl.cases.cron_parity import AREA
from reference_impl.model import QueueModel
from reference_impl.scheduler_ops import NextMillis

ROOT = Path(__file__).resolve().parent.parent
NODE_READY = (shutil.which("node") is not None
              and (node_adapter_source() / "node_modules" / "bullmq").is_dir())
needs_node = pytest.mark.skipif(
    not NODE_READY and os.environ.get("CI") != "true",
    reason="needs node and `npm ci` in conformance/bundled/node-bullmq (always runs under CI=true)")


def _script() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("cron_answers_script",
                                                  ROOT / "ci" / "cron_answers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- Node's answers ---------------------------------------------------------------------------

@pytest.mark.node
@needs_node
def test_the_stored_answers_are_the_pinned_clients(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["cron_answers.py", "--check"])
    assert _script().main() == 0, capsys.readouterr().out


@pytest.mark.node
@needs_node
def test_the_check_fails_on_an_answer_node_does_not_give(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    script = _script()
    stored = json.loads(script.ANSWERS.read_text(encoding="utf-8"))
    first = stored["answers"][0]
    first["next"] = first["next"] + 1  # one millisecond off: two different iteration ids
    changed = tmp_path / "answers.json"
    changed.write_text(json.dumps(stored, indent=1) + "\n", encoding="utf-8")
    monkeypatch.setattr(script, "ANSWERS", changed)
    monkeypatch.setattr(sys, "argv", ["cron_answers.py", "--check"])
    assert script.main() == 1
    out = capsys.readouterr().out
    assert "differs from the pinned client's answers" in out and str(first["next"]) in out


def test_every_case_has_an_answer_and_each_input_is_one_case() -> None:
    seen: set[tuple[Any, ...]] = set()
    for case in AREA.cases:
        (op,) = case.when
        assert isinstance(op, NextMillis)
        assert cron_answers.key(op) not in seen, case.name  # a distinct fact each
        seen.add(cron_answers.key(op))
        cron_answers.next_millis(op)  # raises LookupError when the file lacks it
    assert len(seen) >= 150


def test_the_model_answers_from_the_file_and_writes_nothing() -> None:
    # 2026-03-07T12:00:00.123Z; every second fires at the next whole second (worked by hand).
    model = QueueModel()
    assert model.apply(NextMillis("* * * * * *", 1_772_884_800_123)) == {
        "next": 1_772_884_801_000}
    assert model.apply(NextMillis("0 0 30 2 *", 1_772_884_800_123)) == cron_answers.INVALID
    # midnight after March 7 is past an end date of 23:00 that day: no fire time
    assert model.apply(NextMillis("0 0 * * *", 1_772_884_800_123,
                                  end_date=1_772_924_400_000)) == {"next": None}
    assert model.store.keys == {}


def test_an_input_without_an_answer_names_the_command_that_asks_node() -> None:
    with pytest.raises(LookupError, match=r"ci/cron_answers\.py"):
        cron_answers.next_millis(NextMillis("1 2 3 4 5", 0))


# -- bullmq-py: the package's strategy, with its upsert's checks --------------------------------

def _package(monkeypatch: pytest.MonkeyPatch, strategy: Any) -> list[tuple[int, dict[str, Any]]]:
    calls: list[tuple[int, dict[str, Any]]] = []

    def recorded(millis: int, opts: dict[str, Any]) -> Any:
        calls.append((millis, opts))
        return strategy(millis, opts)

    module = types.ModuleType("bullmq.job_scheduler")
    module.default_repeat_strategy = recorded  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bullmq.job_scheduler", module)
    return calls


def test_bullmq_py_passes_the_repeat_options_and_clamps_to_now(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _package(monkeypatch, lambda millis, opts: millis - 5)
    op = NextMillis("0 * * * *", 1000, tz="Asia/Tokyo", start_date=900, end_date=5000)
    assert bullmq_py_cron.next_millis("a package", op) == {"next": 1000}
    assert calls == [(1000, {"pattern": "0 * * * *", "tz": "Asia/Tokyo", "startDate": 900,
                             "endDate": 5000})]


def test_bullmq_py_none_and_raising_strategies(monkeypatch: pytest.MonkeyPatch) -> None:
    _package(monkeypatch, lambda millis, opts: None)
    assert bullmq_py_cron.next_millis("p", NextMillis("x", 10)) == {"next": None}

    def rejects(millis: int, opts: dict[str, Any]) -> int:
        raise ValueError("bad cron")
    _package(monkeypatch, rejects)
    assert bullmq_py_cron.next_millis("p", NextMillis("x", 10)) == "invalid"


def test_bullmq_py_past_the_end_date_never_asks_the_strategy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _package(monkeypatch, lambda millis, opts: millis + 1)
    assert bullmq_py_cron.next_millis("p", NextMillis("x", 10, end_date=9)) == {"next": None}
    assert calls == []
    assert bullmq_py_cron.next_millis("p", NextMillis("x", 10, end_date=10)) == {"next": 11}


def test_bullmq_py_without_the_strategy_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bullmq.job_scheduler", types.ModuleType("bullmq.js"))
    with pytest.raises(CandidateSkipped, match=r"has no bullmq\.job_scheduler\.default_repeat"):
        bullmq_py_cron.next_millis("fork 1.0", NextMillis("x", 10))
