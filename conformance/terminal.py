"""The terminal output of `bullmq-conformance run`, in place of pytest's own reporter.

The command line runs pytest with `-p no:terminal` and this reporter: the run header, one
progress mark per vector (or one line each with `-v`), the failures and errors with their
diffs, the skip reasons grouped, and a closing tally. Nothing of pytest's machinery (rootdir,
config file, plugin list, internal file names) reaches the user. Why a run stopped early is not
printed here: the command line prints it once, on stderr.

Under plain pytest with the plugin (a port's own test suite) pytest's reporter is kept.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any, TextIO

import pytest

from conformance.active_run import RUN_KEY, outcome_of
from conformance.outcomes import Outcome, Tally
from conformance.runner import skip_group

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
        self.outcomes: list[Outcome] = []
        self.details: list[tuple[Outcome, str]] = []
        self.skips: Counter[str] = Counter()

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
        self._line(active.run.header())
        self._line(active.properties_line())

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Count what -k, --lf and the like left out."""
        self.deselected += len(items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """How many vectors (and property items) will run."""
        self.total = len(session.items)
        if self.total or self.deselected:
            left_out = f" ({self.deselected} deselected)" if self.deselected else ""
            self._line(f"{self.total} selected{left_out}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """One mark per result (one line with -v); keep what the summary shows."""
        outcome = outcome_of(report)
        if outcome is None:
            return
        self.done += 1
        self.outcomes.append(outcome)
        if outcome is Outcome.SKIPPED:
            self.skips[skip_group(_skip_reason(report))] += 1
        elif outcome.failing:
            self.details.append((outcome, report.longreprtext.strip()))
        if self.verbosity <= SILENT:
            return
        if self.verbosity > 0:
            self._line(f"{report.nodeid.removeprefix('::')} {outcome.value.upper()}")
        else:
            self._mark(_group(report.nodeid), _MARK[outcome])

    def _mark(self, group: str, mark: str) -> None:
        if self.verbosity == 0 and group != self.group:
            self._end_marks()
            self._write(f"{group} ")
            self.column = len(group) + 1
            self.group = group
        if self.column >= _WIDTH:
            self._end_marks()
        self._write(mark)
        self.column += 1

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Failures and errors in full, the skip reasons, then the tally (nothing when Redis
        could not start: the command line says why)."""
        active = session.config.stash.get(RUN_KEY, None)
        if active is not None and active.stopped is not None and not self.outcomes:
            return
        self._end_marks()
        for outcome in (Outcome.FAILED, Outcome.ERRORED) if self.verbosity > SILENT else ():
            shown = [text for kind, text in self.details if kind is outcome]
            if shown:
                self._line()
                self._line(f"--- {outcome.value} ({len(shown)}) ---")
                for text in shown:
                    self._line(text)
        if self.skips and self.verbosity >= 0:
            self._line()
            self._line(f"--- skipped ({sum(self.skips.values())}) ---")
            for reason, count in self.skips.most_common():
                self._line(f"{count:4d} x {reason}")
        self._line(self.tally_line())

    def tally_line(self) -> str:
        """e.g. `188 failed, 18 passed, 73 skipped in 2.31 s`."""
        tally = Tally.of(self.outcomes)
        parts = [f"{tally.count(o)} {o.value}" for o in
                 (Outcome.FAILED, Outcome.ERRORED, Outcome.PASSED, Outcome.SKIPPED,
                  Outcome.XFAILED) if tally.count(o)]
        took = time.monotonic() - self.started
        return f"{', '.join(parts) or 'nothing ran'} in {took:.2f} s"


def _group(nodeid: str) -> str:
    """The progress line a result belongs to: its vector file, or `properties`."""
    head = nodeid.split("::", 1)[0]
    return head or "properties"  # the properties items hang off the session: `::name`


def _skip_reason(report: Any) -> str:
    """The reason a result was skipped, without pytest's `Skipped: ` and location."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)
