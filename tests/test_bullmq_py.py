"""Every bundled vector passes against the official PyPI `bullmq` client (`--candidate bullmq-py`).

Ops the Python client cannot express (it has no `changeDelay`, no rate-limit push-back...) are
skipped with the reason, never failed. The vectors that fail are the real differences of its
scripts, each shown at its line of the package's own script (`REAL_DIFFERENCES`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from conformance.candidates.adapter.command import VERSION_7_OPS
from conformance.candidates.clients.bullmq_py import PythonClientCandidate
from conformance.candidates.clients.package import commands_folder, frozen_seconds
from conformance.core.errors import CandidateError, CandidateSkipped
from conformance.core.pins import PINNED_VERSION
from conformance.core.queues import QueueNames, QueueRef
from conformance.run.spec import profile_for
from conformance.servers import ServerInfo, client_for
from conformance.state import snapshot
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.getter_ops import GETTER_OPS
from reference_impl.keys import BULLMQ, ECHOMQ, KeyProfile
from reference_impl.maintenance_ops import MAINTENANCE_OPS
from reference_impl.ops import Add, ChangeDelay, MoveToActive, MoveToDelayed, Op, Promote
from reference_impl.scheduler_ops import (
    QUEUE_CALLS,
    SCHEDULER_OPS,
    NextMillis,
    PickUpIteration,
    UpsertJobScheduler,
)
from reference_impl.worker_ops import (
    AddLog,
    GetDependencyCounts,
    GetRateLimitTtl,
    MoveJobFromActiveToWait,
    MoveToFinished,
    ReleaseLock,
    RemoveChildDependency,
    RemoveDeduplicationKey,
    RemoveUnprocessedChildren,
    RetryJob,
)
from tests.verdict_helpers import run_all

pytest.importorskip("bullmq", reason=f"the dev extra installs bullmq=={PINNED_VERSION}")


#: Why the pinned bullmq skips an op: what its own code cannot express.
SKIP_REASONS = {
    "changeDelay": "has no Job.changeDelay",
    "releaseLock": "has no client call of releaseLock-1",
    "moveJobFromActiveToWait": "has no Job.moveToWait",
    "getRateLimitTtl": "plain PTTL of the limiter key",
    "removeDeduplicationKey": "has no Job.removeDeduplicationKey",
    "addLog": "MULTI RPUSH/LTRIM",
    "moveToActive": "never sends a worker name",
    "moveToFinished": "sends json.dumps(returnvalue)",
    "getDependencyCounts": "has no Job.getDependenciesCount",
    "removeChildDependency": "has no Job.removeChildDependency",
    "removeUnprocessedChildren": "has no Job.removeUnprocessedChildren",
    # Not a limit of the package: the scheduler script calls as vectors give them (their
    # arguments are a client's to compute) are driven through no client.
    **{op: "the suite does not drive" for op in QUEUE_CALLS},
    **{op: "the suite does not drive" for op in VERSION_7_OPS},
}
#: Ops it always skips (the others only for some of their arguments).
ALWAYS_SKIPPED = (ChangeDelay, ReleaseLock, MoveJobFromActiveToWait, GetRateLimitTtl,
                  RemoveDeduplicationKey, AddLog, GetDependencyCounts, RemoveChildDependency,
                  RemoveUnprocessedChildren,
                  *(SCHEDULER_OPS[name] for name in QUEUE_CALLS), *GETTER_OPS.values(),
                  *MAINTENANCE_OPS.values())
#: The vectors it fails, real differences: its scripts follow the flow protocol from before
#: npm 6.5.1. Each: the installed script, a line (1-based) and the text there that shows it,
#: and the text of npm 6.5.1's change, absent from the script.
REAL_DIFFERENCES = {
    # A child whose parent is gone stays with the gone parent: 6.5.1's handleDuplicatedJob
    # adopts it (`or rcall("EXISTS", existedParentKey) == 0`).
    "flow-add/duplicate-parent-gone": (
        "addStandardJob-9.lua", 475,
        "if not existedParentKey or existedParentKey == currentParentKey then",
        '"EXISTS", existedParentKey) == 0'),
    # An existing completed child releases its parent as soon as it is attached
    # (updateExistingJobsParent): 6.5.1 defers the release to the end of the flow (ARGV [10],
    # deferParentRelease, which this script does not take).
    "flow-insert/completed-child-first": (
        "addStandardJob-9.lua", 461, "updateParentDepsIfNeeded(parentKey, parent['queueKey'],",
        "deferParentRelease"),
    "flow-insert/all-children-completed": (
        "addStandardJob-9.lua", 461, "updateParentDepsIfNeeded(parentKey, parent['queueKey'],",
        "deferParentRelease"),
    # The same early release: the completed child c1 releases the parent before c2 is refused
    # (6.5.1 keeps it waiting, marked flowAttachmentFailed), and a chain's mid is released
    # as its completed leaf is attached, before the end of the flow.
    "flow-insert/attachment-failed-blocks-release": (
        "addStandardJob-9.lua", 461, "updateParentDepsIfNeeded(parentKey, parent['queueKey'],",
        "deferParentRelease"),
    "flow-insert/chain-leaf-completed": (
        "addStandardJob-9.lua", 461, "updateParentDepsIfNeeded(parentKey, parent['queueKey'],",
        "deferParentRelease"),
}
#: The cron-parity vectors it fails: its JobScheduler computes a pattern's fire time with
#: `default_repeat_strategy` (bullmq/job_scheduler.py), which never reads endDate, and with
#: croniter (pinned ==2.0.7), which rejects nL, @minutely, @secondly and @weekdays, accepts
#: # in a list and @midnight, and steps an aware datetime across a DST change with the offset
#: it started from (noon New York after the March shift is 11:00 EDT). Each: the cause.
END_DATE, PAST_END, REJECTS, ACCEPTS, DST = "endDate", "past", "rejects", "accepts", "dst"
CRON_DIFFERENCES = {
    **{f"cron-parity/{name}": END_DATE
       for name in ("end-before", "end-one-ms-before", "start-and-end-empty")},
    # Node's Queue.upsertJobScheduler throws for an endDate before now; this one adds nothing.
    "cron-parity/end-past": PAST_END,
    **{f"cron-parity/{name}": REJECTS
       for name in ("last-friday", "last-sunday-zero", "last-sunday-seven", "minutely",
                    "secondly", "weekdays-alias", "sydney-last-friday")},
    **{f"cron-parity/{name}": ACCEPTS for name in ("hash-in-list", "midnight-alias")},
    **{f"cron-parity/{name}": DST
       for name in ("ny-overlap-once", "ny-hourly-overlap", "ny-half-hourly-overlap",
                    "london-overlap-once", "london-after-gap", "lord-howe-gap-skips-day",
                    "lord-howe-overlap-once", "lord-howe-hourly-gap", "ny-weekdays-noon",
                    "los-angeles-last-day")},
}
#: The job-schedulers vectors its worker fails when it picks up an iteration: a pattern's
#: fire time past repeat.endDate (the strategy above never reads endDate), and a job with
#: opts.repeatJobKey but no rjk (its Job takes the scheduler from rjk alone). Each: the cause.
PICK_UP_DIFFERENCES = {"job-schedulers/pick-up-pattern-end-date": END_DATE,
                       "job-schedulers/pick-up-no-rjk": "rjk"}
#: The job-schedulers vectors its Queue.upsertJobScheduler fails: a pattern whose end date
#: comes before its next fire time still gets an iteration (the same strategy).
UPSERT_DIFFERENCES = {"job-schedulers/client-pattern-ends-first": END_DATE}
T = 1700000000000


@pytest.fixture
def candidate() -> Iterator[PythonClientCandidate]:
    """A candidate that is closed after the test."""
    made = PythonClientCandidate()
    yield made
    made.close()


def _run_all(vectors: list[Vector], server: ServerInfo, profile: str,
             candidate: PythonClientCandidate) -> dict[str, list[str]]:
    candidate.start(server.url, profile_for(profile))
    return run_all(vectors, candidate, server, profile)


def _ids_with(vectors: list[Vector], profile: str, *kinds: type[Op]) -> set[str]:
    return {v.id for v in vectors if v.profile in (None, profile)
            and any(isinstance(op, kinds) for op in v.when)}


def _change_delay_ids(vectors: list[Vector], profile: str) -> set[str]:
    return _ids_with(vectors, profile, ChangeDelay)


@pytest.mark.parametrize("profile", ["bullmq", "echomq"])
def test_python_client_passes_every_vector(all_vectors: list[Vector], redis_server: ServerInfo,
                                           candidate: PythonClientCandidate, profile: str,
                                           profile_skips: Callable[[str], set[str]]) -> None:
    outcomes = _run_all(all_vectors, redis_server, profile, candidate)
    failed = {line.split(":")[0] for line in outcomes["failed"]}
    assert failed == (set(REAL_DIFFERENCES) | set(CRON_DIFFERENCES) | set(PICK_UP_DIFFERENCES)
                      | set(UPSERT_DIFFERENCES)), outcomes["failed"]
    assert outcomes["errored"] == []
    assert len(outcomes["passed"]) >= 120
    skipped_for_op = set()
    for line in outcomes["skipped"]:
        # Only ops the package cannot express, and what the profile skips anyway.
        if any(f"support {op}: " in line and why in line for op, why in SKIP_REASONS.items()):
            skipped_for_op.add(line.split(":")[0])
        else:
            assert line.split(":")[0] in profile_skips(profile), line
    assert _ids_with(all_vectors, profile, *ALWAYS_SKIPPED) <= skipped_for_op


@pytest.mark.parametrize("vector_id", sorted(REAL_DIFFERENCES))
def test_real_differences_are_in_the_package_scripts(vector_id: str) -> None:
    """Each listed failure is shown by the installed package's own script text."""
    import bullmq

    script, line, shown, absent = REAL_DIFFERENCES[vector_id]
    folder = commands_folder(bullmq)
    assert folder is not None
    text = (folder / script).read_text(encoding="utf-8")
    assert shown in text.splitlines()[line - 1], (script, line)
    assert absent not in text


