"""The HTML page of `report --html`, read as text: a column per report and a row per vector,
cells coloured by outcome, absent cells, escaped diffs and hostile text, and one-line usage
errors for bad input. tests/test_report_chromium.py loads it in a real browser."""

from __future__ import annotations

import copy
import html
import re
from collections import Counter
from pathlib import Path

import pytest
from report_helpers import CLICKED, HOSTILE, Runs, report_document

from conformance.reports.html import Column, render_html
from tests.cli_helpers import cli


def test_page_has_both_columns_every_vector_and_escaped_diffs(runs: Runs, page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    passing, failing = runs.documents()
    heads = re.findall(r'<th scope="col"><b>(\d)</b> <span class="cand">(.*?)</span>', text)
    assert heads == [("1", "reference"), ("2", html.escape(failing["candidate"]))]
    ids = {r["id"] for r in passing["results"]} | {r["id"] for r in failing["results"]}
    rows = re.findall(r'<tr class="vector"><th scope="row">(.*?)</th>', text)
    assert sorted(rows) == sorted(html.escape(i) for i in ids)
    for result in failing["results"]:
        if result["outcome"] in ("failed", "errored", "xfailed"):
            assert f"<pre>{html.escape(result['message'])}</pre>" in text, result["id"]
    clicked = next(r for r in failing["results"] if r["id"] == CLICKED)["message"]
    assert "member '1'" in clicked and "member '1'" not in text  # quotes are escaped
    assert 'title="no &quot;year&quot; delays &lt;yet&gt;"' in text
    for absent in ("src=", "href=", "@import", "url(", "<link", "<img", "<iframe"):
        assert absent not in text


def test_page_colours_cells_by_outcome(runs: Runs, page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    cells = Counter(re.findall(r'<td class="o o-(\w+)"', text))
    passing, failing = runs.documents()
    expected = Counter(r["outcome"] for r in passing["results"] + failing["results"])
    assert cells == expected  # no absent cell: both runs ran the same selection


def test_page_marks_runs_that_lack_a_vector_as_absent(runs: Runs, tmp_path: Path) -> None:
    passing, failing = runs.documents()
    fewer = copy.deepcopy(passing)
    fewer["results"] = [r for r in fewer["results"] if r["area"] != "key-naming"]
    text = render_html([Column("a.json", fewer), Column("b.json", failing)])
    key_naming = sum(1 for r in failing["results"] if r["area"] == "key-naming")
    assert text.count('<td class="o o-absent"></td>') == key_naming
    assert text.count('<td class="o-absent"></td>') == 1  # the key-naming area row


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read it (No such file or directory)"),
        ("{\"report_version\": 1,", "not JSON (Expecting"),
        ("{}", "not a bullmq-conformance report (version 3): at (top level): "
               "'report_version' is a required property"),
        ('{"suite_version": "0.1.0", "results": []}', "a report from an older suite"),
        ("[1, 2]", "not a bullmq-conformance report (version 3)"),
        (b"\xff\xfe{", "not a JSON report (not UTF-8 text)"),
    ],
    ids=["missing", "not-json", "empty-object", "older-report", "array", "not-utf8"],
)
def test_report_bad_input_is_a_one_line_usage_error(tmp_path: Path, content: str | bytes | None,
                                                    expected: str, runs: Runs) -> None:
    bad = tmp_path / "bad.json"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    elif content is not None:
        bad.write_text(content, encoding="utf-8")
    out = tmp_path / "out.html"
    proc = cli("report", "--html", str(out), str(runs.passing_json), str(bad))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"bullmq-conformance: {bad}: {expected}")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert not out.exists()


def test_report_into_a_missing_directory_is_a_usage_error(tmp_path: Path, runs: Runs) -> None:
    proc = cli("report", "--html", str(tmp_path / "no" / "out.html"), str(runs.passing_json))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "cannot write it" in proc.stderr


def test_report_needs_a_report(tmp_path: Path) -> None:
    proc = cli("report", "--html", str(tmp_path / "out.html"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "REPORT" in proc.stderr


def test_page_escapes_hostile_text() -> None:
    document = report_document([{"id": "x/<i>1</i>", "area": "a&b", "outcome": "failed",
                           "message": HOSTILE}], candidate='<img src=x onerror="alert(1)">')
    text = render_html([Column("<b>.json", document)])
    for raw in (HOSTILE, "<script>window", "<img", "<i>1</i>", "<b>.json", "a&b<"):
        assert raw not in text
    assert f"<pre>{html.escape(HOSTILE)}</pre>" in text
    assert text.count("<script>") == 1  # the page's own
