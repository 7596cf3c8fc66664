"""`bullmq-conformance identify`: name the BullMQ protocol range a candidate speaks.

It is a `run` at every range (`--protocol every`, no `properties` area) whose JSON report is
read back by `conformance.reports.identify`. A scripts directory of BullMQ 4.x is older than
supported without running anything.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import pytest

from conformance.cli.terminal import SILENT, RunReporter
from conformance.core.errors import Exit, Stopped
from conformance.core.outcomes import Outcome
from conformance.plugin.hooks import outcome_of
from conformance.reports import identify

if TYPE_CHECKING:
    from conformance.reports.identify import Identification


class IdentifyReporter(RunReporter):
    """`run`'s reporter with only the header and the closing line, which counts what the
    result counts: the vectors at the range found, or at the closest one (each vector is
    judged at every range it holds for: a tally of judgements would count it many times)."""

    def __init__(self, candidate: str, out: TextIO) -> None:
        super().__init__(verbosity=SILENT, out=out)
        self.candidate = candidate
        #: Each judgement as the JSON report's results have it (id, range, outcome).
        self.judgements: list[dict[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep each judgement (with its range), besides what the reporter keeps."""
        super().pytest_runtest_logreport(report)
        outcome = outcome_of(report)
        found = dict(report.user_properties)
        if outcome is not None and "range" in found:
            self.judgements.append({"id": report.nodeid.split("::", 1)[-1],
                                    "range": found["range"], "outcome": outcome})

    def tally_line(self) -> str:
        """e.g. `34 failed, 189 passed at npm bullmq 6.4.0 up to 6.5.0, the closest range
        (1271 judgements of 852 vectors at every range, in 4.10 s)`."""
        judged = identify.judged_from_report(self.judgements)
        found = identify.identify(self.candidate, judged)
        era = found.closest
        vectors = len({item["id"].split("@", 1)[0] for item in self.judgements})
        took = (f"({len(self.judgements)} judgements of {vectors} vectors at every range, in "
                f"{time.monotonic() - self.started:.2f} s)")
        if era is None:
            return f"no vector passed at any range {took}"
        # The closest range is one era (widened), where a vector has one judgement; the range
        # found may join several, and a vector that holds in each passed in each.
        passed = era.passed if found.protocol is None else len(
            {item.vector_id for item in judged
             if item.outcome is Outcome.PASSED and item.span.overlaps(era.span)})
        counts = [f"{count} {what}" for count, what in
                  ((len(era.failing), "failed"), (len(era.errored), "errored"),
                   (passed, "passed")) if count]
        where = "the range it speaks" if found.protocol is not None else "the closest range"
        return f"{', '.join(counts)} at npm bullmq {era.span}, {where} {took}"


def main(args: argparse.Namespace) -> int:
    """Identify; print the result as text or JSON; 0 when a range fits, 1 when none does or the
    candidate is older than supported, else the run's own code (2, 3, 4, 128 + n)."""
    from conformance.candidates.scripts.candidate import pre_5_files
    from conformance.candidates.spec import CandidateSpec
    from conformance.cli.run import run_with
    from conformance.core import candidate_forms, options
    from conformance.core.signals import active
    from conformance.reports.json_report import load_report
    from conformance.vectors import iter_vectors, load_dir

    options.output_file("--report-json", args.report_json)  # before anything runs
    spec = CandidateSpec.parse(args.candidate)
    if spec.form == candidate_forms.SCRIPTS:
        old = pre_5_files(spec.path)
        if old:
            found = identify.Identification(
                args.candidate, None, None, True,
                f"its scripts have BullMQ 4.x shapes ({', '.join(old)})")
            return _print(found, args.json)
    with tempfile.TemporaryDirectory(prefix="bmqc-identify-") as scratch:
        report = Path(scratch) / "report.json"
        run_args = argparse.Namespace(**{
            **{option.name: option.default for option in options.RUN},
            **vars(args), "protocol": options.EVERY_PROTOCOL, "examples": 0,
            "report_json": report, "summary_md": None, "junit_xml": None, "expect": None,
            "keyword": None, "quiet": True, "verbose": False, "exitfirst": False,
            "last_failed": False, "failed_first": False})
        # progress on stderr: standard output is the result (JSON with --json)
        code = run_with(run_args, active(),
                        reporter=IdentifyReporter(args.candidate, out=sys.stderr))
        if code not in (Exit.OK, Exit.FAILED):
            return code
        document = load_report(report)
    markers = frozenset(v.id for v in iter_vectors(load_dir(run_args.vectors))
                        if identify.MARKER_KEY in v.keys)
    found = identify.identify(document["candidate"],
                              identify.judged_from_report(document["results"]), markers)
    if args.report_json is not None:
        document["identify"] = found.as_dict()
        try:
            args.report_json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:  # the run is over, and stopped what it started
            stop = Stopped.unwritten("the JSON report", args.report_json, exc)
            print(f"bullmq-conformance: {stop.message}", file=sys.stderr)
            return stop.code
    return _print(found, args.json)


def _print(found: Identification, as_json: bool) -> int:
    from conformance.reports.identify import text_report

    if as_json:
        print(json.dumps(found.as_dict(), indent=2))
    else:
        print("\n".join(text_report(found)), file=sys.stdout)
    return Exit.OK if found.protocol is not None else Exit.FAILED
