"""flow-insert: FlowProducer.add, a tree of jobs in one transaction.

The root and every node with children are added by addParentJob, the leaves by the add
scripts, root first and then level by level; from 6.5.1 each add carries the defer flag and
each parent is then checked by releaseParentIfNoPendingDependencies. Node ids are given (the
Node client would draw UUIDs).
"""

from __future__ import annotations

from typing import Any

from reference_impl.cases import Area, Case, Flag, T
from reference_impl.cases.flow_add import FLOW_SINCE, completed_job
from reference_impl.keys import QUEUE_REF
from reference_impl.ops import AddFlow

NOTES = {
    "flow-tree": Flag(
        "flow",
        "A flow's root and inner nodes go to waiting-children, its leaves to wait (or "
        "delayed, prioritized), each child linked to the node above it; the entries go in "
        "root first, then level by level, each drawing an id count.",
    ),
    "deferred-release": Flag(
        "flow",
        "From 6.5.1 a child that already exists completed only records its return value in "
        "the parent's :processed; the parent is released once every entry is in, when "
        "nothing is pending (before 6.5.1 it was released at once, ahead of its later "
        "children).",
    ),
    "attachment-failed": Flag(
        "flow",
        "A child id held by another existing parent is refused (-7, which FlowProducer does "
        "not report for a child); its parent is marked flowAttachmentFailed, and the release "
        "check only clears the mark: the parent stays in waiting-children.",
    ),
    "root-reply": Flag(
        "flow",
        "The op's result is the root's reply: its id, also when the root id exists already.",
    ),
}


def node(job_id: str, *children: dict[str, Any], **opts: Any) -> dict[str, Any]:
    """A flow node named after its id, with `opts` and `children`."""
    out: dict[str, Any] = {"name": f"job-{job_id}", "jobId": job_id, "data": {"id": job_id}}
    if opts:
        out["opts"] = opts
    if children:
        out["children"] = list(children)
    return out


def flow(root: dict[str, Any], timestamp: int = T) -> AddFlow:
    """FlowProducer.add of `root` at `timestamp`."""
    return AddFlow(timestamp, root)


def _other_parent_of(job_id: str) -> dict[str, Any]:
    """A waiting job `job_id` that is the child of an existing parent `other`."""
    return {
        "other": {"hash": {"name": "other", "data": "{}", "opts": "{}", "timestamp": str(T),
                           "delay": "0", "priority": "0"}},
        "other:dependencies": {"set": [f"{QUEUE_REF}:{job_id}"]},
        "waiting-children": {"zset": {"other": T}},
        job_id: {"hash": {"name": job_id, "data": "{}", "opts": "{}", "timestamp": str(T),
                          "delay": "0", "priority": "0", "parentKey": f"{QUEUE_REF}:other",
                          "parent": f'{{"id":"other","queueKey":"{QUEUE_REF}"}}'}},
        "wait": {"list": [job_id]},
    }


def _cases() -> list[Case]:
    return [
        Case("parent-and-children",
             "A parent with two children: it waits for both, they wait; the root's id is the "
             "result.",
             (flow(node("p", node("c1"), node("c2"))),), ("flow-tree", "root-reply")),
        Case("chain",
             "root > mid > leaf: root and mid wait for children, mid is root's dependency, "
             "leaf is mid's.",
             (flow(node("root", node("mid", node("leaf")))),), ("flow-tree",)),
        Case("children-options",
             "Children keep their own options: a delayed child with fpof, a prioritized one.",
             (flow(node("p", node("c1", delay=5000, fpof=True), node("c2", priority=2))),),
             ("flow-tree",)),
        Case("completed-child-first",
             "An existing completed child listed first is recorded; the parent waits for the new "
             "child.",
             (flow(node("p", node("c1"), node("c2"))),), ("deferred-release",),
             given=completed_job("c1")),
        Case("all-children-completed",
             "Every child exists completed: the parent is released once all are in.",
             (flow(node("p", node("c1"), node("c2"))),), ("deferred-release",),
             given=completed_job("c1") | {
                 "c2": completed_job("c2")["c2"],
                 "completed": {"zset": {"c1": T + 50, "c2": T + 50}}}),
        Case("child-of-another-parent",
             "The only child belongs to another live parent: refused; the new parent waits with "
             "no dependency.",
             (flow(node("p", node("c1"))),), ("attachment-failed",),
             given=_other_parent_of("c1")),
        Case("attachment-failed-blocks-release",
             "c1 exists completed, c2 has another parent: c2 refused, the marked parent stays "
             "waiting.",
             (flow(node("p", node("c1"), node("c2"))),), ("attachment-failed",
                                                           "deferred-release"),
             given=completed_job("c1") | _other_parent_of("c2")),
        Case("chain-leaf-completed",
             "root > mid > leaf, leaf exists completed: mid records it and is released; root "
             "waits for mid.",
             (flow(node("root", node("mid", node("leaf")))),), ("deferred-release",),
             given=completed_job("leaf")),
        Case("root-exists",
             "The root id exists (waiting): its id is the result, the children join it, it stays "
             "where it was.",
             (flow(node("p", node("c1"))),), ("root-reply",),
             given={"p": {"hash": {"name": "p", "data": "{}", "opts": "{}",
                                   "timestamp": str(T), "delay": "0", "priority": "0"}},
                    "wait": {"list": ["p"]}}),
    ]


AREA = Area(
    "flow-insert",
    "FlowProducer.add: a tree added in one transaction (parents by addParentJob, leaves by "
    "the add scripts), the deferred release of parents whose children all exist completed "
    "(6.5.1), and a child held by another parent (-7, flowAttachmentFailed).",
    NOTES,
    tuple(_cases()),
    since=FLOW_SINCE,
    rule=(
        "FlowProducer.add sends the root, then each level of the tree: a node with children "
        "by addParentJob (to waiting-children), a leaf by the add scripts, every child with "
        "its parent link; from 6.5.1 with the defer flag, and then "
        "releaseParentIfNoPendingDependencies for each parent, which releases it when nothing "
        "is pending unless a child failed to attach."
    ),
)