@pytest.mark.parametrize("vector_id", sorted(CRON_DIFFERENCES))
def test_cron_differences_are_in_the_package_and_croniter(vector_id: str,
                                                          all_vectors: list[Vector]) -> None:
    """Each listed cron-parity failure, shown by the package's strategy or the croniter call
    it makes, with the vector's own input."""
    import inspect
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from bullmq import job_scheduler
    from croniter import croniter

    vector = next(v for v in all_vectors if v.id == vector_id)
    (op,) = vector.when
    assert isinstance(op, NextMillis)
    source = inspect.getsource(job_scheduler.default_repeat_strategy)
    call = "croniter(pattern, base_dt, second_at_beginning=True)"
    assert call in source
    cause = CRON_DIFFERENCES[vector_id]
    if cause == END_DATE:
        assert "endDate" not in source and op.end_date is not None
        return
    if cause == PAST_END:
        from bullmq import queue
        upsert = inspect.getsource(queue.Queue.upsertJobScheduler)
        assert "End date" not in upsert and op.end_date is not None and op.end_date < op.now
        return
    base = max(op.now, op.start_date or 0) / 1000
    zone = ZoneInfo(op.tz) if op.tz else UTC
    if cause == REJECTS:
        with pytest.raises(Exception):  # noqa: B017 - croniter's own error classes
            croniter(op.pattern, datetime.fromtimestamp(base, tz=zone), second_at_beginning=True)
        return
    found = croniter(op.pattern, datetime.fromtimestamp(base, tz=zone),
                     second_at_beginning=True).get_next(datetime)
    assert int(found.timestamp() * 1000) == job_scheduler.default_repeat_strategy(
        op.now, {"pattern": op.pattern, **({"tz": op.tz} if op.tz else {})})
    if cause == DST:  # a DST change lies between now and Node's answer: croniter misses it
        expected = vector.returns[0]["next"]
        offset_now = datetime.fromtimestamp(base, tz=zone).utcoffset()
        assert datetime.fromtimestamp(expected / 1000, tz=zone).utcoffset() != offset_now
        assert int(found.timestamp() * 1000) != expected


