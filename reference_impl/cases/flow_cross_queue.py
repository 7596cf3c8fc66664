"""flow-cross-queue: a parent in one queue (`<q>`) and its children in another (`<q2>`).

A child's record names its parent's queue, and every script that reaches the parent builds the
parent's keys from that queue key: the dependencies, processed and failed sets, the parent's
wait, prioritized or delayed set, its marker, its meta (paused, concurrency) and its events.
So a port that builds any of them from the child's own queue writes into the wrong queue.
"""

from __future__ import annotations

from typing import Any

from reference_impl.cases import Area, Case, Flag, T, add, fetch
from reference_impl.cases.finish import complete, fail
from reference_impl.cases.flow_add import FLOW_SINCE, P, completed_job, parent
from reference_impl.cases.flow_insert import flow, node
from reference_impl.keys import QUEUE2_REF, QUEUE_REF
from reference_impl.ops import Add, OnQueue, Op, Pause, Step
from reference_impl.worker_ops import (
    MoveToWaitingChildren,
    RemoveChildDependency,
    RemoveJob,
    RemoveUnprocessedChildren,
)

NOTES = {
    "cross-link": Flag(
        "flow",
        "A child added in another queue stores `parentKey` = `<q>:<parent id>` and the record "
        "with `queueKey` = the parent's queue; its full key `<q2>:<id>` joins the parent's "
        "`:dependencies` in the parent's queue. A missing parent gives -5 and nothing is "
        "written in either queue.",
    ),
    "cross-release": Flag(
        "flow",
        "A child finishing in its own queue writes the parent's `:processed` and releases the "
        "parent in the parent's queue: its wait, prioritized or delayed set, its marker, its "
        "events. Whether the parent is paused or maxed is read from the parent queue's meta, "
        "never the child's.",
    ),
    "cross-fail": Flag(
        "flow",
        "A failing child's policy acts on the parent's queue: `:unsuccessful`, `:failed`, the "
        "release and `defa`, which names the child by its full key in its own queue.",
    ),
    "cross-remove": Flag(
        "flow",
        "Removing a parent with its children removes each child in the child's own queue "
        "(its state, its keys, a `removed` event there); a locked child in another queue keeps "
        "the parent too. Removing or unlinking a child updates the parent's queue.",
    ),
    "cross-adopt": Flag(
        "flow",
        "A custom id that exists in the child's queue is adopted by a parent in another queue "
        "(a completed job straight into the parent's `:processed`), or refused with -7 while "
        "its own parent exists.",
    ),
    "cross-wait": Flag(
        "flow",
        "moveToWaitingChildren with a `child` in another queue checks that child's full key "
        "in the parent's `:dependencies`.",
    ),
}

#: Both queues' keys are written by one script: on a cluster they need one hash slot.
_NEEDS = ("shared-slot",)


def on2(op: Op) -> OnQueue:
    """`op` run on the second queue."""
    return OnQueue(QUEUE2_REF, op)


def child2(name: str, parent_id: str = P, timestamp: int = T, *, job_id: str | None = None,
           **opts: Any) -> OnQueue:
    """An add in the second queue of a child of `parent_id` in the first."""
    return on2(Add(name, timestamp, {"n": name},
                   {"parent": {"id": parent_id, "queue": QUEUE_REF}, **opts}, job_id))


def node2(job_id: str, *children: dict[str, Any], **opts: Any) -> dict[str, Any]:
    """A flow node in the second queue."""
    return {**node(job_id, *children, **opts), "queue": QUEUE2_REF}


def _taken(*more: dict[str, Any], **parent_opts: Any) -> tuple[Step, ...]:
    """FlowProducer.add of parent `p` in the first queue (with `parent_opts`) and child `c` in
    the second (then the `more` nodes), and `c` taken by a worker there."""
    return (flow(node(P, node2("c"), *more, **parent_opts)), on2(fetch(T + 100)))


