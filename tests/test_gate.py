"""A gate that cannot pass empty: skips told apart by kind (data, not wording), a run that judges
nothing exits 1 with one line, `--require-ops` fails a run whose candidate skips an op the port
claims, the JSON report and summary count what was applicable and judged, and the terminal
keeps one line of marks per file when parallel workers report out of order."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from report_helpers import SCHEMA

from conformance.cli.terminal import RunReporter
from conformance.core.outcomes import Coverage, Outcome, Skip, SkipKind
from conformance.reports.json_report import summary_markdown
from conformance.vectors import Vector
from reference_impl.ops import OP_NAMES, op_name
from tests.cli_helpers import cli

SKIPPING = f"command:{sys.executable} {Path(__file__).parent / 'adapters' / 'faulty.py'} skip"


def _area(vectors: list[Vector], area: str) -> list[Vector]:
    return [v for v in vectors if v.area == area]


# --- Coverage: the counts behind the gate ------------------------------------------------------

def test_coverage_tells_the_candidates_skips_from_those_that_do_not_apply() -> None:
    coverage = Coverage.of([
        (Outcome.PASSED, None, ()), (Outcome.FAILED, None, ()), (Outcome.XFAILED, None, ()),
        (Outcome.SKIPPED, SkipKind.RANGE, ()), (Outcome.SKIPPED, SkipKind.RANGE, ()),
        (Outcome.SKIPPED, SkipKind.PROFILE, ()), (Outcome.SKIPPED, SkipKind.NEEDS, ()),
        (Outcome.SKIPPED, SkipKind.EXPECTED, ()),
        (Outcome.SKIPPED, SkipKind.CANDIDATE, ("changeDelay",)),
        (Outcome.SKIPPED, SkipKind.CANDIDATE, ("changeDelay", "addLog")),
        # a properties shard judged on the rest, that left one op out
        (Outcome.PASSED, None, ("addLog",)),
    ])
    assert (coverage.tally.total, coverage.applicable, coverage.judged) == (11, 7, 4)
    assert (coverage.not_applicable, coverage.by_candidate) == (4, 3)
    assert coverage.skipped_ops == (("addLog", 2), ("changeDelay", 2))
    assert coverage.totals() == {
        "passed": 2, "failed": 1, "errored": 0, "skipped": 7, "xfailed": 1, "applicable": 7,
        "judged": 4, "skipped_not_applicable": 4, "skipped_by_candidate": 3,
        "skipped_ops": {"addLog": 2, "changeDelay": 2}}
    assert coverage.problem() is None
    assert coverage.problem(["add", "changeDelay"]) == (
        "the candidate skipped ops that --require-ops requires: changeDelay (2 vectors)")


def test_a_skip_is_made_as_data_and_worded_in_one_place() -> None:
    """A skip carries its kind and ops; its words (pytest's reason, a report's message) and the
    line a summary counts it under come from it, not the other way round."""
    other = Skip.other_range(">=6.0.0", "6.7.0")
    assert (other.kind, other.ops) == (SkipKind.RANGE, ())
    assert other.reason == "holds for bullmq >=6.0.0, not the protocol judged (6.7.0)"
    assert other.group == "holds for another protocol range, not the protocol judged (6.7.0)"
    unsupported = Skip.unsupported(["changeDelay", "addLog"])
    assert (unsupported.kind, unsupported.ops) == (SkipKind.CANDIDATE, ("changeDelay", "addLog"))
    assert unsupported.reason == unsupported.group == ("candidate does not support "
                                                       "changeDelay, addLog")
    # An adapter's reason is kept as it came, empty too; no op named is any op.
    assert Skip.unsupported(["add"], "").reason == "candidate does not support add: "
    assert Skip.unsupported([], "it applied no op").reason == ("candidate does not support "
                                                              "any op: it applied no op")
    expected = Skip.expected("'pause/*': all of pause")
    assert (expected.kind, expected.reason) == (SkipKind.EXPECTED,
                                                "expected skip: 'pause/*': all of pause")
    # Only another range's skips are counted together; a protocol changes no other line.
    needs = Skip(SkipKind.NEEDS, "needs hash-tag", protocol="6.7.0")
    assert needs.group == "needs hash-tag"


def test_a_skip_of_no_known_kind_counts_against_the_candidate() -> None:
    coverage = Coverage.of([(Outcome.SKIPPED, None, ())])
    assert (coverage.applicable, coverage.judged) == (1, 0)
    assert coverage.problem() is not None


def test_nothing_judged_is_a_problem_whatever_the_reason() -> None:
    everything_skipped = Coverage.of([(Outcome.SKIPPED, SkipKind.CANDIDATE, ("add",))] * 3
                                     + [(Outcome.SKIPPED, SkipKind.EXPECTED, ())]
                                     + [(Outcome.SKIPPED, SkipKind.RANGE, ())])
    assert everything_skipped.problem() == (
        "nothing was judged: the candidate skipped all 4 applicable vectors (ops it skipped: "
        "add; 1 vector listed as skip in its expectations file)")
    none_applies = Coverage.of([(Outcome.SKIPPED, SkipKind.RANGE, ()),
                                (Outcome.SKIPPED, SkipKind.PROFILE, ())])
    assert none_applies.problem() == ("nothing was judged: no selected vector applies to this "
                                      "run (2 vectors not applicable: other protocol ranges, "
                                      "other profile)")
    assert Coverage().problem(["add"]) is None  # nothing selected: nothing to say


# --- a candidate that skips every op ------------------------------------------------------------

@pytest.mark.parametrize("parallel", [[], ["-n", "2"]], ids=["serial", "two-workers"])
def test_an_adapter_that_skips_every_op_fails_with_one_line(
        tmp_path: Path, redis_url: str, all_vectors: list[Vector], every_vector: list[Vector],
        parallel: list[str]) -> None:
    """The skip kinds are data on each result, so an xdist controller counts them too."""
    report = tmp_path / "r.json"
    proc = cli("run", "--redis", redis_url, "--candidate", SKIPPING, "-k", "band-bump",
               "--examples", "0", "--report-json", str(report), *parallel)
    applicable = _area(all_vectors, "band-bump")
    selected = _area(every_vector, "band-bump")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    assert proc.stderr == (f"bullmq-conformance: nothing was judged: the candidate skipped all "
                           f"{len(applicable)} applicable vectors (ops it skipped: add)\n")
    document = json.loads(report.read_text(encoding="utf-8"))
    assert list(Draft202012Validator(SCHEMA).iter_errors(document)) == []
    assert document["report_version"] == 3
    assert document["totals"] == {
        "passed": 0, "failed": 0, "errored": 0, "skipped": len(selected), "xfailed": 0,
        "applicable": len(applicable), "judged": 0,
        "skipped_not_applicable": len(selected) - len(applicable),
        "skipped_by_candidate": len(applicable), "skipped_ops": {"add": len(applicable)}}
    current = {v.id for v in applicable}
    first_op = {v.id: op_name(v.when[0]) for v in applicable}
    for result in document["results"]:
        if result["id"] in current:
            assert (result["skip"], result["skipped_ops"]) == ("candidate",
                                                               [first_op[result["id"]]])
            assert result["message"] == f"candidate does not support {first_op[result['id']]}: " \
                                        "not supported by faulty"
        else:
            assert result["skip"] == "range" and "skipped_ops" not in result
    # The closing line says what was judged; the ops line which ops were skipped.
    lines = proc.stdout.rstrip().splitlines()
    assert lines[-2] == f"ops the candidate skipped: add ({len(applicable)} vectors)"
    assert lines[-1].startswith(
        f"0 judged of {len(applicable)} applicable, {len(applicable)} skipped by the "
        f"candidate; {len(selected) - len(applicable)} not applicable (other protocol ranges) "
        "in ")
    # The Markdown summary of the report says the same.
    summary = summary_markdown(document)
    assert summary.splitlines()[0].endswith(": nothing judged")
    assert f"ops the candidate skipped: add ({len(applicable)} vectors)" in summary


def test_the_properties_area_does_not_pass_when_no_op_was_applied(
        tmp_path: Path, redis_url: str) -> None:
    report = tmp_path / "r.json"
    proc = cli("run", "--redis", redis_url, "--candidate", SKIPPING, "-k", "properties",
               "--examples", "3", "--seed", "5", "--report-json", str(report))
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    assert proc.stderr.startswith("bullmq-conformance: nothing was judged: the candidate skipped "
                                  "the 1 applicable vector (ops it skipped: add")
    assert proc.stderr.count("\n") == 1
    [shard] = json.loads(report.read_text(encoding="utf-8"))["results"]
    assert (shard["area"], shard["outcome"], shard["skip"]) == ("properties", "skipped",
                                                                "candidate")
    assert "add" in shard["skipped_ops"]


def test_the_properties_command_does_not_pass_when_no_op_was_applied(redis_url: str) -> None:
    proc = cli("properties", "--redis", redis_url, "--candidate", SKIPPING, "--examples", "3",
               "--seed", "5")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    assert "FAILED: nothing judged: the candidate skipped every op it was given (add" in (
        proc.stdout)
    assert "agreed with the model" not in proc.stdout


def test_an_expected_skip_is_the_candidates_and_not_applied_to_any_op(
        tmp_path: Path, redis_url: str) -> None:
    expect = tmp_path / "expect.yaml"
    expect.write_text('expectations:\n  "band-bump/*": {outcome: skip, reason: not yet}\n',
                      encoding="utf-8")
    report = tmp_path / "r.json"
    proc = cli("run", "--redis", redis_url, "-k", "band-bump", "--examples", "0", "--expect",
               str(expect), "--report-json", str(report))
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    assert "listed as skip in its expectations file" in proc.stderr
    document = json.loads(report.read_text(encoding="utf-8"))
    assert {r["skip"] for r in document["results"]} == {"expected"}
    assert document["totals"]["judged"] == 0 and document["totals"]["skipped_ops"] == {}


# --- --require-ops -------------------------------------------------------------------------------

def test_require_ops_passes_the_reference_and_fails_a_candidate_missing_an_op(
        redis_url: str, all_vectors: list[Vector]) -> None:
    common = ("--redis", redis_url, "-q", "-k", "band-bump", "--examples", "0")
    reference = cli("run", *common, "--require-ops", "all")
    assert reference.returncode == 0, reference.stdout[-2000:] + reference.stderr
    assert reference.stderr == ""
    # PyPI bullmq has no changeDelay: its band-bump vectors with one are skipped.
    with_change_delay = [v for v in _area(all_vectors, "band-bump")
                         if any(op_name(op) == "changeDelay" for op in v.when)]
    assert with_change_delay
    python = cli("run", *common, "--candidate", "bullmq-py", "--require-ops",
                 "add, changeDelay")
    assert python.returncode == 1, python.stdout[-2000:] + python.stderr
    assert python.stderr == ("bullmq-conformance: the candidate skipped ops that --require-ops "
                             f"requires: changeDelay ({len(with_change_delay)} vectors)\n")
    # The same skips, with changeDelay not required: the run passes.
    lenient = cli("run", *common, "--candidate", "bullmq-py", "--require-ops", "add")
    assert lenient.returncode == 0, lenient.stdout[-2000:] + lenient.stderr


def test_require_ops_refuses_a_name_that_is_no_op(redis_url: str) -> None:
    proc = cli("run", "--redis", redis_url, "-k", "band-bump", "--require-ops",
               "add,changedelay")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("bullmq-conformance: --require-ops add,changedelay: unknown "
                                  "op changedelay; the ops are ")
    assert all(name in proc.stderr for name in OP_NAMES)


def test_the_plugin_gates_a_ports_pytest_run_too(tmp_path: Path, redis_url: str) -> None:
    def pytest_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "--bmq-redis", redis_url, "--bmq-examples", "0", "-k",
                               "band-bump", *args], capture_output=True, text=True,
                              timeout=300, check=False, cwd=tmp_path)

    proc = pytest_run("--bmq-candidate", "bullmq-py", "--bmq-require-ops", "changeDelay")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    assert "bullmq-conformance: the candidate skipped ops that --require-ops requires: " \
           "changeDelay (" in proc.stdout
    assert " failed" not in proc.stdout.splitlines()[-1]  # nothing failed: the gate did it
    proc = pytest_run("--bmq-candidate", SKIPPING)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    assert "bullmq-conformance: nothing was judged: " in proc.stdout
    proc = pytest_run("--bmq-candidate", "reference", "--bmq-require-ops", "nope")
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--require-ops nope: unknown op nope; the ops are add, " in proc.stderr


# --- the report: old ones still load, new ones show what was judged -------------------------------

def test_report_html_reads_old_and_new_reports(tmp_path: Path, redis_url: str) -> None:
    new = tmp_path / "new.json"
    proc = cli("run", "--redis", redis_url, "--candidate", "bullmq-py", "-k", "band-bump",
               "--examples", "0", "--report-json", str(new))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    document = json.loads(new.read_text(encoding="utf-8"))
    old = copy.deepcopy(document)
    old["report_version"] = 2  # what the suite wrote before skips had kinds
    old["totals"] = {o: old["totals"][o] for o in ("passed", "failed", "errored", "skipped",
                                                   "xfailed")}
    for result in old["results"]:
        result.pop("skip", None)
        result.pop("skipped_ops", None)
    assert list(Draft202012Validator(SCHEMA).iter_errors(old)) == []
    (tmp_path / "old.json").write_text(json.dumps(old), encoding="utf-8")
    page = tmp_path / "page.html"
    proc = cli("report", "--html", str(page), str(tmp_path / "old.json"), str(new))
    assert proc.returncode == 0, proc.stderr
    text = page.read_text(encoding="utf-8")
    totals = document["totals"]
    skipped_by_candidate = totals["skipped_by_candidate"]
    assert skipped_by_candidate > 0
    assert (f"{totals['judged']} judged of {totals['applicable']} applicable, "
            f"{skipped_by_candidate} skipped by the candidate") in text
    assert f"ops the candidate skipped: changeDelay ({skipped_by_candidate} vectors)" in text
    assert text.count("judged of") == 1  # the old report's column does not pretend to know
    assert "nothing judged" not in summary_markdown(old)


# --- the terminal, fed by hand --------------------------------------------------------------------

@dataclass
class _Item:
    nodeid: str


@dataclass
class _Config:
    stash: dict[Any, Any] = field(default_factory=dict)


@dataclass
class _Session:
    items: list[_Item]
    config: _Config = field(default_factory=_Config)


@dataclass
class _Report:
    """What the reporter reads of a pytest TestReport."""

    nodeid: str
    outcome: str  # passed, failed, skipped (of the phase below)
    when: str = "call"
    user_properties: list[tuple[str, object]] = field(default_factory=list)
    longrepr: object = None
    longreprtext: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    @property
    def skipped(self) -> bool:
        return self.outcome == "skipped"


def _result(nodeid: str, mark: str, kind: SkipKind | None = None,
            ops: tuple[str, ...] = ()) -> _Report:
    """A vector's verdict report with progress mark `mark` (`.`, `F`, `s`)."""
    if mark == "s":
        props: list[tuple[str, object]] = [("skip", (kind or SkipKind.CANDIDATE).value),
                                           ("protocol", "6.7.0")]
        if ops:
            props.append(("skipped_ops", list(ops)))
        return _Report(nodeid, "skipped", "setup", props, ("f", 1, f"Skipped: why {nodeid}"))
    return _Report(nodeid, "failed" if mark == "F" else "passed", longreprtext=f"{nodeid} diff")


