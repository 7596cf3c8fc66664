"""What is built from `--report-json` documents: loading and checking them, per-area tallies,
and the Markdown run summary of `run --summary-md` (fit for a CI job summary).

The document is described by the bundled schemas/report.schema.json; `report_document` below
builds it from a run's verdicts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from conformance.core.errors import UsageError
from conformance.core.options import EVERY_PROTOCOL
from conformance.core.outcomes import Coverage, Outcome, SkipKind, Tally, ops_text
from conformance.run.session import SUITE_VERSION, Run
from reference_impl import versions

REPORT_VERSION = 3
#: Failures shown with their diff in the Markdown summary.
MAX_FAILURES = 5


def area_tallies(document: Mapping[str, Any]) -> list[tuple[str, Tally]]:
    """Each area of a report with its tally, in the order the areas first ran."""
    by_area: dict[str, list[Mapping[str, Any]]] = {}
    for result in document["results"]:
        by_area.setdefault(result["area"], []).append(result)
    return [(area, Tally.of(r["outcome"] for r in results)) for area, results in by_area.items()]


def coverage_of(results: Iterable[Mapping[str, Any]]) -> Coverage:
    """The outcomes, skips by kind and skipped ops of a report's results (a result of a
    version-1 or 2 report, which has no `skip`, counts as skipped by the candidate)."""
    return Coverage.of((Outcome(r["outcome"]), SkipKind(r["skip"]) if "skip" in r else None,
                        r.get("skipped_ops", ())) for r in results)


def coverage_text(coverage: Coverage, judged: str | None = None) -> str:
    """How much of a run was judged, in words: `433 judged of 445 applicable, 12 skipped by
    the candidate; 408 not applicable (other protocol ranges, unmet needs)`. `judged` replaces
    `433 judged` (the terminal gives the outcomes: `3 failed, 430 passed`)."""
    text = f"{judged or f'{coverage.judged} judged'} of {coverage.applicable} applicable"
    if coverage.by_candidate:
        expected = coverage.skipped(SkipKind.EXPECTED)
        listed = f" ({expected} listed as skip in its expectations file)" if expected else ""
        text += f", {coverage.by_candidate} skipped by the candidate{listed}"
    if coverage.not_applicable:
        kinds = ", ".join(kind.label for kind, _ in coverage.skips if not kind.applicable)
        text += f"; {coverage.not_applicable} not applicable ({kinds})"
    return text


def skipped_ops_text(coverage: Coverage) -> str | None:
    """`ops the candidate skipped: changeDelay (12 vectors)`; None when it skipped none."""
    if not coverage.skipped_ops:
        return None
    return f"ops the candidate skipped: {ops_text(coverage.skipped_ops)}"


def engine_text(document: Mapping[str, Any]) -> str:
    """The Redis of a run in words: `local redis 7.0.15`, `local valkey 8.0.1 (redis 7.2.4)`."""
    redis = document["redis"]
    if redis["kind"] is None:
        return "not started"
    text = f"{redis['kind']} {redis['engine']} {redis['version']}"
    if redis["redis_version"] and redis["redis_version"] != redis["version"]:
        text += f" (redis {redis['redis_version']})"
    return text


def properties_text(document: Mapping[str, Any]) -> str:
    """The `properties` settings in words: `seed 7, 25 examples`, or `properties off`."""
    seed, examples = document["seed"], document["examples"]
    if examples == 0:
        return "properties off"
    parts = ([f"seed {seed}"] if seed is not None else []) + (
        [f"{examples} examples"] if examples is not None else [])
    return ", ".join(parts) or "properties not recorded"


def protocol_text(document: Mapping[str, Any]) -> str:
    """The protocol judged against, and what `identify` found if it ran (a version-1 report
    has neither: it judged the 6.x protocol)."""
    protocol = document.get("protocol", "6.x")
    text = ("protocol: every range (identify)" if protocol == EVERY_PROTOCOL
            else f"protocol {protocol}")
    found = document.get("identify")
    if found is not None:
        span = found["protocol"]
        if found["older_than_supported"]:
            text += ", identified: older than supported"
        elif span is not None:
            text += f", identified: npm bullmq {span['since']} up to {span['until'] or 'now'}"
        else:
            text += ", identified: no range fits"
    return text


def run_info(document: Mapping[str, Any]) -> str:
    """One line naming what ran: suite, candidate and version, profile, protocol, Redis,
    properties."""
    return (f"bullmq-conformance {document['suite_version']} · candidate "
            f"{document['candidate']} [{document['candidate_version']}] · profile "
            f"{document['profile']} · {protocol_text(document)} · redis "
            f"{engine_text(document)} · {properties_text(document)}")


def validate(document: Any, source: str) -> None:
    """Raise UsageError (one line) unless `document` is a report (version 3, 2 or 1).

    `source` names where it came from, for the message.
    """
    from conformance.core import schemas  # jsonschema: not on a run's path

    found = schemas.problem(schemas.report(), document)
    if found is None:
        return
    if isinstance(document, dict) and "results" in document and "report_version" not in document:
        raise UsageError(f"{source}: a report from an older suite (no report_version); "
                         f"rerun with --report-json to get a version-{REPORT_VERSION} report")
    raise UsageError(f"{source}: not a bullmq-conformance report (version {REPORT_VERSION}): "
                     f"{found}")


def report_document(run: Run, verdicts: list[dict[str, Any]], *, seed: int | None = None,
                    examples: int | None = None) -> dict[str, Any]:
    """The `--report-json` document of a run (`report_version` 3; the bundled
    schemas/report.schema.json).

    `seed` and `examples` are the `properties` area's settings; None (null) when the caller
    has none to record.
    """
    server = run.server
    return {
        "report_version": REPORT_VERSION,
        "suite_version": SUITE_VERSION,
        "candidate": run.candidate.name,
        "candidate_version": run.candidate.version,
        "profile": run.profile.name,
        "protocol": versions.text(run.protocol) if run.protocol else EVERY_PROTOCOL,
        "seed": seed,
        "examples": examples,
        "redis": {
            "kind": server.kind if server else None,
            "engine": server.engine if server else None,
            "version": server.version if server else None,
            "redis_version": server.redis_version if server else None,
            "cluster": server.cluster if server else None,
        },
        "totals": coverage_of(verdicts).totals(),
        "results": verdicts,
    }


def write_report(path: Path, document: dict[str, Any]) -> None:
    """Write the JSON report."""
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def load_report(path: Path) -> dict[str, Any]:
    """Read and check a `--report-json` file; UsageError (one line) when it is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a JSON report (not UTF-8 text)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        document: dict[str, Any] = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not JSON ({exc.msg} at line {exc.lineno} column "
                         f"{exc.colno})") from None
    except RecursionError:
        raise UsageError(f"{path}: not a JSON report (nested too deeply)") from None
    validate(document, str(path))
    return document


