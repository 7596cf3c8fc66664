"""`bullmq-conformance report --html`: one static page comparing several `--report-json` runs.

The page is self-contained (inline CSS and script, no fonts, images or requests: its Content
Security Policy forbids any) and readable without its script, which only folds the diffs:

- a pass-rate chart per report (inline SVG bars, one per area);
- a matrix: one column per report, one row group per area (the area row gives each column's
  pass count), one row per vector id, each cell coloured by outcome; a failed, errored or
  xfailed cell is a button that unfolds a row with its message and diff.
  `page.html#open=c2-<id>` unfolds column 2's cell of vector <id> on load (a link to a diff).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.core.errors import UsageError
from conformance.core.outcomes import Outcome, Tally
from conformance.core.resources import report_asset
from conformance.reports.json_report import (
    area_tallies,
    coverage_of,
    coverage_text,
    engine_text,
    load_report,
    properties_text,
    protocol_text,
    skipped_ops_text,
)
from conformance.reports.markup import area_cell, document, e

_BAR_WIDTH, _LABEL_WIDTH, _ROW_HEIGHT = 180, 130, 18


@dataclass(frozen=True)
class Column:
    """One report of the page: its file name (not its path) and its document."""

    name: str
    document: Mapping[str, Any]

    @property
    def results(self) -> dict[str, Mapping[str, Any]]:
        """Result entries by vector id."""
        return {result["id"]: result for result in self.document["results"]}


def cell_id(column: int, vector_id: str) -> str:
    """The id of a matrix cell (column from 1); `#open=<id>` unfolds it on load."""
    return f"c{column}-{vector_id}"


def _head(column: Column) -> str:
    doc = column.document
    return (f'<span class="cand">{e(doc["candidate"])}</span>'
            f'<span class="ver">{e(doc["candidate_version"])}</span>'
            f'<span>profile {e(doc["profile"])}</span>'
            f"<span>{e(protocol_text(doc))}</span>"
            f"<span>redis {e(engine_text(doc))}</span>"
            f'<span class="file">{e(column.name)} · {e(properties_text(doc))}</span>')


def _percent(rate: float | None) -> str:
    if rate is None:
        return "n/a"
    return f"{rate:.0%}" if rate in (0.0, 1.0) else f"{rate:.1%}"


def _chart(index: int, column: Column) -> str:
    """A bar per area: passed / applicable (skipped results are not counted)."""
    areas = area_tallies(column.document)
    total = Tally.of_totals(column.document["totals"])
    height = _ROW_HEIGHT * max(len(areas), 1) + 4
    width = _LABEL_WIDTH + _BAR_WIDTH + 60
    bars = []
    for row, (area, tally) in enumerate(areas):
        y = row * _ROW_HEIGHT + 2
        rate = tally.pass_rate
        filled = round(_BAR_WIDTH * rate) if rate is not None else 0
        tip = (f"{area}: {tally.passed}/{tally.applicable} passed, {tally.failed} failed, "
               f"{tally.errored} errored, {tally.xfailed} xfailed, {tally.skipped} skipped")
        track = "track-bad" if rate is not None and rate < 1 else "track"
        bars.append(
            f'<g><title>{e(tip)}</title>'
            f'<text x="{_LABEL_WIDTH - 6}" y="{y + 12}" text-anchor="end">{e(area)}</text>'
            f'<rect class="{track}" x="{_LABEL_WIDTH}" y="{y + 2}" width="{_BAR_WIDTH}" '
            f'height="{_ROW_HEIGHT - 5}"/>'
            f'<rect class="bar" x="{_LABEL_WIDTH}" y="{y + 2}" width="{filled}" '
            f'height="{_ROW_HEIGHT - 5}"/>'
            f'<text x="{_LABEL_WIDTH + _BAR_WIDTH + 6}" y="{y + 12}">{_percent(rate)}</text></g>')
    caption = (f"{total.passed}/{total.applicable} passed ({_percent(total.pass_rate)}), "
               f"{total.skipped} skipped")
    if column.document["report_version"] >= 3:  # the skips told apart
        coverage = coverage_of(column.document["results"])
        caption += f"; {coverage_text(coverage)}"
        caption += "".join(f"; {text}" for text in [skipped_ops_text(coverage)] if text)
    return (f'<figure class="chart"><figcaption><b>{index}</b> {_head(column)}'
            f'<span class="rate">{e(caption)}</span></figcaption>'
            f'<svg role="img" aria-label="pass rate per area, report {index}" '
            f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            + "".join(bars) + "</svg></figure>")


def _matrix(columns: Sequence[Column]) -> str:
    per_column = [column.results for column in columns]
    areas: dict[str, list[str]] = {}
    for column in columns:
        for result in column.document["results"]:
            ids = areas.setdefault(result["area"], [])
            if result["id"] not in ids:
                ids.append(result["id"])
    tallies = [dict(area_tallies(column.document)) for column in columns]
    span = len(columns) + 1
    heads = "".join(f'<th scope="col"><b>{i}</b> {_head(column)}</th>'
                    for i, column in enumerate(columns, 1))
    parts = [f'<table id="matrix"><thead><tr><th scope="col">vector</th>{heads}</tr></thead>']
    for area, ids in areas.items():
        sums = "".join(area_cell(t.get(area)) for t in tallies)
        parts.append(f'<tbody><tr class="area"><th scope="rowgroup">{e(area)}</th>{sums}</tr>')
        for vector_id in ids:
            cells, details = [], []
            for index, (column, results) in enumerate(zip(columns, per_column, strict=True), 1):
                result = results.get(vector_id)
                if result is None:
                    cells.append('<td class="o o-absent"></td>')
                    continue
                outcome, message = result["outcome"], result["message"]
                if Outcome(outcome).has_details:
                    cid = cell_id(index, vector_id)
                    cells.append(
                        f'<td class="o o-{outcome}"><button type="button" id="{e(cid)}" '
                        f'aria-expanded="false" aria-controls="d{e(cid)}">{outcome}</button>'
                        "</td>")
                    details.append(
                        f'<tr class="detail" id="d{e(cid)}"><td colspan="{span}">'
                        f'<div class="who">{e(vector_id)}: {outcome} in <b>{index}</b> '
                        f'{e(column.document["candidate"])}</div>'
                        f"<pre>{e(message or '(no message)')}</pre></td></tr>")
                else:
                    tip = f' title="{e(message)}"' if message else ""
                    cells.append(f'<td class="o o-{outcome}"{tip}>{outcome}</td>')
            parts.append(f'<tr class="vector"><th scope="row">{e(vector_id)}</th>'
                         + "".join(cells) + "</tr>" + "".join(details))
        parts.append("</tbody>")
    parts.append("</table>")
    return "".join(parts)


def render_html(columns: Sequence[Column]) -> str:
    """The page comparing `columns` (one per report), as a self-contained HTML document."""
    legend = "".join(f'<span class="o-{outcome}">{outcome}</span>'
                     for outcome in Outcome)
    charts = "".join(_chart(index, column) for index, column in enumerate(columns, 1))
    body = ("<h1>bullmq-conformance report</h1>"
            f'<p class="legend">{legend}<span class="blank">blank: not in that run</span>'
            "pass rate = passed / (results - skipped) · click a failed, errored or xfailed "
            "cell for its diff</p>"
            f'<section class="charts">{charts}</section>'
            f'<div class="wrap">{_matrix(columns)}</div>')
    return document("bullmq-conformance report", body, script=report_asset("page.js"),
                    head="<noscript><style>tr.detail { display: table-row; }</style>"
                    "</noscript>")


def main(args: argparse.Namespace) -> int:
    """`report --html OUT REPORT...`: load every report (UsageError, one line, on the first bad
    one) and write the page."""
    out, reports = args.html, args.reports
    columns = [Column(path.name, load_report(path)) for path in reports]
    page = render_html(columns)
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--html {out}: cannot write it ({exc.strerror or exc})") from None
    vectors = len({r["id"] for c in columns for r in c.document["results"]})
    sys.stdout.write(f"wrote {out}: {len(columns)} report(s), {vectors} vector ids\n")
    return 0