A, B, P = "vectors/a.yaml::a/", "vectors/b.yaml::b/", "::properties/state-machine"


def _reporter() -> tuple[RunReporter, io.StringIO]:
    out = io.StringIO()
    return RunReporter(verbosity=0, out=out), out


def _mark_lines(text: str) -> list[str]:
    return [line for line in text.splitlines()
            if line.startswith(("vectors/", "properties"))]


def test_marks_of_interleaved_workers_keep_one_line_per_file() -> None:
    reporter, out = _reporter()
    ids = [f"{A}1", f"{A}2", f"{A}3", f"{B}1", f"{B}2", P]
    # Two xdist workers each report what they collected (the same ids).
    reporter.pytest_xdist_node_collection_finished(None, ids)
    reporter.pytest_xdist_node_collection_finished(None, ids)
    feed = [(f"{A}1", "."), (f"{B}1", "s"), (f"{A}2", "F"), (f"{B}2", "."), (P, "."),
            (f"{A}3", "s")]
    seen = []
    for nodeid, mark in feed:
        reporter.pytest_runtest_logreport(_result(nodeid, mark))  # type: ignore[arg-type]
        seen.append(out.getvalue())
    # Progress: the file on screen shows its marks as they come; the other file's wait.
    assert seen[0] == "vectors/a.yaml ."
    assert seen[2] == "vectors/a.yaml .F"
    assert seen[4] == seen[2]
    assert _mark_lines(seen[5]) == ["vectors/a.yaml .Fs", "vectors/b.yaml s.", "properties ."]