@pytest.mark.parametrize("vector_id", sorted(PICK_UP_DIFFERENCES))
def test_pick_up_differences_are_in_the_package(vector_id: str,
                                                all_vectors: list[Vector]) -> None:
    """Each listed pick-up failure, shown by the package's own code with the vector's input:
    its worker's scheduler step, the strategy it asks, and where its Job gets the scheduler."""
    import inspect

    from bullmq import job, job_scheduler, worker

    vector = next(v for v in all_vectors if v.id == vector_id)
    (op,) = vector.when
    assert isinstance(op, PickUpIteration)
    step = inspect.getsource(worker.Worker.nextJobFromJobData)
    assert "if job_instance.repeatJobKey:" in step and "_scheduleNextIteration" in step
    if PICK_UP_DIFFERENCES[vector_id] == END_DATE:
        # now is before endDate, so the upsert goes on to the strategy, which never reads it
        assert op.now <= op.opts["repeat"]["endDate"]
        assert "endDate" not in inspect.getsource(job_scheduler.default_repeat_strategy)
        assert vector.returns == (None,)
        return
    assert op.rjk is None and op.opts["repeatJobKey"]
    assert "self.repeatJobKey = None" in inspect.getsource(job.Job.__init__)
    from_json = inspect.getsource(job.Job.fromJSON)
    assert 'job.repeatJobKey = rawData.get("rjk")' in from_json
    assert "repeatJobKey" not in from_json.replace("job.repeatJobKey", "")
    assert vector.returns != (None,)


