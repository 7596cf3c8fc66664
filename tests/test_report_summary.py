"""The Markdown summary of `run --summary-md`: appended after what the file held, its tables
agree with the JSON report, it names the run, shows the first failures with their diffs, works
without --report-json, and escapes what would break its Markdown."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from report_helpers import EXAMPLES, OUTCOMES, SCHEMA, SEED, Runs, report_document

from conformance.reports.json_report import summary_markdown
from tests.cli_helpers import cli


def _sections(text: str) -> list[str]:
    return re.split(r"(?m)^(?=### bullmq-conformance: )", text)


def _table(section: str) -> dict[str, list[int]]:
    rows = {}
    for line in section.splitlines():
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[1:] and all(c.isdigit() for c in cells[1:]):
            rows[cells[0]] = [int(c) for c in cells[1:]]
    return rows


def test_summary_is_appended_after_what_was_there(runs: Runs) -> None:
    text = runs.summary.read_text(encoding="utf-8")
    earlier, first, second = _sections(text)
    assert earlier == runs.before + "\n\n"
    assert first.startswith("### bullmq-conformance: reference: passed (")
    assert second.startswith("### bullmq-conformance: scripts:")
    assert first.endswith("\n\n") and second.endswith("\n") and not second.endswith("\n\n")


def test_summary_tables_match_the_json(runs: Runs) -> None:
    sections = _sections(runs.summary.read_text(encoding="utf-8"))[1:]
    for section, document in zip(sections, runs.documents(), strict=True):
        header = next(line for line in section.splitlines() if line.startswith("| area"))
        assert [c.strip() for c in header.strip("|").split("|")] == ["area", *OUTCOMES]
        table = _table(section)
        expected: dict[str, Counter[str]] = {}
        for result in document["results"]:
            expected.setdefault(result["area"], Counter())[result["outcome"]] += 1
        assert table.pop("total") == [document["totals"][o] for o in OUTCOMES]
        assert list(table) == list(expected)  # the areas, in run order
        for area, counts in expected.items():
            assert table[area] == [counts[o] for o in OUTCOMES], area


def test_summary_names_the_run(runs: Runs, redis_server: Any) -> None:
    sections = _sections(runs.summary.read_text(encoding="utf-8"))[1:]
    for section, document in zip(sections, runs.documents(), strict=True):
        info = section.splitlines()[2]
        plain = re.sub(r"\\(.)", r"\1", info)
        assert info.startswith("bullmq-conformance 0.1.0 · candidate ")
        assert "\\[" in info and "\\]" in info  # Markdown link brackets, escaped
        assert f"candidate {document['candidate']} [{document['candidate_version']}] · " \
               f"profile bullmq · protocol 6.7.0 · redis url {redis_server.engine} " \
               f"{redis_server.version}" in plain
        assert info.endswith(f"seed {SEED}, {EXAMPLES} examples")


def test_summary_shows_the_first_five_failures_with_their_diffs(runs: Runs) -> None:
    passing, failing = _sections(runs.summary.read_text(encoding="utf-8"))[1:]
    assert "First failures" not in passing and "```" not in passing
    document = runs.documents()[1]
    failures = [r for r in document["results"] if r["outcome"] in ("failed", "errored")]
    assert len(failures) > 5
    assert f"#### First failures (5 of {len(failures)})" in failing
    blocks = re.findall(r"(?ms)^\*\*(.+?)\*\* \((\w+)\)\n\n```text\n(.*?)\n```$", failing)
    assert [(i.replace("\\", ""), o, m) for i, o, m in blocks] == [
        (r["id"], r["outcome"], r["message"]) for r in failures[:5]]


def test_summary_without_report_json_uses_a_temporary_report(tmp_path: Path,
                                                           redis_url: str) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    summary = tmp_path / "summary.md"
    proc = cli("run", "-q", "--redis", redis_url, "-k", "4097", "--examples", "0",
               "--summary-md", str(summary), env={**os.environ, "TMPDIR": str(scratch)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    # band-bump/4097-saturates passes; its two older protocol ranges are skipped at 6.7.0.
    assert _table(summary.read_text(encoding="utf-8"))["total"] == [1, 0, 0, 2, 0]
    assert "properties off" in summary.read_text(encoding="utf-8")
    assert list(scratch.iterdir()) == []  # the temporary report is gone


def test_summary_where_it_cannot_be_written_is_a_usage_error(tmp_path: Path,
                                                            redis_url: str) -> None:
    (tmp_path / "a-file").write_text("", encoding="utf-8")  # a file where a folder should be
    proc = cli("run", "--redis", redis_url, "-k", "4097",
               "--summary-md", str(tmp_path / "a-file" / "summary.md"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--summary-md" in proc.stderr
    assert "passed" not in proc.stdout  # refused before running anything


def test_summary_into_a_missing_directory_makes_it(tmp_path: Path, redis_url: str) -> None:
    summary = tmp_path / "no" / "summary.md"
    proc = cli("run", "--redis", redis_url, "-k", "4097", "--examples", "0",
               "--summary-md", str(summary))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert _table(summary.read_text(encoding="utf-8"))["total"] == [1, 0, 0, 2, 0]


def test_summary_fences_hold_any_text_and_cells_escape_pipes() -> None:
    message = "one ``` fence\n```` and four"
    results = [{"id": f"a|b/{n}", "area": "a|b", "outcome": "failed", "message": message}
               for n in range(7)]
    document = report_document(results, candidate="x|<y>")
    assert not list(Draft202012Validator(SCHEMA).iter_errors(document))
    text = summary_markdown(document)
    assert "| a\\|b | 0 | 7 | 0 | 0 | 0 |" in text
    assert "#### First failures (5 of 7)" in text
    assert text.count(f"`````text\n{message}\n`````") == 5
    assert "x\\|\\<y\\>" in text and "<y>" not in text
