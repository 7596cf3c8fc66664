"""The official Node BullMQ client, through our adapter and the command: path, passes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conformance.candidates.adapter.command import CommandCandidate
from conformance.core.errors import CandidateSkipped
from conformance.core.queues import QueueNames, QueueRef
from conformance.core.resources import node_adapter_source
from conformance.servers import ServerInfo, client_for
from conformance.state import snapshot
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.keys import BULLMQ
from reference_impl.ops import Add, AddParentJob, MoveToActive
from reference_impl.scheduler_ops import (
    QUEUE_CALLS,
    NextMillis,
    PickUpIteration,
    UpsertJobScheduler,
)
from reference_impl.worker_ops import MoveToFinished, ReleaseLock
from tests.cli_helpers import cli

NODE_MODULES = node_adapter_source() / "node_modules"
READY = shutil.which("node") is not None and (NODE_MODULES / "bullmq").is_dir()
pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(
        not READY and os.environ.get("CI") != "true",
        reason="needs node and `npm ci` in conformance/bundled/node-bullmq "
               "(always runs under CI=true)"),
]

#: Inputs npm bullmq rejects client-side; the adapter reports them as skipped ops.
CLIENT_VALIDATION = {
    "delayed-score/integer-custom-id-collides": "Custom Id cannot be integers",
    "priority-order/above-limit-counter-lost": "Priority should be between 0 and 2097151",
}
#: Ops npm bullmq cannot express through its own code, by the op in the skip message.
OP_SKIPS: dict[str, str | tuple[str, ...]] = {
            "releaseLock": "ships releaseLock-1 but no client code calls it",
            "addParentJob": "has no public call that adds a parent job alone",
            # Not a limit of npm bullmq: no adapter protocol version has the scheduler script
            # calls as vectors give them (nextMillis, pickUpIteration and upsertJobScheduler,
            # the calls a caller makes, are sent).
            **{op: "its vectors give the scripts' own arguments" for op in QUEUE_CALLS},
            # The getters and maintenance calls it cannot make with a vector's arguments.
            "getCounts": ("sends each name once", "a delayed cutoff only in "
                          "Queue.getDelayedCount"),
            "getJobs": "sends each name once",
            "getState": "getState-8 only on a Redis older than 6.0.6",
            "isJobInList": "isJobInList-1 only on a Redis older than 6.0.6",
            "isFinished": "only inside Job.waitUntilFinished",
            "paginate": "paginates only in Queue.getDependencies",
            "cleanJobsInSet": "never 0 (all)",
            "reprocessJob": ("takes lifo from the job's opts", "needs the job's hash"),
            "saveStacktrace": "no client code calls it",
            "removeOrphanedJobs": "scanning the keyspace"}
T = 1700000000000


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["bullmq", "echomq"])
def test_node_bullmq_passes_every_vector(tmp_path: Path, redis_url: str, profile: str,
                                        every_vector: list[Vector]) -> None:
    report = tmp_path / "r.json"
    proc = cli("run", "-q", "--redis", redis_url, "--candidate", "bullmq-node", "--profile",
               profile, "--report-json", str(report))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    doc = json.loads(report.read_text())
    assert "bullmq (npm) 6.7.0 (javascript)" in doc["candidate_version"]
    assert doc["totals"]["failed"] == doc["totals"]["errored"] == 0
    skipped = {r["id"]: r["message"] for r in doc["results"] if r["outcome"] == "skipped"}
    other = "echomq" if profile == "bullmq" else "bullmq"
    # older ranges, and the 5.x repeatable job calls 6.0.0 removed
    elsewhere = {v.id for v in every_vector if not v.span.holds(versions.CURRENT)}
    for vid, message in skipped.items():
        if vid in elsewhere:  # another protocol range than the 6.7.0 judged
            assert message.endswith("not the protocol judged (6.7.0)"), (vid, message)
        elif vid.startswith("key-naming/"):
            assert message == f"vector is for profile {other}"
        elif vid.startswith("cluster/"):
            assert profile == "bullmq" and message.startswith("needs hash-tag"), (vid, message)
        elif vid in CLIENT_VALIDATION:
            assert CLIENT_VALIDATION[vid] in message, (vid, message)
        else:
            op = message.removeprefix("candidate does not support ").split(":")[0]
            reasons = OP_SKIPS[op]
            assert any(reason in message for reason in
                       ((reasons,) if isinstance(reasons, str) else reasons)), (vid, message)
    assert set(CLIENT_VALIDATION) <= set(skipped)
    assert elsewhere <= set(skipped)


def test_speaks_protocol_7_and_skips_what_the_client_cannot_express(
        redis_server: ServerInfo) -> None:
    adapter = node_adapter_source() / "adapter.js"
    candidate = CommandCandidate(f"node {adapter}", label="bullmq-node")
    client = client_for(redis_server)
    queue = QueueRef(BULLMQ, QueueNames().next(), versions.CURRENT)
    candidate.start(redis_server.url, BULLMQ)
    try:
        assert candidate.speaks == 7
        assert candidate.apply(client, queue, Add("a", T)) == "1"
        assert candidate.apply(client, queue, MoveToActive(T + 1)) == \
            {"job": "1", "ttl": 0, "next": 0}
        with pytest.raises(CandidateSkipped, match=OP_SKIPS["releaseLock"]):
            candidate.apply(client, queue, ReleaseLock("1", "tok"))
        # Job.moveToCompleted sends JSON.stringify(returnvalue): never this text
        with pytest.raises(CandidateSkipped, match=r'JSON.stringify\(returnvalue\).*\{"a":1\}'):
            candidate.apply(client, queue, MoveToFinished("1", T + 2, value='{"a": 1}'))
        finish = MoveToFinished("1", T + 2, value='{"a":1}', keep_jobs={"count": 0})
        assert candidate.apply(client, queue, finish) == 0
        assert client.exists(queue.key("1")) == 0  # removeOnComplete {count: 0}
        with pytest.raises(CandidateSkipped, match=OP_SKIPS["addParentJob"]):
            candidate.apply(client, queue, AddParentJob("p", T + 3, {}, {}, "p"))
        # Cron parity through Queue.upsertJobScheduler: T is 2023-11-14 22:13:20 UTC, so an
        # hourly pattern fires at 23:00; an end date before now makes the upsert throw.
        written = sorted(client.keys(f"{queue.base}*"))
        assert candidate.apply(client, queue, NextMillis("0 * * * *", T)) == {
            "next": T + 46 * 60_000 + 40_000}
        assert candidate.apply(client, queue, NextMillis("0 * * * *", T, end_date=T - 1)) \
            == "invalid"
        assert sorted(client.keys(f"{queue.base}*")) == written  # nothing stored
        # A worker picking up a job that names no scheduler asks for nothing; one whose
        # scheduler the queue lacks asks, and the script adds nothing.
        opts = {"repeat": {"every": 1000, "count": 1}}
        assert candidate.apply(client, queue, PickUpIteration("repeat:s:1", T, None, opts)) \
            is None
        assert candidate.apply(client, queue, PickUpIteration("repeat:s:1", T, "s", opts)) \
            is None
        assert sorted(client.keys(f"{queue.base}*")) == written
        # A caller's upsert: limit 0 calls no script; an every scheduler's first iteration is
        # due at once (its id the fire time, the scheduler named after itself).
        assert candidate.apply(client, queue, UpsertJobScheduler(
            "u", T + 10, {"every": 1000, "limit": 0})) is None
        assert sorted(client.keys(f"{queue.base}*")) == written
        assert candidate.apply(client, queue, UpsertJobScheduler("u", T + 10, {"every": 1000})) \
            == {"job": f"repeat:u:{T + 10}", "delay": 0}
        assert client.hget(queue.key("repeat:u"), "name") in (b"u", "u")
    finally:
        candidate.close()
        snapshot.delete_queue(client, queue)
