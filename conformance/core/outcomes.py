"""What can become of a vector, and a tally of outcomes: the one list the runner, the pytest
items, the reports, the HTML page and the command line's exit code all use."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import cast


class Outcome(StrEnum):
    """The outcome of one vector (or `properties` item). Its value is the word reports use."""

    PASSED = "passed"
    FAILED = "failed"      # the candidate ran, and its state or returns are wrong
    ERRORED = "errored"    # the candidate (or the suite) broke before a verdict
    SKIPPED = "skipped"    # not run: not applicable here, or the candidate chose not to (SkipKind)
    XFAILED = "xfailed"    # failed or errored, as the candidate's expectations file says

    @property
    def failing(self) -> bool:
        """A verdict against the run: failed or errored."""
        return self in (Outcome.FAILED, Outcome.ERRORED)

    @property
    def has_details(self) -> bool:
        """Carries a message worth reading (a diff, or what broke): failing, or xfailed."""
        return self.failing or self is Outcome.XFAILED


class SkipKind(StrEnum):
    """Why a result was skipped. Its value is the word reports use (a result's `skip`).

    The first three do not apply to the run (the candidate could not have been judged on them);
    the last two do, and the candidate chose not to be judged on them: a run that judges none
    of its applicable results has shown nothing, however green.
    """

    RANGE = "range"          # holds for another protocol range than the one judged
    PROFILE = "profile"      # written for the other key profile
    NEEDS = "needs"          # needs what this server or profile lacks (hash tags, a Redis version)
    EXPECTED = "expected"    # listed as skip in the candidate's expectations file
    CANDIDATE = "candidate"  # the candidate does not support one of its ops

    @property
    def applicable(self) -> bool:
        """The vector applies to the run: skipping it was the candidate's choice."""
        return self in (SkipKind.EXPECTED, SkipKind.CANDIDATE)

    @property
    def label(self) -> str:
        """A few words for the kind in a tally (`not applicable: other protocol ranges`)."""
        return _SKIP_LABELS[self]


_SKIP_LABELS = {SkipKind.RANGE: "other protocol ranges", SkipKind.PROFILE: "other profile",
                SkipKind.NEEDS: "unmet needs", SkipKind.EXPECTED: "expectations file",
                SkipKind.CANDIDATE: "unsupported ops"}


@dataclass(frozen=True)
class Skip:
    """Why a result was skipped, as data: its kind, the line that says why, and the ops the
    candidate skipped in it. Made where the skip is decided, carried on the verdict and in
    the result's report as it is (the kind and ops as user properties, the reason as pytest's
    skip reason); the terminal and the reports render it, never reading its words back.

    The wordings that are the suite's own are made here (`other_range`, `unsupported`,
    `expected`), beside the line a summary counts them under (`group`).
    """

    kind: SkipKind
    #: The line that says why: pytest's skip reason, a vector's message in the JSON report.
    reason: str
    #: The ops the candidate does not support, when it skipped for them (CANDIDATE).
    ops: tuple[str, ...] = ()
    #: The protocol judged (`6.7.0`), where the result has one: a RANGE skip is counted under
    #: it with every other range's (`group`).
    protocol: str | None = None

    @classmethod
    def other_range(cls, span: str, protocol: str) -> Skip:
        """A vector whose range (`span`) does not hold the protocol judged."""
        return cls(SkipKind.RANGE,
                   f"holds for bullmq {span}, not the protocol judged ({protocol})",
                   protocol=protocol)

    @classmethod
    def unsupported(cls, ops: Sequence[str], why: str | None = None) -> Skip:
        """The candidate does not support `ops` (none named: any op), for `why` if it says."""
        text = f"candidate does not support {', '.join(ops) or 'any op'}"
        return cls(SkipKind.CANDIDATE, text if why is None else f"{text}: {why}", tuple(ops))

    @classmethod
    def expected(cls, entry: str) -> Skip:
        """Listed as skip in the candidate's expectations file (`entry` describes the line)."""
        return cls(SkipKind.EXPECTED, f"expected skip: {entry}")

    @property
    def group(self) -> str:
        """The line the skip is counted under in a summary: every vector of another protocol
        range together (with the protocol judged), any other skip by its reason."""
        if self.kind is SkipKind.RANGE and self.protocol is not None:
            return f"holds for another protocol range, not the protocol judged ({self.protocol})"
        return self.reason


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

    @classmethod
    def of_totals(cls, totals: Mapping[str, object]) -> Tally:
        """The outcome counts of a report's `totals` (which hold other counts besides)."""
        return cls(**{outcome.value: int(cast(int, totals[outcome.value]))
                      for outcome in Outcome})

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
        """The results that ran to a verdict: all but the skipped ones (what a pass rate counts;
        `Coverage` tells the skips that do not apply from those the candidate chose)."""
        return self.total - self.skipped

    @property
    def pass_rate(self) -> float | None:
        """passed / applicable, or None when nothing was applicable."""
        return self.passed / self.applicable if self.applicable else None


#: One result as `Coverage` counts it: its outcome, its skip kind (None unless skipped), and the
#: ops the candidate skipped in it.
Counted = tuple[Outcome, SkipKind | None, Sequence[str]]


@dataclass(frozen=True)
class Coverage:
    """How much of a run was judged: its tally, its skips by kind, and the ops the candidate
    skipped, each with the number of results in which it did.

    A skipped result of no known kind counts as the candidate's: a skip nobody can explain
    must not make a run look complete.
    """

    tally: Tally = Tally()
    #: Skips by kind, in SkipKind order, kinds without any left out.
    skips: tuple[tuple[SkipKind, int], ...] = ()
    #: (op, results in which the candidate skipped it), most first, then by name.
    skipped_ops: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, results: Iterable[Counted]) -> Coverage:
        """Count `results`."""
        outcomes: list[Outcome] = []
        kinds: Counter[SkipKind] = Counter()
        ops: Counter[str] = Counter()
        for outcome, kind, skipped in results:
            outcomes.append(outcome)
            if outcome is Outcome.SKIPPED:
                kinds[kind or SkipKind.CANDIDATE] += 1
            ops.update(set(skipped))
        return cls(Tally.of(outcomes), tuple((k, kinds[k]) for k in SkipKind if kinds[k]),
                   tuple(sorted(ops.items(), key=lambda item: (-item[1], item[0]))))

    def skipped(self, kind: SkipKind) -> int:
        """Results skipped for `kind`."""
        return dict(self.skips).get(kind, 0)

    @property
    def not_applicable(self) -> int:
        """Skipped results that do not apply to the run."""
        return sum(count for kind, count in self.skips if not kind.applicable)

    @property
    def by_candidate(self) -> int:
        """Applicable results the candidate chose not to be judged on."""
        return sum(count for kind, count in self.skips if kind.applicable)

    @property
    def applicable(self) -> int:
        """Results that apply to the run: judged, or skipped by the candidate."""
        return self.tally.total - self.not_applicable

    @property
    def judged(self) -> int:
        """Results that ran to a verdict (passed, failed, errored or xfailed)."""
        return self.applicable - self.by_candidate

    def totals(self) -> dict[str, object]:
        """A report's `totals`: the outcome counts, then applicable, judged, the two kinds of
        skips, and {op: results} of the ops the candidate skipped."""
        return {**self.tally.as_dict(), "applicable": self.applicable, "judged": self.judged,
                "skipped_not_applicable": self.not_applicable,
                "skipped_by_candidate": self.by_candidate,
                "skipped_ops": dict(self.skipped_ops)}

    def required_skipped(self, required: Iterable[str]) -> tuple[tuple[str, int], ...]:
        """The ops of `required` the candidate skipped, with their counts."""
        wanted = set(required)
        return tuple((op, count) for op, count in self.skipped_ops if op in wanted)

    def problem(self, required: Iterable[str] = ()) -> str | None:
        """Why a run that nothing failed must still not pass, in one line; None when it may.

        A run that judged none of its results (every applicable one skipped by the candidate,
        or none applicable at all) has shown nothing. With `required` (`--require-ops`), any
        result in which the candidate skipped one of those ops fails the run too.
        """
        if self.tally.total and not self.judged:
            if not self.applicable:
                kinds = ", ".join(kind.label for kind, _ in self.skips)
                return (f"nothing was judged: no selected vector applies to this run "
                        f"({vectors(self.tally.total)} not applicable: {kinds})")
            why = []
            if self.skipped_ops:
                why.append(f"ops it skipped: {ops_text(self.skipped_ops, counts=False)}")
            if self.skipped(SkipKind.EXPECTED):
                why.append(f"{vectors(self.skipped(SkipKind.EXPECTED))} listed as skip in "
                           "its expectations file")
            every = ("the 1 applicable vector" if self.applicable == 1
                     else f"all {self.applicable} applicable vectors")
            return f"nothing was judged: the candidate skipped {every} ({'; '.join(why)})"
        missed = self.required_skipped(required)
        if missed:
            return f"the candidate skipped ops that --require-ops requires: {ops_text(missed)}"
        return None


#: Ops named in one line before the rest are only counted.
_OPS_SHOWN = 6


def ops_text(ops: Sequence[tuple[str, int]], counts: bool = True) -> str:
    """`changeDelay (12 vectors), addLog (1 vector)`, or without counts `changeDelay, addLog`;
    past six ops, `and N more`."""
    shown = [f"{op} ({vectors(count)})" if counts else op for op, count in ops[:_OPS_SHOWN]]
    if len(ops) > _OPS_SHOWN:
        shown.append(f"and {len(ops) - _OPS_SHOWN} more")
    return ", ".join(shown)


def vectors(count: int) -> str:
    """`1 vector`, `12 vectors`."""
    return f"{count} vector{'' if count == 1 else 's'}"
