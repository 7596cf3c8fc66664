"""job-updates: removing a job without children (removeJob-2) and updating one
(updateProgress-3, updateData-1, addLog-2 with keepLogs).

removeJob looks for the job in completed, waiting-children, delayed, failed, prioritized, wait,
paused and active, in that order, deletes it with its hash and the keys hanging off it, and
names the state it left in a `removed` event.
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, T, job_hash, wait_list, zset
from reference_impl.worker_ops import AddLog, RemoveJob, UpdateData, UpdateProgress

NOTES = {
    "remove-state": Flag(
        "missing-write",
        "removeJob takes the job out of the state it is in and emits removed jobId <id> prev "
        "<state> (unknown when the hash is in no state); it returns 1.",
    ),
    "remove-keys": Flag(
        "missing-write",
        "removeJob deletes the hash, :logs, :dependencies, :processed, :failed and "
        ":unsuccessful.",
    ),
    "remove-guards": Flag(
        "lock-stall",
        "removeJob returns 0 and changes nothing while the job holds a lock, -8 for a job "
        "scheduler's current iteration, and 1 with no event for a job that does not exist.",
    ),
    "progress": Flag(
        "event",
        "updateProgress stores the JSON progress in the hash and emits progress jobId <id> "
        "data <json>, trimmed; -1 without a job hash.",
    ),
    "data": Flag(
        "missing-write",
        "updateData replaces the data field with the JSON sent, without an event; -1 without "
        "a job hash.",
    ),
    "logs": Flag(
        "boundary",
        "addLog RPUSHes the row to <id>:logs and, with keepLogs k, keeps the last k rows "
        "(LTRIM -k -1); it returns the list's length after, or -1 without a job hash (no list "
        "is created).",
    ),
}


def _job(state_key: str | None = None, *, job_id: str = "1", **fields: str) -> dict[str, Any]:
    given: dict[str, Any] = {job_id: job_hash({"name": "a", "timestamp": str(T), "delay": "0",
                                               "priority": "0", **fields})}
    if state_key in ("wait", "paused", "active"):
        given[state_key] = wait_list(job_id)
    elif state_key is not None:
        given[state_key] = zset([(job_id, T)])
    return given


def _remove_cases() -> list[Case]:
    cases = [
        Case(f"remove-from-{state}", f"removeJob of a job in {state} empties it and emits "
              f"removed prev {state}.", (RemoveJob("1"),), ("remove-state",), _job(state))
        for state in ("completed", "delayed", "failed", "prioritized", "wait", "paused")
    ]
    return [
        *cases,
        Case("remove-active-unlocked", "removeJob of an active job without a lock removes it "
              "(prev active).", (RemoveJob("1"),), ("remove-state",), _job("active")),
        Case("remove-locked", "removeJob of a locked job returns 0 and changes nothing.",
              (RemoveJob("1"),), ("remove-guards",),
              {**_job("active"), "1:lock": {"string": {"value": "tok", "pttl": 30000}}}),
        Case("remove-missing", "removeJob of a job that does not exist returns 1 with no "
              "event.", (RemoveJob("7"),), ("remove-guards",), _job("wait")),
        Case("remove-stateless", "removeJob of a hash in no state emits removed prev "
              "unknown.", (RemoveJob("1"),), ("remove-state",), _job()),
        # removeChildren false: a seeded :dependencies names children the call must not chase
        Case("remove-job-keys", "removeJob deletes :logs, :dependencies, :processed, "
              ":failed and :unsuccessful with the hash.", (RemoveJob("1", False),),
              ("remove-keys",),
              {**_job("completed"), "1:logs": wait_list("l1"),
               "1:dependencies": {"set": ["bull:q:9"]},
               "1:processed": job_hash({"bull:q:8": "1"}),
               "1:failed": job_hash({"bull:q:7": "boom"}),
               "1:unsuccessful": zset([("bull:q:6", T)])}),
        Case("remove-scheduler-current", "removeJob of a scheduler's current iteration "
              "returns -8.", (RemoveJob("repeat:s1:1700000000000"),), ("remove-guards",),
              {**_job("delayed", job_id="repeat:s1:1700000000000", rjk="s1"),
               "repeat": zset([("s1", T)])}),
        Case("remove-scheduler-past", "removeJob of an older iteration of a scheduler "
              "removes it.", (RemoveJob("repeat:s1:1699999990000"),), ("remove-guards",),
              {**_job("completed", job_id="repeat:s1:1699999990000", rjk="s1"),
               "repeat": zset([("s1", T)])}),
    ]


def _update_cases() -> list[Case]:
    return [
        Case("progress-number", "updateProgress(42) stores 42 and emits progress data 42.",
              (UpdateProgress("1", 42),), ("progress",), _job("active")),
        Case("progress-string", "updateProgress(\"half\") stores the JSON string and emits "
              "it.", (UpdateProgress("1", "half"),), ("progress",), _job("active")),
        Case("progress-replaced", "A second updateProgress replaces the field and emits a "
              "second event.", (UpdateProgress("1", 10), UpdateProgress("1", 90)),
              ("progress",), _job("active")),
        Case("progress-missing-job", "updateProgress without a job hash returns -1 and "
              "writes nothing.", (UpdateProgress("5", 42),), ("progress",), _job("active")),
        Case("data-replaced", "updateData replaces data and emits nothing.",
              (UpdateData("1", {"a": 1}),), ("data",), _job("wait", data='{"old":true}')),
        Case("data-missing-job", "updateData without a job hash returns -1.",
              (UpdateData("5", {"a": 1}),), ("data",), _job("wait")),
        Case("log-appends", "Two addLog calls without keepLogs return 1 and 2.",
              (AddLog("1", "first"), AddLog("1", "second")), ("logs",), _job("active")),
        Case("log-keeps-last", "addLog with keepLogs 3 onto 4 rows keeps the last 3 and "
              "returns 3.", (AddLog("1", "r5", 3),), ("logs",),
              {**_job("active"), "1:logs": wait_list("r1", "r2", "r3", "r4")}),
        Case("log-keep-above-length", "addLog with keepLogs 10 onto 3 rows returns 4.",
              (AddLog("1", "r4", 10),), ("logs",),
              {**_job("active"), "1:logs": wait_list("r1", "r2", "r3")}),
        Case("log-missing-job", "addLog without a job hash returns -1 and creates no list.",
              (AddLog("5", "row"),), ("logs",), _job("active")),
    ]


AREA = Area(
    "job-updates",
    "Removing a job without children (removeJob-2: states, keys, locks, schedulers) and "
    "updating one (updateProgress-3, updateData-1, addLog-2 with keepLogs).",
    NOTES,
    tuple(_remove_cases() + _update_cases()),
    since=versions.WORKER_SINCE,
    rule=(
        "removeJob(id) takes an unlocked job out of its state, deletes its hash and the "
        "keys hanging off it, and emits `removed prev <state>`; it gives 0 while the job is "
        "locked, -8 for a job scheduler's current iteration, and 1 with no event for a "
        "missing job. updateProgress stores the JSON progress and emits `progress`; "
        "updateData replaces `data`; addLog RPUSHes to `<id>:logs` and keeps the last "
        "keepLogs rows (`LTRIM -k -1`)."
    ),
)
