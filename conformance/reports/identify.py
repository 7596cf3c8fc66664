"""Which protocol range a candidate speaks, from its verdicts at every range.

An `identify` run judges each vector at each part of its range (see `conformance.plugin.hooks`:
split where the candidate's own calling convention changes). The boundaries of those parts cut
the supported versions into eras, in each of which every judgement is the same. A candidate fits
an era when every vector that holds in it passed; the fitting eras, merged where adjacent, are
the range it speaks. The vectors that separate that range from its neighbours are the evidence.
When no era fits, the closest one names the port's remaining differences: its bugs. Closest is
the smallest share of the era's judged vectors that did not pass (then the most passes, then
the newest): eras hold different numbers of vectors (the 6.x ones hold the worker half, the
flows and the schedulers), so a count of failures alone would favour the era where the least
was judged, whatever the port speaks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.core.outcomes import Outcome
from reference_impl import versions
from reference_impl.versions import Range, Version

#: How many vectors of a list the text report shows.
SHOWN = 5
#: The key whose absence marks a port older than the marker zset (BullMQ 5.0.0).
MARKER_KEY = "marker"


@dataclass(frozen=True)
class Judged:
    """One judgement: a vector, the part of its range it stands for, the outcome."""

    vector_id: str
    span: Range
    outcome: Outcome


@dataclass(frozen=True)
class Era:
    """A span of versions in which every judgement is the same: how many vectors passed, and
    which failed (a state difference) or errored (the candidate broke: no evidence either way)."""

    span: Range
    passed: int
    failing: tuple[str, ...]
    errored: tuple[str, ...] = ()

    @property
    def fits(self) -> bool:
        """Every vector that holds here passed (and at least one ran)."""
        return self.passed > 0 and not self.failing and not self.errored

    @property
    def misses(self) -> int:
        """Vectors that did not pass."""
        return len(self.failing) + len(self.errored)

    @property
    def miss_share(self) -> float:
        """The share of the era's judged vectors that did not pass (1 when none was judged)."""
        judged = self.misses + self.passed
        return self.misses / judged if judged else 1.0


@dataclass(frozen=True)
class Identification:
    """What `identify` found (`as_dict` is the `--json` form)."""

    candidate: str
    protocol: Range | None
    closest: Era | None
    older_than_supported: bool
    reason: str = ""
    also: tuple[Range, ...] = ()
    #: Other ranges exactly as close as `closest` (no vector that passed tells them apart).
    tied: tuple[Range, ...] = ()
    #: The eras just before and just after `protocol`, whose failures tell it from them.
    before: Era | None = None
    after: Era | None = None

    @property
    def evidence(self) -> tuple[str, ...]:
        """The vectors that separate the range from the ranges beside it: those that fail
        just before it or just after it (and pass in it)."""
        found: set[str] = set()
        for era in (self.before, self.after):
            if era is not None:
                found.update(era.failing)
        return tuple(sorted(found))

    def as_dict(self) -> dict[str, Any]:
        """`{"candidate", "protocol", "closest", "evidence", "older_than_supported"}`."""
        closest = None
        if self.closest is not None:
            closest = {**self.closest.span.as_dict(), "failed": list(self.closest.failing),
                       "errored": list(self.closest.errored)}
        return {"candidate": self.candidate,
                "protocol": self.protocol.as_dict() if self.protocol else None,
                "closest": closest, "evidence": list(self.evidence),
                "older_than_supported": self.older_than_supported}


def judged_from_report(results: Iterable[Mapping[str, Any]]) -> list[Judged]:
    """The judgements of a JSON report's results (those with a range; skips left out)."""
    out = []
    for result in results:
        span = result.get("range")
        outcome = Outcome(result["outcome"])
        if span is None or outcome in (Outcome.SKIPPED, Outcome.XFAILED):
            continue
        until = span.get("until")
        out.append(Judged(result["id"].split("@", 1)[0],
                          Range(versions.parse(span["since"]),
                                versions.parse(until) if until else None), outcome))
    return out


def eras(judged: list[Judged]) -> list[Era]:
    """Every era the judgements' ranges cut the supported versions into, oldest first."""
    cuts = {versions.EARLIEST}
    for item in judged:
        cuts.add(item.span.since)
        if item.span.until is not None:
            cuts.add(item.span.until)
    edges = sorted(cut for cut in cuts if versions.supported(cut))
    out = []
    for since, until in zip(edges, [*edges[1:], None], strict=True):
        here = [item for item in judged if item.span.holds(since)]
        failed = sorted({i.vector_id for i in here if i.outcome is Outcome.FAILED})
        errored = sorted({i.vector_id for i in here if i.outcome is Outcome.ERRORED})
        out.append(Era(Range(since, until), sum(1 for i in here if i.outcome is Outcome.PASSED),
                       tuple(failed), tuple(errored)))
    return out


