"""flow-job: a parent's own calls (moveToWaitingChildren-7, getDependencyCounts-4) and a child
leaving its parent (removeChildDependency-1)."""

from __future__ import annotations

from reference_impl.cases import Area, Case, Flag, T, add, fetch
from reference_impl.cases.finish import complete, fail
from reference_impl.cases.flow_add import FLOW_SINCE, P, child
from reference_impl.cases.flow_child_end import NOW
from reference_impl.cases.flow_insert import flow, node
from reference_impl.keys import QUEUE_REF
from reference_impl.ops import Op, Pause
from reference_impl.worker_ops import GetDependencyCounts, MoveToWaitingChildren, ReleaseLock
from reference_impl.worker_ops import RemoveChildDependency as Unlink

NOTES = {
    "wait-children": Flag(
        "flow",
        "moveToWaitingChildren moves an active job with a pending dependency (any, or the one "
        "child named) to waiting-children scored now, releasing its lock and `stalled` entry, "
        "with `waiting-children jobId <id> prev active`; it answers 0.",
    ),
    "wait-children-codes": Flag(
        "precondition",
        "moveToWaitingChildren checks in order: the job (-1), failed children in "
        ":unsuccessful (-9), a pending dependency (else 1, nothing written), the lock (-2, "
        "-6), and active (-3).",
    ),
    "counts": Flag(
        "flow",
        "getDependencyCounts answers one count per type asked, in order: processed (HLEN "
        ":processed), unprocessed (SCARD :dependencies), ignored (HLEN :failed), failed "
        "(ZCARD :unsuccessful).",
    ),
    "unlink": Flag(
        "flow",
        "removeChildDependency takes the job out of its parent's :dependencies and deletes "
        "its parentKey and parent fields (0); the last one moves a waiting-children parent to "
        "the head of wait, whatever its priority, with `waiting ... prev waiting-children`; "
        "a job that is not a dependency answers 1 and keeps its fields.",
    ),
    "unlink-codes": Flag(
        "precondition",
        "removeChildDependency answers -1 without the job's hash and -5 without the parent's.",
    ),
}


def _parent_taken() -> tuple[Op, ...]:
    """A job `p` taken by a worker, then a child `c` added under it while it runs."""
    return (add("report", job_id=P), fetch(T + 100), child("a", job_id="c"))


def _counts(job_id: str = P, *types: str) -> GetDependencyCounts:
    return GetDependencyCounts(job_id, types) if types else GetDependencyCounts(job_id)