@pytest.mark.parametrize("profile", ["bullmq", "echomq"])
def test_change_delay_runs_when_the_package_loads_it(all_vectors: list[Vector],
                                                     redis_server: ServerInfo,
                                                     candidate: PythonClientCandidate,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     profile: str) -> None:
    """Register the shipped changeDelay-4.lua the way the package registers its scripts."""
    import bullmq.redis_connection

    definitions = {**bullmq.redis_connection.SCRIPT_DEFINITIONS, "changeDelay": "changeDelay-4.lua"}
    monkeypatch.setattr(bullmq.redis_connection, "SCRIPT_DEFINITIONS", definitions)
    wanted = _change_delay_ids(all_vectors, profile)
    outcomes = _run_all([v for v in all_vectors if v.id in wanted], redis_server, profile,
                        candidate)
    assert sorted(outcomes["passed"]) == sorted(wanted), outcomes


@pytest.mark.parametrize("profile", [BULLMQ, ECHOMQ], ids=["bullmq", "echomq"])
def test_keys_follow_the_profile(redis_server: ServerInfo, candidate: PythonClientCandidate,
                                 profile: KeyProfile) -> None:
    client = client_for(redis_server)
    queue = QueueRef(profile, QueueNames().next(), versions.CURRENT)
    candidate.start(redis_server.url, profile)
    try:
        assert candidate.apply(client, queue, Add("a", 1700000000000, {"n": 1},
                                                  {"delay": 5000})) == "1"
        assert client.zscore(queue.key("delayed"), "1") == 1700000005000 * 4096
        assert candidate.apply(client, queue, Promote("1")) == 0
        assert candidate.apply(client, queue, Promote("1")) == -3
        assert candidate.apply(client, queue, MoveToActive(1700000000123)) == \
            {"job": "1", "ttl": 0, "next": 0}
        assert client.hget(queue.key("1"), "processedOn") == "1700000000123"
        with pytest.raises(CandidateSkipped):
            candidate.apply(client, queue, ChangeDelay("1", 1000, 1700000000000))
    finally:
        snapshot.delete_queue(client, queue)


def test_wrong_profile_is_a_candidate_error(redis_server: ServerInfo,
                                            candidate: PythonClientCandidate) -> None:
    candidate.start(redis_server.url, BULLMQ)
    queue = QueueRef(ECHOMQ, QueueNames().next(), versions.CURRENT)
    with pytest.raises(CandidateError, match="BASE"):
        candidate.apply(client_for(redis_server), queue, Add("a", 1700000000000))


def test_clock_is_restored_after_an_op(redis_server: ServerInfo,
                                       candidate: PythonClientCandidate) -> None:
    import time

    import bullmq.job
    import bullmq.scripts

    client = client_for(redis_server)
    queue = QueueRef(BULLMQ, QueueNames().next(), versions.CURRENT)
    candidate.start(redis_server.url, BULLMQ)
    try:
        candidate.apply(client, queue, MoveToActive(1700000000000))
    finally:
        snapshot.delete_queue(client, queue)
    assert bullmq.job.time is time and bullmq.scripts.time is time


@pytest.mark.parametrize("ms", [0, 1, 1700000000001, 1700000004999, 1700000000123, 2**41 - 1])
def test_frozen_seconds_round_trip(ms: int) -> None:
    assert round(frozen_seconds(ms) * 1000) == ms


