"""What each ARGV position of a BullMQ 6.x script carries, as the `scripts:` candidate sends it
(npm bullmq 6.7.0 and the pinned PyPI bullmq send the same), and which scripts each vector op
calls.

The spec prints these beside the KEYS layouts (`scripts.LAYOUTS`); a test replays the vectors
through the `scripts:` candidate and checks every call against them, so they cannot drift from
the calls the suite makes.
"""

from __future__ import annotations

from reference_impl.getter_ops import PLAIN_READS
from reference_impl.ops import OP_NAMES
from reference_impl.scheduler_ops import CLIENT_SIDE

#: Marks an ARGV entry the caller may leave off (only trailing entries are optional).
OPTIONAL = " (optional)"
#: Marks a last ARGV entry that stands for one or more entries of its kind.
REPEATED = " (one or more)"
_FIELDS = "msgpack [field, value, ...] of job fields to write, or \"\""

#: ARGV of each script, by name, in position order.
ARGV: dict[str, tuple[str, ...]] = {
    "addStandardJob": (
        "msgpack [BASE, custom job id or \"\", name, timestamp, parent key, parent "
        "dependencies key, parent record, repeat job key, deduplication key, and from 6.5.1 "
        "1 in a flow insert (defer the parent's release)]",
        "the job data as JSON text, stored verbatim",
        "msgpack map of the job opts (delay, priority, lifo, de, ...)",
    ),
    "moveToActive": ("BASE", "now (ms)",
                     "msgpack {token, lockDuration, limiter: {max, duration}?, name?}"),
    "promote": ("BASE", "job id"),
    "changeDelay": ("delay (ms)", "now (ms)", "job id", "the job's key"),
    "changePriority": ("priority", "BASE", "job id", "lifo: \"1\" or \"0\""),
    "moveToDelayed": ("BASE", "now (ms)", "job id", "token (\"0\": no lock check)",
                      "delay (ms)", "skipAttempt: \"1\" or \"0\"", _FIELDS,
                      "fetchNext: \"1\" or \"0\"",
                      "msgpack fetch opts {token, lockDuration}, with fetchNext" + OPTIONAL),
    "pause": ("\"paused\" or \"resumed\" (resume swaps KEYS[1] and KEYS[2])",),
    "moveToFinished": ("job id", "now (ms)", "\"returnvalue\" or \"failedReason\"",
                       "the value, as sent", "target: \"completed\" or \"failed\"",
                       "fetchNext: \"1\" or \"0\"", "BASE",
                       "msgpack {token, lockDuration, limiter?, keepJobs, attempts, "
                       "maxMetricsSize}", _FIELDS),
    "retryJob": ("BASE", "now (ms)", "\"LPUSH\" or \"RPUSH\" (lifo)", "job id", "token",
                 _FIELDS + OPTIONAL),
    "extendLock": ("token", "duration (ms)", "job id"),
    "extendLocks": ("BASE", "msgpack [token, ...]", "msgpack [job id, ...]", "duration (ms)"),
    "releaseLock": ("token", "lock duration (unused)"),
    "moveStalledJobsToWait": ("maxStalledCount", "BASE", "now (ms)", "stalledInterval (ms)"),
    "moveJobFromActiveToWait": ("job id", "token", "the job's key"),
    "getRateLimitTtl": ("maxJobs (0: meta.max)",),
    "removeDeduplicationKey": ("job id",),
    "removeJob": ("job id", "removeChildren: \"1\" or \"0\"", "BASE"),
    "updateProgress": ("job id", "progress as JSON text"),
    "updateData": ("data as JSON text",),
    "addLog": ("job id", "the log row", "keepLogs, or \"\" for all"),
    "moveToWaitingChildren": ("token", "the child's key `<queue>:<id>`, or \"\" for any",
                              "now (ms)", "job id", "BASE"),
    "getDependencyCounts": ("\"processed\", \"unprocessed\", \"ignored\" or \"failed\": the "
                            "counts wanted, in order" + REPEATED,),
    "removeChildDependency": ("the job's key", "the parent's key"),
    "removeUnprocessedChildren": ("BASE", "job id"),
    "releaseParentIfNoPendingDependencies": ("the parent's queue key (`<prefix>:<name>`)",
                                             "the parent's id", "now (ms)"),
    "addJobScheduler": ("next fire time (ms) from the client's cron library, or \"\" for "
                        "every (computed by the script)",
                        "msgpack {name, tz?, pattern?, every?, startDate?, endDate?, limit?, "
                        "offset?}", "scheduler id", "the template data as JSON text",
                        "msgpack map of the template job opts",
                        "msgpack map of this iteration's opts (repeat, repeatJobKey, ...)",
                        "now (ms)", "BASE", "the producer job's key, or \"\""),
    "updateJobScheduler": ("next fire time (ms) from the client (every: computed by the "
                           "script)", "scheduler id", "the template data (unused)",
                           "msgpack map of the next iteration's opts", "now (ms)", "BASE",
                           "the producer job's id"),
    "removeJobScheduler": ("scheduler id", "BASE"),
    "getJobScheduler": ("scheduler id",),
    "addRepeatableJob": ("next fire time (ms) from the client",
                         "msgpack {name, endDate?, tz?, pattern?, every?}",
                         "the concatenated key `name:jobId:endDate:tz:pattern-or-every`",
                         "the repeat key (md5 of the concatenated key, or repeat.key)", "BASE"),
    "updateRepeatableJobMillis": ("next fire time (ms) from the client", "the repeat key",
                                  "the concatenated key"),
    "removeRepeatable": ("the legacy iteration id prefix `repeat:<checksum>:`",
                         "the concatenated key (a repeat.key with colons: that key)",
                         "the repeat key (before 5.10.0: BASE)",
                         "BASE (from 5.10.0)" + OPTIONAL),
    "getCounts": ("state names, counted in order; from 6.7.0 a cutoff (ms) for the delayed "
                  "count may come first" + REPEATED,),
    "getCountsPerPriority": ("priorities, counted in order" + REPEATED,),
    "getState": ("job id",),
    "getStateV2": ("job id",),
    "getRanges": ("start", "end", "\"1\" ascending, \"0\" descending",
                  "state names, read in order" + REPEATED),
    "getJobs": ("start", "end", "\"1\" ascending, \"0\" descending",
                "the most reads per state (backfill bound; the Node client's 5)",
                "state names, read in order" + REPEATED),
    "paginate": ("page start", "page end (-1: to the last item)", "SSCAN/HSCAN cursor",
                 "offset: the items scanned before", "the most scans", "present (the Node "
                 "client's 1) to fetch each item's job hash" + OPTIONAL),
    "isFinished": ("job id", "\"1\" to answer the returnvalue or failedReason too, else \"\""),
    "isJobInList": ("job id",),
    "isMaxed": (),
    "getMetrics": ("start", "end"),
    "drain": ("BASE", "\"1\" to drain delayed jobs too, else \"0\""),
    "cleanJobsInSet": ("BASE", "the timestamp (ms): jobs older are cleaned",
                       "the most jobs to clean, 0 for all",
                       "the set: wait, paused, active, delayed, prioritized, completed or failed"),
    "obliterate": ("the most jobs to remove in this call", "\"force\" to remove active jobs "
                   "too, else \"\""),
    "moveJobsToWait": ("the most jobs to move", "the highest score moved (promoteJobs: "
                       "Number.MAX_VALUE as text)", "the state: failed, completed or delayed"),
    "reprocessJob": ("job id", "\"LPUSH\", or \"RPUSH\" for lifo",
                     "the field to drop: failedReason or returnvalue",
                     "the state: failed or completed", "\"1\" to drop atm, else \"0\"",
                     "\"1\" to drop ats, else \"0\""),
    "saveStacktrace": ("the stacktrace (JSON text)", "the failedReason"),
    "removeOrphanedJobs": ("N, the number of state key names", "the N state key names",
                           "M, the number of job sub-key names", "the M sub-key names",
                           "candidate job ids" + REPEATED),
}
ARGV["addDelayedJob"] = ARGV["addPrioritizedJob"] = ARGV["addParentJob"] = ARGV["addStandardJob"]

#: The scripts a vector op may call: an add is routed like the Node client (delay > 0, else a
#: priority, else standard); resume runs the pause script; the plain reads run none.
OP_SCRIPTS: dict[str, tuple[str, ...]] = {
    **{name: (name,) for name in OP_NAMES},
    **{name: () for name in CLIENT_SIDE},
    **{name: () for name in PLAIN_READS},
    "add": ("addStandardJob", "addDelayedJob", "addPrioritizedJob"),
    "pickUpIteration": ("updateJobScheduler",),
    "getState": ("getStateV2", "getState"),
    "upsertJobScheduler": ("addJobScheduler",),
    "resume": ("pause",),
    "addFlow": ("addParentJob", "addStandardJob", "addDelayedJob", "addPrioritizedJob",
                "releaseParentIfNoPendingDependencies"),
}


def argv_counts(script: str) -> tuple[int, float]:
    """The fewest and the most ARGV entries a call of `script` carries (no most: inf)."""
    entries = ARGV[script]
    most = float("inf") if entries and entries[-1].endswith(REPEATED) else len(entries)
    return sum(1 for e in entries if not e.endswith(OPTIONAL)), most
