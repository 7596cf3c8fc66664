"""`bullmq-conformance adapter check CMD`: a protocol smoke test for adapter authors.

It starts the adapter against a throwaway Redis, sends `start`, one request of every op kind the
adapter's protocol version has (version 2: the worker half's too; version 3: the flows') and
`stop`, and validates
every reply against the bundled `schemas/adapter-protocol.schema.json`.
It checks the protocol only (shapes, seq numbers, result types), not the Redis state: that is
what `run` is for.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import subprocess
from typing import Any

from conformance import servers
from conformance.candidates.adapter.command import (
    DEFAULT_ADAPTER_PROTOCOL,
    PROTOCOL_VERSION,
    Adapter,
    start_request,
)
from conformance.core.errors import CandidateError, Exit, UsageError
from conformance.core.queues import QueueRef, one_off
from conformance.run.spec import profile_for
from conformance.state import snapshot
from reference_impl import versions
from reference_impl.getter_ops import GetCounts, GetJobLogs
from reference_impl.keys import KeyProfile
from reference_impl.ops import (
    Add,
    AddFlow,
    AddParentJob,
    ChangeDelay,
    ChangePriority,
    MoveToActive,
    MoveToDelayed,
    Op,
    Pause,
    Promote,
    Resume,
    op_to_dict,
)
from reference_impl.scheduler_ops import NextMillis, PickUpIteration, UpsertJobScheduler
from reference_impl.worker_ops import (
    AddLog,
    ExtendLock,
    ExtendLocks,
    GetDependencyCounts,
    GetRateLimitTtl,
    MoveJobFromActiveToWait,
    MoveStalledJobsToWait,
    MoveToFinished,
    MoveToWaitingChildren,
    ReleaseLock,
    RemoveChildDependency,
    RemoveDeduplicationKey,
    RemoveJob,
    RemoveUnprocessedChildren,
    RetryJob,
    UpdateData,
    UpdateProgress,
)

T = 1_700_000_000_000

#: The smoke sequence: each op with the JSON type its result must have.
SMOKE: tuple[tuple[Op, type], ...] = (
    (Add("standard", T, {"n": 1}), str),
    (Add("delayed", T, {"n": 2}, {"delay": 5000}), str),
    (Add("prioritized", T, {"n": 3}, {"priority": 2}), str),
    (MoveToActive(T), dict),
    (Promote("2"), int),
    (ChangeDelay("404", 1000, T), int),
    (ChangePriority("3", 1), int),
    (MoveToDelayed("1", T + 10, 1000), int),
    (Pause(), int),
    (Resume(), int),
)
#: Sent after SMOKE to an adapter that speaks adapter protocol 2: the worker half's ops.
SMOKE_WORKER: tuple[tuple[Op, type], ...] = (
    (MoveToActive(T + 20), dict),
    (UpdateProgress("3", 50), int),
    (AddLog("3", "row", 10), int),
    (ExtendLock("3", "tok", 30000), int),
    (ExtendLocks(("3",), ("tok",), 30000), list),
    (GetRateLimitTtl(0), int),
    (MoveJobFromActiveToWait("3"), int),
    (MoveToActive(T + 30), dict),
    (RetryJob("3", T + 40), int),
    (MoveToActive(T + 50), dict),
    (MoveToFinished("3", T + 60, value='"done"', keep_jobs={"count": -1}), int),
    (MoveStalledJobsToWait(T + 70), list),
    (ReleaseLock("3", "tok"), int),
    (UpdateData("3", {"n": 4}), int),
    (RemoveDeduplicationKey("none", "3"), int),
    (RemoveJob("3"), int),
)


def smoke_flows(queue: QueueRef) -> tuple[tuple[Op, type], ...]:
    """Sent after SMOKE_WORKER to an adapter that speaks adapter protocol 3: the flow ops, in
    `queue` (a child's parent is named by its queue's qualified name)."""
    qualified = queue.base[:-1]
    tree = {"name": "report", "jobId": "fp", "data": {},
            "children": [{"name": "part", "jobId": "fc", "data": {}}]}
    return (
        (AddFlow(T + 100, tree), str),
        (Add("child", T + 100, {}, {"parent": {"id": "fp", "queue": qualified}}), str),
        (AddParentJob("parent", T + 100, {}, {}, "fp2"), str),
        (MoveToWaitingChildren("fp", T + 110), int),
        (GetDependencyCounts("fp"), list),
        (RemoveChildDependency("fc", f"{qualified}:fp"), int),
        (RemoveUnprocessedChildren("fp"), type(None)),
    )


_JSON_TYPES = {str: "string", list: "array", dict: "object", int: "integer",
               type(None): "null"}
#: What an adapter of an older protocol version is not sent.
_NOT_SENT = {1: "the worker half's, the flow ops, nextMillis, pickUpIteration, "
                "upsertJobScheduler, the getters and the maintenance calls are skipped",
             2: "the flow ops, nextMillis, pickUpIteration, upsertJobScheduler, the getters and "
                "the maintenance calls are skipped",
             3: "nextMillis, pickUpIteration, upsertJobScheduler, the getters and the "
                "maintenance calls are skipped",
             4: "pickUpIteration, upsertJobScheduler, the getters and the maintenance calls "
                "are skipped",
             5: "upsertJobScheduler, the getters and the maintenance calls are skipped",
             6: "the getters and the maintenance calls are skipped"}
#: Sent to an adapter that speaks adapter protocol 4: cron parity (an hourly pattern at T).
SMOKE_CRON: tuple[tuple[Op, type], ...] = ((NextMillis("0 * * * *", T), dict),)
#: Sent to an adapter that speaks adapter protocol 5: a worker picks up an iteration of a
#: scheduler the queue does not have (the script adds nothing: null).
SMOKE_PICK_UP: tuple[tuple[Op, type], ...] = (
    (PickUpIteration(f"repeat:s:{T}", T + 5, "s", {"repeat": {"every": 1000, "count": 1}}),
     type(None)),
)
#: Sent to an adapter that speaks adapter protocol 6: a caller upserts an every scheduler
#: (its first iteration, due now: {job, delay}).
SMOKE_UPSERT: tuple[tuple[Op, type], ...] = ((UpsertJobScheduler("u", T + 10, {"every": 1000}),
                                             dict),)
#: Sent to an adapter that speaks adapter protocol 7: two reads (the counts of two states, a
#: job's logs) that any queue state answers.
SMOKE_ADMIN: tuple[tuple[Op, type], ...] = ((GetCounts(("wait", "completed")), list),
                                            (GetJobLogs("1"), dict))


def _describe(reply: dict[str, Any]) -> str:
    if "result" in reply:
        return f"result {json.dumps(reply['result'])}"
    if reply.get("skipped"):
        return f"skipped: {reply['reason']}"
    return f"errored: {reply.get('message')}"


def main(args: argparse.Namespace) -> int:
    """`adapter check`: run the smoke sequence against `args.adapter_command`; print one line
    per exchange. Returns 0 when all replies are valid, 1 when one is not, and 4
    (`Exit.CANDIDATE`) when the adapter does not start: it cannot be run, or it exits, stays
    silent or answers anything but an `implementation` reply to `start`."""
    command, redis_spec = args.adapter_command, args.redis
    profile_name, timeout = args.profile, args.adapter_timeout
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"cannot parse adapter command {command!r}: {exc}") from None
    if not argv:
        raise UsageError("adapter check needs a command line, e.g. 'node adapter.js'")
    profile = profile_for(profile_name)
    queue = QueueRef(profile, one_off("check"), versions.CURRENT)
    with servers.provision(redis_spec) as info:
        print(f"adapter check: {command!r} against {info.kind} {info.engine} {info.version}, "
              f"profile {profile.name}, suite protocol {PROTOCOL_VERSION}")
        try:
            adapter = Adapter(argv)
        except CandidateError as exc:
            print(f"FAIL start: {exc}")
            print("adapter check: the adapter did not start")
            return Exit.CANDIDATE
        try:
            speaks = _started(adapter, info.url, profile, timeout)
            if speaks is None:
                print("adapter check: the adapter did not start")
                return Exit.CANDIDATE
            sequence = SMOKE + (SMOKE_WORKER if speaks >= 2 else ()) + (
                smoke_flows(queue) if speaks >= 3 else ()) + (SMOKE_CRON if speaks >= 4 else ()) + (
                SMOKE_PICK_UP if speaks >= 5 else ()) + (SMOKE_UPSERT if speaks >= 6 else ()) + (
                SMOKE_ADMIN if speaks >= 7 else ())
            problems = _smoke(adapter, queue, timeout, sequence)
        finally:
            adapter.kill()
            with contextlib.suppress(Exception):
                snapshot.delete_queue(servers.client_for(info), queue)
    print(f"adapter check: all replies follow protocol {speaks}" if not problems
          else f"adapter check: {problems} problem(s)")
    return Exit.OK if not problems else Exit.FAILED


def _started(adapter: Adapter, redis_url: str, profile: KeyProfile, timeout: float
             ) -> int | None:
    """Send `start`; print its outcome. The adapter protocol version it speaks, or None."""
    try:
        reply = adapter.request(start_request(redis_url, profile), timeout)
    except CandidateError as exc:
        print(f"FAIL start: {exc}")
        return None
    if "implementation" not in reply:
        print(f"FAIL start: expected an implementation reply, got {json.dumps(reply)}")
        return None
    speaks: int = reply.get("protocol", DEFAULT_ADAPTER_PROTOCOL)
    note = "" if speaks >= PROTOCOL_VERSION else \
        f" (speaks adapter protocol {speaks}: {_NOT_SENT.get(speaks, 'newer ops are skipped')})"
    print(f"ok   start: {json.dumps(reply['implementation'])}, protocol {speaks}{note}")
    return speaks


def _smoke(adapter: Adapter, queue: QueueRef, timeout: float,
           sequence: tuple[tuple[Op, type], ...]) -> int:
    """Send the smoke ops and `stop`; print one line each. Returns the number of problems."""
    problems = 0
    try:
        for op, result_type in sequence:
            step = op_to_dict(op)
            reply = adapter.request({"type": "op", "queue": queue.name, "base": queue.base,
                                     "op": step}, timeout)
            fields = ", ".join(f"{k}={v}" for k, v in step.items() if k != "op")
            name = f"{step['op']}({fields})"
            # Before 6.0.0 the pause script returns nothing: null is a valid reply there.
            nullable = isinstance(op, Pause | Resume)
            allowed = (result_type, type(None)) if nullable else (result_type,)
            if "result" in reply and not isinstance(reply["result"], allowed):
                problems += 1
                print(f"FAIL {name}: result should be a JSON "
                      f"{_JSON_TYPES.get(result_type, result_type.__name__)}"
                      f"{' or null' if nullable else ''}, got {json.dumps(reply['result'])}")
            else:
                print(f"ok   {name}: {_describe(reply)}")
        adapter.request({"type": "stop"}, timeout)
        print("ok   stop")
        with contextlib.suppress(subprocess.TimeoutExpired):
            adapter.proc.wait(timeout=timeout)
    except CandidateError as exc:
        problems += 1
        print(f"FAIL {exc}")
    return problems