def _taken_with(**child_opts: Any) -> tuple[Step, ...]:
    """As `_taken`, the child with `child_opts` (a policy flag)."""
    return (flow(node(P, node2("c", **child_opts))), on2(fetch(T + 100)))


def _case(name: str, description: str, when: tuple[Step, ...], flags: tuple[str, ...],
          given: dict[str, Any] | None = None) -> Case:
    return Case(name, description, when, flags, given=dict(given or {}), needs=_NEEDS)


def _cases() -> list[Case]:
    return [
        _case("child-in-other-queue",
              "A flow's child in <q2>: parentKey <q>:p, its record's queueKey <q>, and <q2>:c "
              "in p's dependencies.",
              (flow(node(P, node2("c"))),), ("cross-link",)),
        _case("child-added-in-other-queue",
              "Queue.add in <q2> of a child of <q>:p links it as a flow does.",
              (parent(), child2("c", job_id="c")), ("cross-link",)),
        _case("delayed-child-in-other-queue",
              "A delayed child in <q2> goes to <q2>'s delayed and joins p's dependencies in <q>.",
              (flow(node(P, node2("c", delay=5000))),), ("cross-link",)),
        _case("prioritized-child-in-other-queue",
              "A prioritized child in <q2> goes to <q2>'s prioritized and joins p's "
              "dependencies in <q>.",
              (flow(node(P, node2("c", priority=2))),), ("cross-link",)),
        _case("missing-parent-in-other-queue",
              "A child in <q2> whose parent is missing in <q>: -5, and neither queue is "
              "written.",
              (child2("c", job_id="c"),), ("cross-link",)),
        _case("middle-node-in-other-queue",
              "A three-level flow whose middle node is in <q2>: its leaf in <q> names <q2>:m, "
              "m waits in <q2>.",
              (flow(node(P, node2("m", node("l")))),), ("cross-link",)),
        _case("child-completes-parent-released",
              "The child completes in <q2>: p's processed gets <q2>:c; p goes to <q>'s wait, "
              "marker, events.",
              (*_taken(), on2(complete("c"))), ("cross-release",)),
        _case("release-prioritized-in-parent-queue",
              "A released priority-3 parent goes to <q>'s prioritized, at <q>'s pc.",
              (*_taken(priority=3), on2(complete("c"))), ("cross-release",)),
        _case("release-delayed-in-parent-queue",
              "A released parent with delay 5000 goes to <q>'s delayed, with <q>'s delay marker.",
              (*_taken(delay=5000), on2(complete("c"))), ("cross-release",)),
        _case("parent-queue-paused",
              "<q> paused, <q2> not: the released parent goes to <q>'s wait with no marker.",
              (*_taken(), Pause(), on2(complete("c"))), ("cross-release",)),
        _case("child-queue-paused",
              "<q2> paused, <q> not: the released parent still gets <q>'s marker.",
              (*_taken(), on2(Pause()), on2(complete("c"))), ("cross-release",)),
        _case("child-in-each-queue",
              "Children in <q> and <q2>: the one in <q2> completes, the parent waits for the "
              "other.",
              (*_taken(node("d")), on2(complete("c"))), ("cross-release",)),
        _case("leaf-releases-middle-in-other-queue",
              "A leaf in <q> completes: its parent m is released in <q2>, the root keeps "
              "waiting in <q>.",
              (flow(node(P, node2("m", node("l")))), fetch(T + 100), complete("l")),
              ("cross-release",)),
        _case("fpof-in-parent-queue",
              "fpof in <q2>: <q2>:c in p's unsuccessful, p to <q>'s wait with defa naming "
              "<q2>:c.",
              (*_taken_with(fpof=True), on2(fail("c"))), ("cross-fail",)),
        _case("cpof-in-parent-queue",
              "cpof in <q2>: the reason in p's failed under <q2>:c, p released in <q>.",
              (*_taken_with(cpof=True), on2(fail("c"))), ("cross-fail",)),
        _case("idof-in-parent-queue",
              "idof in <q2>: the reason in p's failed under <q2>:c, the last dependency "
              "releases p in <q>.",
              (*_taken_with(idof=True), on2(fail("c"))), ("cross-fail",)),
        _case("rdof-in-parent-queue",
              "rdof in <q2>: p is released in <q>, nothing in its failed.",
              (*_taken_with(rdof=True), on2(fail("c"))), ("cross-fail",)),
        _case("removed-on-fail-unlinks-across",
              "A failed child in <q2> deleted at once (count 0, no policy) releases p to <q>'s "
              "wait.",
              (*_taken(), on2(fail("c", keep_jobs={"count": 0}))), ("cross-fail",)),
        _case("remove-parent-with-child-elsewhere",
              "removeJob of p with its children removes c from <q2> (state, keys, removed "
              "event there).",
              (flow(node(P, node2("c"))), RemoveJob(P, True)), ("cross-remove",)),
        _case("locked-child-elsewhere-keeps-parent",
              "removeJob of p with its children while c is locked in <q2>: 0, nothing removed.",
              (*_taken(), RemoveJob(P, True)), ("cross-remove",)),
        _case("remove-child-releases-parent",
              "removeJob of the only child in <q2>: p leaves <q>'s waiting-children for its "
              "wait.",
              (flow(node(P, node2("c"))), on2(RemoveJob("c"))), ("cross-remove",)),
        _case("unlink-child-in-other-queue",
              "removeChildDependency of c in <q2> from <q>:p: p released in <q>, c keeps its keys "
              "without a parent.",
              (flow(node(P, node2("c"))),
               on2(RemoveChildDependency("c", f"{QUEUE_REF}:{P}"))), ("cross-remove",)),
        _case("remove-unprocessed-child-elsewhere",
              "removeUnprocessedChildren of p removes its pending child from <q2>.",
              (flow(node(P, node2("c"))), RemoveUnprocessedChildren(P)), ("cross-remove",)),
        _case("adopt-job-in-other-queue",
              "A waiting c in <q2> added again as a child of <q>:p is adopted: <q2>:c joins p's "
              "dependencies.",
              (flow(node(P, node("k"))), on2(add("c", job_id="c")), child2("c", job_id="c")),
              ("cross-adopt",)),
        _case("adopt-completed-job-in-other-queue",
              "A completed c in <q2> added as a child of <q>:p: its value goes to p's processed.",
              (flow(node(P, node("k"))), child2("c", job_id="c")), ("cross-adopt",),
              given={f"{QUEUE2_REF}:{key}": value
                     for key, value in completed_job("c").items()}),
        _case("other-parent-elsewhere-refused",
              "c in <q2> already has parent <q>:p0, which exists: adding it under <q>:p gives -7.",
              (flow(node("p0", node2("c"))), flow(node(P, node("k"))), child2("c", job_id="c")),
              ("cross-adopt",)),
        _case("wait-for-child-in-other-queue",
              "An active p waits for child {id: c, queue: <q2>}: 0, p moves to "
              "waiting-children.",
              (add("report", job_id=P), fetch(T + 50), child2("c", job_id="c"),
               MoveToWaitingChildren(P, T + 200, child={"id": "c", "queue": QUEUE2_REF})),
              ("cross-wait",)),
    ]


AREA = Area(
    "flow-cross-queue",
    "Flows across queues: a parent in <q> and children in <q2>. Linking, a child's end, "
    "removal and adoption each act on the parent's queue, never the child's.",
    NOTES,
    tuple(_cases()),
    since=FLOW_SINCE,
    rule=(
        "A child in queue B of a parent in queue A names the parent `A:<id>`; A's "
        "`<id>:dependencies` holds `B:<child id>`. Every step on the parent (processed, "
        "failed, unsuccessful, the release to wait / prioritized / delayed, the marker, the "
        "paused check, the events) uses A's keys."
    ),
)