def _cases() -> list[Case]:
    return [
        Case("wait-for-children",
             "An active parent with a pending child moves to waiting-children at now.",
             (*_parent_taken(), MoveToWaitingChildren(P, T + 200)),
             ("wait-children",)),
        Case("wait-for-named-child",
             "Naming its pending child, the parent moves too.",
             (*_parent_taken(),
              MoveToWaitingChildren(P, T + 200, child={"id": "c", "queue": QUEUE_REF})),
             ("wait-children",)),
        Case("named-child-not-pending",
             "Naming a child that is not pending: 1, and the parent stays active.",
             (*_parent_taken(),
              MoveToWaitingChildren(P, T + 200, child={"id": "x", "queue": QUEUE_REF})),
             ("wait-children-codes",)),
        Case("nothing-pending",
             "No dependency at all: 1, the lock and active are left alone.",
             (add("report", job_id=P), fetch(T + 100), MoveToWaitingChildren(P, T + 200)),
             ("wait-children-codes",)),
        Case("wrong-token",
             "Another token's lock: -6, nothing moves.",
             (*_parent_taken(), MoveToWaitingChildren(P, T + 200, token="other")),
             ("wait-children-codes",)),
        Case("not-active",
             "A waiting job with a pending child and token \"0\": -3 once its lock is "
             "skipped.",
             (add("report", job_id=P), child("a", job_id="c"),
              MoveToWaitingChildren(P, T + 200, token="0")),
             ("wait-children-codes",)),
        Case("failed-child-first",
             "A parent with a failed child (fpof) answers -9, before its lock is checked.",
             (flow(node(P, node("c1", fpof=True), node("c2"))), fetch(T + 100),
              fail("c1"), MoveToWaitingChildren(P, T + 200, token="none")),
             ("wait-children-codes",)),
        Case("no-lock",
             "An active job whose lock is gone, with a pending child: -2.",
             (*_parent_taken(), ReleaseLock(P, "tok"), MoveToWaitingChildren(P, T + 200)),
             ("wait-children-codes",)),
        Case("waits-then-released",
             "A job that moved to waiting-children is released when its child completes, "
             "and taken again.",
             (*_parent_taken(), MoveToWaitingChildren(P, T + 200), fetch(T + 300),
              complete("c"), fetch(NOW)), ("wait-children",)),
        Case("missing-job",
             "moveToWaitingChildren of a job that does not exist: -1.",
             (MoveToWaitingChildren("nope", T),), ("wait-children-codes",)),
        Case("counts-all",
             "One processed, one pending, one ignored (idof) and one failed (fpof) child: "
             "1, 1, 1, 1.",
             (flow(node(P, node("c1"), node("c2"), node("c3", idof=True),
                        node("c4", fpof=True))),
              fetch(T + 10), complete("c1"), fetch(T + 20), fetch(T + 30), fail("c3"),
              fetch(T + 40), fail("c4"), _counts()),
             ("counts",)),
        Case("counts-order",
             "The counts come in the order asked: unprocessed, processed.",
             (flow(node(P, node("c1"), node("c2"))), fetch(T + 10), complete("c1"),
              _counts(P, "unprocessed", "processed")),
             ("counts",)),
        Case("counts-no-children",
             "A job without children: zeros.",
             (add("plain", job_id="j"), _counts("j")), ("counts",)),
        Case("unlink-last",
             "The only child leaves: the parent goes to the head of wait, the child forgets "
             "it.",
             (flow(node(P, node("c1"), priority=4)), Unlink("c1", f"{QUEUE_REF}:{P}")),
             ("unlink",)),
        Case("unlink-one-of-two",
             "One of two children leaves: the parent keeps waiting for the other.",
             (flow(node(P, node("c1"), node("c2"))), Unlink("c1", f"{QUEUE_REF}:{P}")),
             ("unlink",)),
        Case("unlink-paused",
             "Paused: the parent released by the unlink goes to wait without marker 0.",
             (flow(node(P, node("c1"))), Pause(), Unlink("c1", f"{QUEUE_REF}:{P}")),
             ("unlink",)),
        Case("unlink-not-a-dependency",
             "A completed child (no longer a dependency): 1, its fields stay.",
             (flow(node(P, node("c1"), node("c2"))), fetch(T + 10), complete("c1"),
              Unlink("c1", f"{QUEUE_REF}:{P}")),
             ("unlink",)),
        Case("unlink-missing-job",
             "removeChildDependency of a job that does not exist: -1.",
             (flow(node(P, node("c1"))), Unlink("nope", f"{QUEUE_REF}:{P}")),
             ("unlink-codes",)),
        Case("unlink-missing-parent",
             "A parent that does not exist: -5.",
             (add("a", job_id="c1"), Unlink("c1", f"{QUEUE_REF}:{P}")), ("unlink-codes",)),
    ]


AREA = Area(
    "flow-job",
    "A parent's own calls: moveToWaitingChildren (0, 1 and its codes) and "
    "getDependencyCounts; a child leaving its parent with removeChildDependency.",
    NOTES,
    tuple(_cases()),
    since=FLOW_SINCE,
    rule=(
        "moveToWaitingChildren(token, child?) moves an active job with a pending dependency "
        "to waiting-children at now (0), or answers 1 when none is pending; "
        "getDependencyCounts counts :processed, :dependencies, :failed and :unsuccessful; "
        "removeChildDependency unlinks a child, releasing a parent left with nothing pending "
        "to the head of wait."
    ),
)