def _merged(fitting: list[Era]) -> list[Range]:
    ranges: list[Range] = []
    for era in fitting:
        if ranges and ranges[-1].until == era.span.since:
            ranges[-1] = Range(ranges[-1].since, era.span.until)
        else:
            ranges.append(era.span)
    return ranges


def identify(candidate: str, judged: list[Judged],
             marker_vectors: frozenset[str] = frozenset()) -> Identification:
    """Name the range `judged` fits, or the closest one and what differs there.

    `marker_vectors` are the vectors that expect the marker zset. A candidate that fails all
    of them writes no marker zset, as BullMQ did before 5.0.0, but so does a queue that is not
    BullMQ at all (the textbook pattern): the result then says so as a hint, and is not called
    older than supported, which only a scripts directory's 4.x files prove.
    """
    all_eras = eras(judged)
    ranges = _merged([era for era in all_eras if era.fits])
    if ranges:
        chosen = ranges[-1]
        closest = Era(chosen, sum(e.passed for e in all_eras if chosen.holds(e.span.since)), ())
        before = [e for e in all_eras if e.span.until == chosen.since]
        after = [e for e in all_eras if chosen.until is not None and e.span.since == chosen.until]
        return Identification(candidate, chosen, closest, False, also=tuple(ranges[:-1]),
                              before=before[0] if before else None,
                              after=after[0] if after else None)
    if not all_eras or not any(era.passed for era in all_eras):
        return Identification(candidate, None, None, False, "no vector passed at any range")
    failed_markers = {i.vector_id for i in judged if i.vector_id in marker_vectors
                      and i.outcome.failing}
    passed_markers = {i.vector_id for i in judged if i.vector_id in marker_vectors
                      and i.outcome is Outcome.PASSED}
    hint = ""
    if marker_vectors and failed_markers and not passed_markers:
        hint = (f"it writes no marker zset where every 5.x and 6.x release does "
                f"({len(failed_markers)} vectors): BullMQ before "
                f"{versions.text(versions.EARLIEST)} did not either, nor "
                "does a queue that is not BullMQ")
    best = min(all_eras, key=lambda era: (era.miss_share, -era.passed,
                                           _newest_first(era.span.since)))
    closest = _widened(best, all_eras)
    tied = tuple(era.span for era in all_eras if not closest.span.overlaps(era.span)
                 and (era.misses, era.passed) == (closest.misses, closest.passed))
    return Identification(candidate, None, closest, False, hint, tied=tied)


def _widened(best: Era, all_eras: list[Era]) -> Era:
    """`best` with the adjacent eras that look the same to the candidate (the same passes,
    failures and errors): no vector that ran tells them apart, so neither is named alone."""

    def look(era: Era) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
        return era.passed, era.failing, era.errored

    low = high = all_eras.index(best)
    while low > 0 and look(all_eras[low - 1]) == look(best):
        low -= 1
    while high + 1 < len(all_eras) and look(all_eras[high + 1]) == look(best):
        high += 1
    span = Range(all_eras[low].span.since, all_eras[high].span.until)
    return Era(span, best.passed, best.failing, best.errored)


def _newest_first(version: Version) -> tuple[int, ...]:
    return tuple(-part for part in version)


def text_report(found: Identification) -> list[str]:
    """The lines `identify` prints."""
    lines = [f"candidate: {found.candidate}"]
    if found.older_than_supported:
        lines.append(f"older than the earliest supported protocol "
                     f"({versions.text(versions.EARLIEST)}): {found.reason}")
        return lines
    if found.protocol is not None:
        lines.append(f"speaks the protocol of npm bullmq {found.protocol} "
                     f"(every vector of that range passed)")
        for other in found.also:
            lines.append(f"  it also fits {other}")
        for side, era in (("older", found.before), ("newer", found.after)):
            if era is None:
                lines.append(f"no {side} range is known to the suite")
                continue
            lines.append(f"not the {side} range {era.span}: {len(era.failing)} of its vectors "
                         f"fail, e.g.")
            lines += [f"  {vector_id}" for vector_id in era.failing[:SHOWN]]
        return lines
    if found.closest is None:
        lines.append(f"no protocol range fits: {found.reason}")
        return lines
    closest = found.closest
    if found.reason:
        lines.append(f"note: {found.reason}")
    lines.append(f"no protocol range fits; the closest is npm bullmq {closest.span}, where "
                 f"{len(closest.failing)} vectors fail (the port's differences from that "
                 f"release) and {len(closest.errored)} error (the candidate broke: no verdict)")
    lines += [f"  as close: npm bullmq {span}" for span in found.tied]
    lines += [f"  failed: {vector_id}" for vector_id in closest.failing]
    lines += [f"  errored: {vector_id}" for vector_id in closest.errored]
    return lines
