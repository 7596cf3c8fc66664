"""flow-remove: removeJob-2 on a child or a parent, and removeUnprocessedChildren-2."""

from __future__ import annotations

from reference_impl.cases import Area, Case, Flag, T, fetch
from reference_impl.cases.finish import complete, fail
from reference_impl.cases.flow_add import FLOW_SINCE, P
from reference_impl.cases.flow_insert import flow, node
from reference_impl.worker_ops import RemoveJob, RemoveUnprocessedChildren

NOTES = {
    "remove-child": Flag(
        "flow",
        "Removing a child takes it out of its parent's :dependencies first; the last one "
        "moves a parent waiting for children to the head of wait (`waiting ... prev "
        "waiting-children`), before the child's `removed`.",
    ),
    "remove-parent": Flag(
        "flow",
        "Removing a parent with its children (the default) removes its processed and failed "
        "children, then its pending ones (the last releasing it to wait on the way), then "
        "itself (`removed ... prev wait`); each child's own children go too.",
    ),
    "remove-parent-alone": Flag(
        "flow",
        "With removeChildren false only the parent and its keys go (`:dependencies`, "
        "`:processed` too); its children stay, still naming it.",
    ),
    "remove-locked": Flag(
        "lock-stall",
        "A parent is not removed (0, nothing written) while it or, with its children, any "
        "pending descendant holds a lock.",
    ),
    "unprocessed": Flag(
        "flow",
        "removeUnprocessedChildren removes the pending children (and theirs), leaving a "
        "locked or failed child, and the processed ones; the last one removed releases the "
        "parent to wait. It answers nothing.",
    ),
}


def _cases() -> list[Case]:
    return [
        Case("child-last",
             "Removing the only child: the parent is released to wait, then the child is "
             "removed.",
             (flow(node(P, node("c1"))), RemoveJob("c1")), ("remove-child",)),
        Case("child-one-of-two",
             "Removing one of two children: the parent keeps waiting for the other.",
             (flow(node(P, node("c1"), node("c2"))), RemoveJob("c1")), ("remove-child",)),
        Case("completed-child",
             "Removing a completed child: it is no dependency, the parent's :processed "
             "keeps its entry.",
             (flow(node(P, node("c1"), node("c2"))), fetch(T + 10), complete("c1"),
              RemoveJob("c1")), ("remove-child",)),
        Case("orphan-completes",
             "After its parent was removed alone, a child completes: nothing is written "
             "for the parent.",
             (flow(node(P, node("c1"))), RemoveJob(P, remove_children=False),
              fetch(T + 10), complete("c1")), ("remove-parent-alone",)),
        Case("parent-with-children",
             "A parent with a processed and a pending child: both go (the pending one releasing "
             "it), then it.",
             (flow(node(P, node("c1"), node("c2"))), fetch(T + 10), complete("c1"),
              RemoveJob(P)), ("remove-parent",)),
        Case("parent-with-failed-child",
             "A parent whose fpof child failed (in :unsuccessful) and was released: the "
             "failed child goes with it.",
             (flow(node(P, node("c1", fpof=True))), fetch(T + 10), fail("c1"), RemoveJob(P)),
             ("remove-parent",)),
        Case("chain",
             "root > mid > leaf, removing root: mid and leaf go, each releasing its parent "
             "on the way.",
             (flow(node("root", node("mid", node("leaf")))), RemoveJob("root")),
             ("remove-parent",)),
        Case("parent-alone",
             "removeChildren false: the parent and its keys go, the children stay.",
             (flow(node(P, node("c1"))), RemoveJob(P, remove_children=False)),
             ("remove-parent-alone",)),
        Case("locked-child",
             "A pending child is active (locked): removing the parent answers 0.",
             (flow(node(P, node("c1"))), fetch(T + 10), RemoveJob(P)), ("remove-locked",)),
        Case("locked-child-parent-alone",
             "A locked child does not stop the removal of the parent alone.",
             (flow(node(P, node("c1"))), fetch(T + 10), RemoveJob(P, remove_children=False)),
             ("remove-locked", "remove-parent-alone")),
        Case("unprocessed",
             "A processed and a pending child: the pending one goes, releasing the parent; the "
             "other stays.",
             (flow(node(P, node("c1"), node("c2"))), fetch(T + 10), complete("c1"),
              RemoveUnprocessedChildren(P)), ("unprocessed",)),
        Case("unprocessed-locked",
             "The pending child is active (locked): it stays, and so does the parent.",
             (flow(node(P, node("c1"))), fetch(T + 10), RemoveUnprocessedChildren(P)),
             ("unprocessed",)),
        Case("unprocessed-failed",
             "The pending child failed (no policy): it stays a dependency and is not removed.",
             (flow(node(P, node("c1"))), fetch(T + 10), fail("c1"),
              RemoveUnprocessedChildren(P)), ("unprocessed",)),
        Case("unprocessed-grandchildren",
             "root > mid > leaf: removing root's unprocessed children takes mid and leaf.",
             (flow(node("root", node("mid", node("leaf")))),
              RemoveUnprocessedChildren("root")), ("unprocessed",)),
    ]


AREA = Area(
    "flow-remove",
    "Removing a child or a parent (removeJob, with and without its children, blocked by a "
    "lock) and a parent's pending children (removeUnprocessedChildren).",
    NOTES,
    tuple(_cases()),
    since=FLOW_SINCE,
    rule=(
        "Removing a job first takes it out of its parent's :dependencies (the last one "
        "releasing the parent to the head of wait); with its children it then removes the "
        "processed, failed and pending ones, each with theirs; then the job itself. A lock "
        "on the job, or on a pending descendant, stops removeJob (0). "
        "removeUnprocessedChildren removes only pending, unlocked, not failed children."
    ),
)
