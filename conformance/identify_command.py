"""`bullmq-conformance identify`: name the BullMQ protocol range a candidate speaks.

It is a `run` at every range (`--protocol every`, no `properties` area) whose JSON report is
read back by `conformance.identify`. A scripts directory of BullMQ 4.x is older than supported
without running anything.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from conformance.errors import Exit

if TYPE_CHECKING:
    from conformance.identify import Identification


def main(args: argparse.Namespace) -> int:
    """Identify; print the result as text or JSON; 0 when a range fits, 1 when none does or the
    candidate is older than supported, else the run's own code (2, 3, 4, 128 + n)."""
    from conformance import identify, options
    from conformance.candidates.scripts import pre_5_files
    from conformance.reports.json_report import load_report
    from conformance.run_command import run_with
    from conformance.signals import active
    from conformance.terminal import SILENT
    from conformance.vectors import iter_vectors, load_dir

    if args.candidate.startswith("scripts:"):
        old = pre_5_files(Path(args.candidate.removeprefix("scripts:")).expanduser())
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
        code = run_with(run_args, active(), verbosity=SILENT, out=sys.stderr)
        if code not in (Exit.OK, Exit.FAILED):
            return code
        document = load_report(report)
    markers = frozenset(v.id for v in iter_vectors(load_dir(run_args.vectors))
                        if identify.MARKER_KEY in v.keys)
    found = identify.identify(document["candidate"],
                              identify.judged_from_report(document["results"]), markers)
    if args.report_json is not None:
        document["identify"] = found.as_dict()
        args.report_json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return _print(found, args.json)


def _print(found: Identification, as_json: bool) -> int:
    from conformance.identify import text_report

    if as_json:
        print(json.dumps(found.as_dict(), indent=2))
    else:
        print("\n".join(text_report(found)), file=sys.stdout)
    return Exit.OK if found.protocol is not None else Exit.FAILED