@pytest.mark.parametrize(("op", "reason"), [
    (ReleaseLock("1", "tok"), SKIP_REASONS["releaseLock"]),
    (MoveJobFromActiveToWait("1"), SKIP_REASONS["moveJobFromActiveToWait"]),
    (GetRateLimitTtl(0), SKIP_REASONS["getRateLimitTtl"]),
    (RemoveDeduplicationKey("d1", "1"), SKIP_REASONS["removeDeduplicationKey"]),
    (AddLog("1", "row", 3), SKIP_REASONS["addLog"]),
    (MoveToActive(T, name="w1"), SKIP_REASONS["moveToActive"]),
    (MoveToFinished("1", T, value='"\u00e9"'), "'\"\\\\u00e9\"' for the op's value"),
    # The package ships these scripts but neither loads nor calls them: both lines named.
    (GetDependencyCounts("p"), "Job.getDependenciesCount (class Job at bullmq/job.py:27); it "
     "ships getDependencyCounts-4.lua but SCRIPT_DEFINITIONS (bullmq/redis_connection.py:19)"),
    (RemoveChildDependency("c", "bull:q:p"), "Job.removeChildDependency (class Job at "
     "bullmq/job.py:27); it ships removeChildDependency-1.lua but SCRIPT_DEFINITIONS"),
    (RemoveUnprocessedChildren("p"), "Job.removeUnprocessedChildren (class Job at "
     "bullmq/job.py:27); it ships removeUnprocessedChildren-2.lua but SCRIPT_DEFINITIONS"),
], ids=lambda x: x if isinstance(x, str) else type(x).__name__)
def test_what_the_package_cannot_express_is_skipped(redis_server: ServerInfo,
                                                    candidate: PythonClientCandidate, op: Op,
                                                    reason: str) -> None:
    client = client_for(redis_server)
    queue = QueueRef(BULLMQ, QueueNames().next(), versions.CURRENT)
    candidate.start(redis_server.url, BULLMQ)
    try:
        with pytest.raises(CandidateSkipped, match=r"bullmq 3\.4\.4") as caught:
            candidate.apply(client, queue, op)
        assert reason in str(caught.value)
    finally:
        snapshot.delete_queue(client, queue)


def test_worker_calls_fetch_next_and_write_fields(redis_server: ServerInfo,
                                                  candidate: PythonClientCandidate) -> None:
    """Job.moveToCompleted(..., fetchNext=True) and the retry calls Job.moveToFailed makes."""
    client = client_for(redis_server)
    queue = QueueRef(BULLMQ, QueueNames().next(), versions.CURRENT)
    candidate.start(redis_server.url, BULLMQ)
    try:
        for name in "abc":
            candidate.apply(client, queue, Add(name, T))
        assert candidate.apply(client, queue, MoveToActive(T + 1))["job"] == "1"  # type: ignore[index]
        finish = MoveToFinished("1", T + 2, value='{"ok":1}', keep_jobs={"count": 5},
                                fetch_next=True, lock_duration=5000)
        assert candidate.apply(client, queue, finish) == {"job": "2", "ttl": 0, "next": 0}
        assert client.hget(queue.key("1"), "returnvalue") == '{"ok":1}'
        assert 0 < client.pttl(queue.key("2:lock")) <= 5000
        fields = {"failedReason": "boom", "stacktrace": '["s"]'}
        assert candidate.apply(client, queue, RetryJob("2", T + 3, fields=fields)) == 0
        assert client.hget(queue.key("2"), "failedReason") == "boom"
        # LPUSH: behind job 3, which waited already
        assert candidate.apply(client, queue, MoveToActive(T + 4))["job"] == "3"  # type: ignore[index]
        delayed = MoveToDelayed("3", T + 5, 1000, fields=fields, fetch_next=True)
        assert candidate.apply(client, queue, delayed) == {"job": "2", "ttl": 0, "next": 0}
        assert client.zscore(queue.key("delayed"), "3") == (T + 1005) * 4096
        failed = MoveToFinished("2", T + 6, target="failed", value="bad", token="nope")
        assert candidate.apply(client, queue, failed) == -6
    finally:
        snapshot.delete_queue(client, queue)


def test_an_upsert_before_its_end_date_is_in_the_package(all_vectors: list[Vector]) -> None:
    """job-schedulers/client-pattern-ends-first, shown by the package's own code: its
    Queue.upsertJobScheduler checks only that now is not past endDate, then asks
    default_repeat_strategy, which never reads endDate, so a pattern whose next fire time lies
    beyond it still gets an iteration (Node's cron library returns none: no script call)."""
    import inspect

    from bullmq import job_scheduler

    vector = next(v for v in all_vectors if v.id == "job-schedulers/client-pattern-ends-first")
    (op,) = vector.when
    assert isinstance(op, UpsertJobScheduler)
    assert op.now < op.repeat["endDate"]  # the client's own end-date check lets it through
    upsert = inspect.getsource(job_scheduler.JobScheduler.upsertJobScheduler)
    assert "self.repeat_strategy(now, repeat_opts)" in upsert
    assert "endDate" not in inspect.getsource(job_scheduler.default_repeat_strategy)
    assert vector.returns == (None,)