def test_a_line_cut_short_is_written_at_the_end() -> None:
    reporter, out = _reporter()
    reporter.pytest_collection_finish(_Session([_Item(f"{A}1"), _Item(f"{A}2"),
                                                _Item(f"{B}1")]))  # type: ignore[arg-type]
    reporter.pytest_runtest_logreport(_result(f"{A}1", "."))  # type: ignore[arg-type]
    reporter.pytest_runtest_logreport(_result(f"{B}1", "."))  # type: ignore[arg-type]
    assert _mark_lines(out.getvalue()) == ["vectors/a.yaml ."]  # b waits for a to finish
    # -x stopped the run here
    reporter.pytest_sessionfinish(_Session([]))  # type: ignore[arg-type]
    assert _mark_lines(out.getvalue()) == ["vectors/a.yaml .", "vectors/b.yaml ."]


def test_closing_lines_count_what_was_judged_and_name_the_skipped_ops() -> None:
    reporter, out = _reporter()
    feed = [_result(f"{A}1", "."), _result(f"{A}2", "."), _result(f"{A}3", "F"),
            _result(f"{A}4", "s", SkipKind.CANDIDATE, ("changeDelay",)),
            _result(f"{A}5", "s", SkipKind.CANDIDATE, ("changeDelay",)),
            _result(f"{A}6", "s", SkipKind.RANGE), _result(f"{A}7", "s", SkipKind.NEEDS)]
    for report in feed:
        reporter.pytest_runtest_logreport(report)  # type: ignore[arg-type]
    reporter.pytest_sessionfinish(_Session([]))  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    assert lines[0] == "vectors/a.yaml ..Fssss"
    assert "--- skipped by the candidate (2) ---" in lines
    assert "--- not applicable (2) ---" in lines
    # Every vector of another range together, named by the protocol judged.
    assert "   1 x holds for another protocol range, not the protocol judged (6.7.0)" in lines
    assert lines[-2] == "ops the candidate skipped: changeDelay (2 vectors)"
    assert lines[-1].startswith("1 failed, 2 passed of 5 applicable, 2 skipped by the "
                                "candidate; 2 not applicable (other protocol ranges, unmet "
                                "needs) in ")
