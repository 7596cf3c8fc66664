"""What can become of a vector, and a tally of outcomes: the one list the runner, the pytest
items, the reports, the HTML page and the command line's exit code all use."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, fields
from enum import StrEnum


class Outcome(StrEnum):
    """The outcome of one vector (or `properties` item). Its value is the word reports use."""

    PASSED = "passed"
    FAILED = "failed"      # the candidate ran, and its state or returns are wrong
    ERRORED = "errored"    # the candidate (or the suite) broke before a verdict
    SKIPPED = "skipped"    # not applicable here: a need the server lacks, an op not supported
    XFAILED = "xfailed"    # failed or errored, as the candidate's expectations file says

    @property
    def failing(self) -> bool:
        """A verdict against the run: failed or errored."""
        return self in (Outcome.FAILED, Outcome.ERRORED)

    @property
    def has_details(self) -> bool:
        """Carries a message worth reading (a diff, or what broke): failing, or xfailed."""
        return self.failing or self is Outcome.XFAILED


@dataclass(frozen=True)
class Tally:
    """How many results (of an area, or of a whole run) have each outcome."""

    passed: int = 0
    failed: int = 0
    errored: int = 0
    skipped: int = 0
    xfailed: int = 0

    @classmethod
    def of(cls, outcomes: Iterable[Outcome | str]) -> Tally:
        """Count `outcomes` (Outcome members or their words)."""
        counts = Counter(Outcome(outcome) for outcome in outcomes)
        return cls(**{outcome.value: counts[outcome] for outcome in Outcome})

    def count(self, outcome: Outcome | str) -> int:
        """The count of one outcome."""
        return int(getattr(self, Outcome(outcome).value))

    def as_dict(self) -> dict[str, int]:
        """{outcome word: count}, in Outcome order (a report's `totals`)."""
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @property
    def total(self) -> int:
        """Every result."""
        return sum(self.as_dict().values())

    @property
    def failing(self) -> int:
        """Results against the run: failed and errored."""
        return self.failed + self.errored

    @property
    def applicable(self) -> int:
        """The results that ran to a verdict: all but the skipped ones."""
        return self.total - self.skipped

    @property
    def pass_rate(self) -> float | None:
        """passed / applicable, or None when nothing was applicable."""
        return self.passed / self.applicable if self.applicable else None
