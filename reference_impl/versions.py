"""Protocol versions: the npm `bullmq` releases at which a fact the vectors check changed.

A protocol version is an npm `bullmq` version (PyPI releases are named by the npm range whose
scripts they ship). Every vector holds over a range `[since, until)`; the model takes a version
and behaves as that release's scripts (and, where the caller computes part of the state, that
release's Node client) do. The boundaries below were each checked against the npm releases on
both sides of it (docs/RESEARCH.md §1.1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, int, int]

_VERSION = re.compile(r"(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})")


def parse(text: str) -> Version:
    """`"5.8.6"` -> `(5, 8, 6)`; ValueError (one line) for anything else."""
    match = _VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{text!r} is not a version (MAJOR.MINOR.PATCH, e.g. 5.8.6)")
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def text(version: Version) -> str:
    """`(5, 8, 6)` -> `"5.8.6"`."""
    return ".".join(str(part) for part in version)


#: The earliest protocol the vectors cover: the marker zset and the 5.x script shapes.
EARLIEST: Version = (5, 0, 0)
#: The earliest release the worker half's vectors claim (complete, fail, retry, locks, stalls,
#: rate limits, deduplication, removal, job updates): they were checked on 6.x releases.
WORKER_SINCE: Version = (6, 0, 0)
#: The newest release checked; `run` judges against it unless `--protocol` says otherwise.
CURRENT: Version = (6, 7, 0)
#: Versions from here on are not claimed: a new major may change anything.
BEYOND: Version = (7, 0, 0)

# --- boundaries that change Redis state (first npm version with the change) ------------------
#: moveToDelayed writes the opts.maxLenEvents default into meta (before: read only).
MAX_EVENTS_ON_MOVE: Version = (5, 1, 1)
#: changeDelay-4: refreshes the delayed marker and writes the events default.
CHANGE_DELAY_MARKER: Version = (5, 1, 9)
#: The delayed marker is member "1"; before, it rewrote member "0".
DELAY_MARKER_MEMBER: Version = (5, 1, 10)
#: moveToDelayed: a foreign lock is -6 (was -2), and the job leaves `stalled`.
LOCK_MISMATCH_CODE: Version = (5, 5, 4)
#: The priority counter is taken mod 2^32 (before: Lua BitOp's signed 32-bit band).
PRIORITY_MODULO: Version = (5, 8, 1)
#: changePriority: priority 0 moves a job to wait, lifo pushes back; before, it re-added it.
CHANGE_PRIORITY_TO_WAIT: Version = (5, 8, 3)
#: getDelayedScore's band bump, the exclusive sweep bound, and scores computed from `now` in
#: the scripts; before, the low 12 bits came from the id counter (or the client's job id).
BAND_BUMP: Version = (5, 8, 6)
#: The delayed marker is written while paused too.
PAUSED_DELAY_MARKER: Version = (5, 8, 7)
#: Global concurrency: a queue at meta.concurrency counts as paused for markers and fetches.
GLOBAL_CONCURRENCY: Version = (5, 9, 0)
#: moveToActive sets marker "0" after activating a job.
ACTIVATION_MARKER: Version = (5, 28, 0)
#: No `paused` list: pause only flags meta; pause returns the count of legacy jobs left.
NO_PAUSED_LIST: Version = (6, 0, 0)
#: removeRepeatable also removes a repeat key that is not the concatenation (the md5 the
#: client now stores), with its hash, and removes an iteration with all its keys (before: only
#: a concatenated key, and the iteration's hash alone).
REPEAT_KEY_HASH: Version = (5, 10, 0)
#: removeRepeatable-3: removing a repeat key that is not the concatenation deletes its hash
#: `repeat:<key>` too (removeRepeatable-2 of 5.10.0 to 5.10.3 left it).
REPEAT_HASH_REMOVED: Version = (5, 10, 4)
#: addRepeatableJob keeps the delayed iteration it would replace when the job of the new fire
#: time already exists (re-adding at the same fire time keeps the iteration).
REPEAT_NEXT_EXISTS: Version = (5, 13, 2)
#: A fetch does not count a job carrying a deferred stall failure (defa) against the limiter.
DEFERRED_FAILURE_UNCOUNTED: Version = (6, 2, 2)
#: An add takes over a deduplication key without expiry whose job is gone (a stale key).
STALE_DEDUP_KEY: Version = (6, 3, 7)
#: A retried finished job goes back where it came from: reprocessJob puts a job with a priority
#: in prioritized (before: wait), and moveJobsToWait puts a retried child back in its parent's
#: dependencies, as reprocessJob did already (6.3.12 to 6.3.14 were never published).
RETRY_RESTORES_DEPENDENCY: Version = (6, 3, 15)
#: Flow inserts defer their parents' release to the end (releaseParentIfNoPendingDependencies),
#: and a custom id whose parent is gone is adopted by the new parent of a child add (before: a
#: completed duplicate child released its parent at once, and a job kept a gone parent).
FLOW_DEFERRED_RELEASE: Version = (6, 5, 1)

# --- boundaries of the calling convention only (no state of their own) -----------------------
#: changePriority's ARGV[2] is BASE (before: the job's full key).
CHANGE_PRIORITY_BASE: Version = (5, 13, 2)

# --- the legacy repeatable jobs' range (reference_impl.repeatable_ops) -----------------------
#: addRepeatableJob-2 (5 ARGV) and updateRepeatableJobMillis-1: the key's options hashed in
#: `repeat:<key>` (before: the client ZADDed the key itself, then addRepeatableJob-1 and a
#: 5.10.0 addRepeatableJob-2 of another layout).
REPEATABLE_SCRIPTS: Version = (5, 12, 13)
#: The repeatable job scripts are gone: job schedulers replace them.
REPEATABLES_REMOVED: Version = NO_PAUSED_LIST
#: The releases that removed ops: the newest range of a fact about such an op ends there.
REMOVALS: tuple[Version, ...] = (REPEATABLES_REMOVED,)
# --- the first releases of the getters' scripts and arguments (reference_impl.getter_ops) ----
#: getCountsPerPriority (-2 up to 5.8.2, then -4 with wait, paused, meta and prioritized as
#: KEYS, -2 again from 6.1.1).
PRIORITY_COUNTS: Version = (5, 8, 0)
#: getMetrics-2.
METRICS_SCRIPT: Version = (5, 58, 9)
#: getCounts' optional first argument: a cutoff for the delayed count.
COUNTS_CUTOFF: Version = (6, 7, 0)
#: getJobs-1: ids and their hashes in one script (before: getRanges, then a read per job).
GET_JOBS_SCRIPT: Version = (5, 81, 1)

#: Where a fact's earliest range may start: the earliest supported version, or the first
#: release of the scripts it calls that was checked (`Case.since`).
FLOORS: tuple[Version, ...] = (EARLIEST, PRIORITY_COUNTS, GLOBAL_CONCURRENCY,
                               REPEATABLE_SCRIPTS, METRICS_SCRIPT, WORKER_SINCE, COUNTS_CUTOFF,
                               GET_JOBS_SCRIPT)

#: Every state boundary, in order: the eras the generator runs the model at.
STATE_BOUNDARIES: tuple[Version, ...] = (
    EARLIEST, MAX_EVENTS_ON_MOVE, CHANGE_DELAY_MARKER, DELAY_MARKER_MEMBER, LOCK_MISMATCH_CODE,
    PRIORITY_MODULO, CHANGE_PRIORITY_TO_WAIT, BAND_BUMP, PAUSED_DELAY_MARKER,
    GLOBAL_CONCURRENCY, REPEAT_KEY_HASH, REPEAT_HASH_REMOVED, REPEAT_NEXT_EXISTS,
    ACTIVATION_MARKER, NO_PAUSED_LIST, DEFERRED_FAILURE_UNCOUNTED, STALE_DEDUP_KEY,
    RETRY_RESTORES_DEPENDENCY, FLOW_DEFERRED_RELEASE,
)


@dataclass(frozen=True, order=True)
class Range:
    """`[since, until)` in npm versions; `until` None means "still true"."""

    since: Version
    until: Version | None = None

    def holds(self, version: Version) -> bool:
        """Whether `version` is in the range."""
        return self.since <= version and (self.until is None or version < self.until)

    def overlaps(self, other: Range) -> bool:
        """Whether the two ranges share a version."""
        return ((other.until is None or self.since < other.until)
                and (self.until is None or other.since < self.until))

    def __str__(self) -> str:
        if self.until is None:
            return f"{text(self.since)} on"
        return f"{text(self.since)} up to {text(self.until)}"

    def as_dict(self) -> dict[str, str | None]:
        """`{"since": ..., "until": ... or None}`."""
        return {"since": text(self.since), "until": text(self.until) if self.until else None}


#: Every supported version.
ALWAYS = Range(EARLIEST)


def supported(version: Version) -> bool:
    """Whether the suite can judge a port against `version`."""
    return EARLIEST <= version < BEYOND


def check_supported(raw: str) -> Version:
    """Parse a `--protocol` value; ValueError naming the supported span otherwise."""
    version = parse(raw)
    if not supported(version):
        raise ValueError(f"protocol {raw} is outside the supported versions "
                         f"{text(EARLIEST)} up to (not including) {text(BEYOND)}")
    return version


#: What the protocol did before each state boundary, in a clause (vector descriptions).
BEFORE: dict[Version, str] = {
    MAX_EVENTS_ON_MOVE: "moveToDelayed only read meta's events cap",
    CHANGE_DELAY_MARKER: "changeDelay-3 wrote no marker and no events cap",
    DELAY_MARKER_MEMBER: "the delayed marker rewrote member \"0\"",
    LOCK_MISMATCH_CODE: "moveToDelayed answered a foreign lock with -2",
    PRIORITY_MODULO: "the priority counter wrapped to a signed 32-bit int",
    CHANGE_PRIORITY_TO_WAIT: "changePriority re-added a job with a fresh counter, even for 0",
    BAND_BUMP: "delayed scores carried 12 low bits of an id and the sweep bound was inclusive",
    PAUSED_DELAY_MARKER: "delayed writes skipped the marker while paused",
    GLOBAL_CONCURRENCY: "meta.concurrency was ignored",
    REPEAT_KEY_HASH: "removeRepeatable removed only a concatenated key, and an iteration's "
    "hash alone",
    REPEAT_HASH_REMOVED: "removeRepeatable left the hash of a repeat key it removed",
    REPEAT_NEXT_EXISTS: "addRepeatableJob removed the delayed iteration even when the new "
    "fire time's job existed",
    ACTIVATION_MARKER: "moveToActive wrote no marker after activating a job",
    NO_PAUSED_LIST: "pause renamed wait to paused, adds went to paused, pause returned nothing",
    DEFERRED_FAILURE_UNCOUNTED: "a fetch counted a job carrying defa against the rate limiter",
    STALE_DEDUP_KEY: "a deduplication key whose job was gone still deduplicated to it",
    RETRY_RESTORES_DEPENDENCY: "reprocessJob ignored a priority; a bulk-retried child stayed "
    "done",
    FLOW_DEFERRED_RELEASE: "a completed child released its parent mid-flow, and a gone "
    "parent was kept",
}


def split(span: Range, at: tuple[Version, ...]) -> list[Range]:
    """`span` cut at every version of `at` that lies strictly inside it, in order."""
    cuts = sorted(v for v in at if span.since < v and (span.until is None or v < span.until))
    edges = [span.since, *cuts]
    return [Range(a, b) for a, b in zip(edges, [*cuts, span.until], strict=True)]


def supported_ranges() -> list[Range]:
    """The eras between state boundaries, the last one ending at BEYOND."""
    ends = (*STATE_BOUNDARIES[1:], BEYOND)
    return [Range(since, until) for since, until in zip(STATE_BOUNDARIES, ends, strict=True)]


def era_of(version: Version) -> Range:
    """The range of state boundaries around `version`: the model behaves the same in it."""
    since = max(b for b in STATE_BOUNDARIES if b <= version)
    later = [b for b in STATE_BOUNDARIES if b > version]
    return Range(since, later[0] if later else None)