# --- Markdown -------------------------------------------------------------------------------

# Characters that would start Markdown or HTML markup inside a line of a job summary.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|&#~])")


def _md(text: str) -> str:
    """`text` as literal Markdown inline text."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def _fence(text: str) -> str:
    """A fenced code block holding `text` verbatim, whatever backticks it contains."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def summary_markdown(document: Mapping[str, Any]) -> str:
    """The Markdown summary of one report: a table of areas by outcomes with a totals row, the
    run info line, and the first failures with their diffs in fenced blocks."""
    totals = Tally.of_totals(document["totals"])
    # A report before version 3 does not tell the skips apart: none of it is counted as judged.
    coverage = coverage_of(document["results"]) if document["report_version"] >= 3 else None
    bad = totals.failing
    if totals.total == 0:
        verdict = "no vectors ran"
    elif bad:
        verdict = f"{bad} of {coverage.judged if coverage else totals.total} failed or errored"
    elif coverage is not None and not coverage.judged:
        verdict = "nothing judged"
    elif coverage is not None:
        verdict = f"passed ({coverage.judged} of {coverage.applicable} applicable judged)"
    else:
        verdict = f"passed ({totals.passed} passed, {totals.skipped} skipped)"
    judged = ([coverage_text(coverage), skipped_ops_text(coverage)] if coverage else [])
    lines = [f"### bullmq-conformance: {_md(document['candidate'])}: {verdict}", "",
             _md(run_info(document)), "",
             *(f"{_md(text)}  " for text in judged if text is not None),
             *([""] if coverage else []),
             "| area | " + " | ".join(Outcome) + " |",
             "| --- | " + " | ".join("---:" for _ in Outcome) + " |"]
    for area, tally in area_tallies(document):
        lines.append(f"| {_md(area)} | "
                     + " | ".join(str(tally.count(o)) for o in Outcome) + " |")
    lines.append("| **total** | " + " | ".join(f"**{totals.count(o)}**" for o in Outcome)
                 + " |")
    failures = [r for r in document["results"] if Outcome(r["outcome"]).failing]
    if failures:
        shown = failures[:MAX_FAILURES]
        lines += ["", f"#### First failures ({len(shown)} of {len(failures)})"]
        for result in shown:
            lines += ["", f"**{_md(result['id'])}** ({result['outcome']})", "",
                      _fence(result["message"] or "(no message)")]
    return "\n".join(lines) + "\n"


def append_summary(path: Path, document: Mapping[str, Any]) -> None:
    """Append the Markdown summary of `document` to `path` (created if missing), separated by
    a blank line from what is already there, as a CI job summary file is shared by steps."""
    text = summary_markdown(document).encode("utf-8")
    try:
        with path.open("ab+") as out:  # appends go to the end whatever the read position
            size = out.seek(0, 2)
            if size:
                out.seek(size - 1)
                text = (b"\n" if out.read(1) == b"\n" else b"\n\n") + text
            out.write(text)
    except OSError as exc:
        raise UsageError(f"--summary-md {path}: cannot write it ({exc.strerror or exc})") from None


def write_summary(path: Path, report_json: Path) -> bool:
    """Append the summary of the report a run wrote to `report_json`; False if it wrote none
    (the run stopped before it started: a usage error)."""
    if not report_json.is_file():
        return False
    append_summary(path, load_report(report_json))
    return True
