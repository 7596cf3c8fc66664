"""The terminal output of `bullmq-conformance run`, in place of pytest's own reporter.

The command line runs pytest with `-p no:terminal` and this reporter: the run header, one
progress mark per vector (or one line each with `-v`), one line of marks per vector file even
when parallel workers report out of order, the failures and errors with their diffs, the skip
reasons grouped (skipped by the candidate, then not applicable), the ops the candidate
skipped, and a closing tally of how many applicable vectors were judged. Nothing of pytest's
machinery (rootdir, config file, plugin list, internal file names) reaches the user. Why a run
stopped early, or must fail though nothing failed, is not printed here: the command line prints
it once, on stderr.

Under plain pytest with the plugin (a port's own test suite) pytest's reporter is kept.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any, TextIO

import pytest

from conformance.core.outcomes import Counted, Coverage, Outcome
from conformance.plugin.hooks import RUN_KEY, outcome_of
from conformance.plugin.items import reported_skip, skip_of
from conformance.reports.json_report import coverage_text, skipped_ops_text

_MARK = {Outcome.PASSED: ".", Outcome.FAILED: "F", Outcome.ERRORED: "E",
         Outcome.SKIPPED: "s", Outcome.XFAILED: "x"}
_WIDTH = 80


#: Verbosity of a run whose results another command reads (`identify`): header and tally only.
SILENT = -2


class RunReporter:
    """A pytest plugin that writes a run's progress and results to `out`: -1 quiet, 0 marks,
    1 one line per vector, SILENT the header and the tally only."""

    def __init__(self, verbosity: int = 0, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.verbosity = verbosity
        self.started = time.monotonic()
        self.group: str | None = None
        self.column = 0
        self.done = 0
        self.total = 0
        self.deselected = 0
        self.results: list[Counted] = []
        self.details: list[tuple[Outcome, str]] = []
        #: Skip reasons counted: those the candidate chose, those that do not apply.
        self.by_candidate: Counter[str] = Counter()
        self.not_applicable: Counter[str] = Counter()
        #: Results still to come per progress line (from the collection; unknown: 0), and the
        #: marks of lines other than the one on screen, by line, in the order first seen.
        self.left: Counter[str] = Counter()
        self.pending: dict[str, list[str]] = {}

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _end_marks(self) -> None:
        if self.column:
            self._write("\n")
            self.column = 0

    def _line(self, text: str = "") -> None:
        self._end_marks()
        self._write(text + "\n")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """The run header (after the run started Redis), unless Redis could not start."""
        self.started = time.monotonic()
        active = session.config.stash.get(RUN_KEY, None)
        if active is None or active.stopped is not None:
            return
        for line in active.header_lines():
            self._line(line)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Count what -k, --lf and the like left out."""
        self.deselected += len(items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """How many vectors (and property items) will run."""
        self.total = len(session.items)
        self._expect(item.nodeid for item in session.items)
        if self.total or self.deselected:
            left_out = f" ({self.deselected} deselected)" if self.deselected else ""
            self._line(f"{self.total} selected{left_out}")

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """xdist: what one worker collected (every worker collects the same items)."""
        if not self.left:
            self._expect(ids)

    def _expect(self, nodeids: Iterable[str]) -> None:
        self.left = Counter(_group(nodeid) for nodeid in nodeids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """One mark per result (one line with -v); keep what the summary shows."""
        outcome = outcome_of(report)
        if outcome is None:
            return
        self.done += 1
        kind, ops = skip_of(report.user_properties)
        self.results.append((outcome, kind, ops))
        if outcome is Outcome.SKIPPED:
            skip = reported_skip(report)
            (self.by_candidate if skip.kind.applicable else self.not_applicable)[skip.group] += 1
        elif outcome.failing:
            self.details.append((outcome, report.longreprtext.strip()))
        if self.verbosity <= SILENT:
            return
        if self.verbosity > 0:
            self._line(f"{report.nodeid.removeprefix('::')} {outcome.value.upper()}")
        else:
            self._mark(_group(report.nodeid), _MARK[outcome])

    def _mark(self, group: str, mark: str) -> None:
        """Show `mark` on `group`'s line. Parallel workers report out of order: a mark of
        another line than the one on screen waits until that line's results are all in, so
        that each file keeps one line (wrapped at 80 columns), while the line on screen
        still shows progress."""
        if self.verbosity < 0:  # -q: marks only, no lines per file
            self._put(mark)
            return
        self.left[group] -= 1
        self.pending.setdefault(group, []).append(mark)
        self._flush()

    def _flush(self, every: bool = False) -> None:
        """Write the marks of the line on screen; while it is complete (or `every`), open
        the next line with marks waiting, first seen first."""
        while True:
            if self.group is not None:
                for mark in self.pending.pop(self.group, ()):
                    self._put(mark)
                if self.left[self.group] > 0 and not every:
                    return
            if not self.pending:
                return
            self.group = next(iter(self.pending))
            self._end_marks()
            self._write(f"{self.group} ")
            self.column = len(self.group) + 1

    def _put(self, mark: str) -> None:
        if self.column >= _WIDTH:
            self._end_marks()
        self._write(mark)
        self.column += 1

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Failures and errors in full, the skip reasons, then the tally (nothing when Redis
        could not start: the command line says why)."""
        active = session.config.stash.get(RUN_KEY, None)
        if active is not None and active.stopped is not None and not self.results:
            return
        self._flush(every=True)  # lines cut short by -x or a stop
        self._end_marks()
        for outcome in (Outcome.FAILED, Outcome.ERRORED) if self.verbosity > SILENT else ():
            shown = [text for kind, text in self.details if kind is outcome]
            if shown:
                self._line()
                self._line(f"--- {outcome.value} ({len(shown)}) ---")
                for text in shown:
                    self._line(text)
        for title, skips in (("skipped by the candidate", self.by_candidate),
                             ("not applicable", self.not_applicable)):
            if skips and self.verbosity >= 0:
                self._line()
                self._line(f"--- {title} ({sum(skips.values())}) ---")
                for reason, count in skips.most_common():
                    self._line(f"{count:4d} x {reason}")
        skipped_ops = skipped_ops_text(Coverage.of(self.results))
        if skipped_ops is not None and self.verbosity > SILENT:
            self._line(skipped_ops)
        self._line(self.tally_line())

    def tally_line(self) -> str:
        """The outcomes of the judged vectors out of the applicable ones, and why the rest
        were not judged: `3 failed, 430 passed of 445 applicable, 12 skipped by the candidate;
        408 not applicable (other protocol ranges) in 2.31 s`."""
        coverage = Coverage.of(self.results)
        tally = coverage.tally
        took = time.monotonic() - self.started
        if not tally.total:
            return f"nothing ran in {took:.2f} s"
        parts = [f"{tally.count(o)} {o.value}" for o in
                 (Outcome.FAILED, Outcome.ERRORED, Outcome.PASSED, Outcome.XFAILED)
                 if tally.count(o)]
        return f"{coverage_text(coverage, ', '.join(parts) or None)} in {took:.2f} s"


def _group(nodeid: str) -> str:
    """The progress line a result belongs to: its vector file, or `properties`."""
    head = nodeid.split("::", 1)[0]
    return head or "properties"  # the properties items hang off the session: `::name`
