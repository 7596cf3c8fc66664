"""flow-add: adding parents (addParentJob-6) and children (the add scripts with a parent).

A child names its parent in `opts.parent` (`{id, queue}`) and its failure policy in the flags;
the client sends the parent's key, its `:dependencies` key and the parent record. Vectors name
their queue `<q>` (`reference_impl.keys.QUEUE_REF`): a parent key is `<q>:<id>`.
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, T, add, job_hash, zset
from reference_impl.keys import QUEUE_REF
from reference_impl.ops import Add, AddParentJob

#: The earliest release the flow facts were checked on: their scripts are the same from 6.0.0
#: to 6.7.0 (5.x released parents differently; not modelled).
FLOW_SINCE = versions.WORKER_SINCE

NOTES = {
    "parent-job": Flag(
        "flow",
        "addParentJob stores the job like any add (hash, `added`), then ZADDs it to "
        "`waiting-children` scored by its timestamp and emits `waiting-children jobId <id>`; "
        "a delay or priority is only stored, for when the parent is released.",
    ),
    "child-link": Flag(
        "flow",
        "A child's hash gets `parentKey` = `<queue>:<parent id>` and `parent` = the JSON "
        "record {id, queueKey}; its full key joins the parent's `:dependencies` set, whatever "
        "script added it (standard, delayed, prioritized, parent).",
    ),
    "policy-record": Flag(
        "flow",
        "The failure policy flag set in the child's options (fpof, cpof, idof or rdof; the "
        "clients refuse more than one) is copied into the parent record as true; unset flags "
        "are left out (bullmq#4332: a record without them leaves the parent waiting "
        "forever). The flow-child-end vectors show each flag's record.",
    ),
    "missing-parent": Flag(
        "precondition",
        "A parent key whose hash is missing gives -5 before anything is written: no id is "
        "drawn, meta is not touched.",
    ),
    "duplicate-child": Flag(
        "flow",
        "A custom id that exists: with no parent, the same parent, or a parent that is gone, "
        "the job takes the new parent (a completed job counts as processed at once, with its "
        "return value; any other joins the dependencies) and `duplicated` is emitted; a job "
        "whose other parent still exists gives -7.",
    ),
    "parent-state": Flag(
        "flow",
        "The parent only has to exist: a child may be added under a parent that is waiting, "
        "which stays where it is.",
    ),
}

P = "p"


def parent(name: str = "report", timestamp: int = T, *, job_id: str = P,
           **opts: Any) -> AddParentJob:
    """FlowProducer's add of a parent with id `job_id` and the given opts."""
    return AddParentJob(name, timestamp, {"n": name}, opts, job_id)


def child(name: str, parent_id: str = P, timestamp: int = T, *, job_id: str | None = None,
          **opts: Any) -> Add:
    """An add of a child of `parent_id` (in the vector's queue), with the given opts (delay,
    priority, the policy flags)."""
    return Add(name, timestamp, {"n": name}, {"parent": {"id": parent_id, "queue": QUEUE_REF},
                                             **opts}, job_id)


def completed_job(job_id: str, value: str = '"ok"', **extra: str) -> dict[str, Any]:
    """A seeded completed job: its hash and the completed zset."""
    fields = {"name": job_id, "data": "{}", "opts": "{}", "timestamp": str(T), "delay": "0",
              "priority": "0", "returnvalue": value, "finishedOn": str(T + 50), **extra}
    return {job_id: job_hash(fields), "completed": zset([(job_id, T + 50)])}


def _cases() -> list[Case]:
    return [
        Case("parent-waits-for-children",
             "addParentJob puts the parent in waiting-children at its timestamp, with the "
             "waiting-children event.",
             (parent(timestamp=T + 123),), ("parent-job",)),
        Case("parent-delay-priority-stored",
             "A parent's delay and priority are stored; it still goes to waiting-children.",
             (parent(delay=5000, priority=3),), ("parent-job",)),
        Case("child-standard",
             "A waiting child stores parentKey and the record; its key joins the parent's "
             "dependencies.",
             (parent(), child("a")), ("child-link", "parent-job")),
        Case("child-delayed",
             "A delayed child is linked to its parent like a waiting one.",
             (parent(), child("a", delay=5000)), ("child-link",)),
        Case("child-prioritized",
             "A prioritized child is linked to its parent like a waiting one.",
             (parent(), child("a", priority=2)), ("child-link",)),
        Case("two-children",
             "Two children: both keys are in the parent's dependencies.",
             (parent(), child("a"), child("b")), ("child-link",)),
        Case("parent-of-a-parent",
             "A parent with a parent: waiting-children, and linked to its own parent.",
             (parent("root", job_id="root"), parent("mid", job_id="mid", parent={
                 "id": "root", "queue": QUEUE_REF})), ("child-link", "parent-job")),
        Case("record-fpof",
             "failParentOnFailure: the record is {id, queueKey, fpof: true}.",
             (parent(), child("a", fpof=True)), ("policy-record",)),
        Case("missing-parent",
             "A child of a parent that does not exist: -5, and nothing is written.",
             (child("a", "ghost"),), ("missing-parent",)),
        Case("missing-grandparent",
             "A parent whose own parent does not exist: -5, and nothing is written.",
             (parent(parent={"id": "ghost", "queue": QUEUE_REF}),), ("missing-parent",)),
        Case("parent-in-wait",
             "A child of a waiting job: linked; the parent stays in wait.",
             (add("plain", job_id=P), child("a")), ("parent-state", "child-link")),
        Case("duplicate-same-parent",
             "The same child added twice under the same parent: duplicated, and still one "
             "dependency.",
             (parent(), child("a", job_id="c"), child("a", job_id="c")),
             ("duplicate-child",)),
        Case("duplicate-adopted",
             "A waiting job without a parent, added again as a child: it joins the dependencies, "
             "gets the link.",
             (add("a", job_id="c"), parent(), child("a", job_id="c")), ("duplicate-child",)),
        Case("duplicate-completed-releases-parent",
             "A completed job added as the only child counts as processed; the parent is released "
             "at once.",
             (parent(), child("a", job_id="c")), ("duplicate-child",),
             given=completed_job("c")),
        Case("duplicate-other-parent",
             "A job under an existing parent, added under another: -7; only the id counter "
             "and meta change.",
             (parent("one", job_id="p1"), child("a", "p1", job_id="c"),
              parent("two", job_id="p2"), child("a", "p2", job_id="c")),
             ("duplicate-child",)),
        Case("duplicate-parent-gone",
             "A job whose parent was deleted, added under another: the new parent adopts it.",
             (parent("two", job_id="p2"), child("a", "p2", job_id="c")), ("duplicate-child",),
             given={"c": job_hash({"name": "a", "data": "{}", "opts": "{}",
                                   "timestamp": str(T), "delay": "0", "priority": "0",
                                   "parentKey": f"{QUEUE_REF}:gone",
                                   "parent": f'{{"id":"gone","queueKey":"{QUEUE_REF}"}}'}),
                    "wait": {"list": ["c"]}}),
        Case("missing-parent-before-duplicate",
             "An existing custom id added under a missing parent: -5 (checked first); the job is "
             "left alone.",
             (add("a", job_id="c"), child("a", "ghost", job_id="c")), ("missing-parent",)),
        Case("duplicate-completed-one-of-two",
             "A completed job added as a second child: its value is recorded; the parent waits "
             "for the first.",
             (parent(), child("a"), child("b", job_id="c")), ("duplicate-child",),
             given=completed_job("c")),
        Case("duplicate-failed-child",
             "A failed job added as a child joins the dependencies: the parent waits for a job "
             "that won't run.",
             (parent(), child("a", job_id="c")), ("duplicate-child",),
             given={"c": job_hash({"name": "a", "data": "{}", "opts": "{}",
                                   "timestamp": str(T), "delay": "0", "priority": "0",
                                   "failedReason": "boom", "finishedOn": str(T + 50)}),
                    "failed": zset([("c", T + 50)])}),
        Case("duplicate-parent",
             "addParentJob with an id that exists: duplicated, and waiting-children is left "
             "alone.",
             (add("plain", job_id=P), parent()), ("parent-job", "duplicate-child")),
    ]


AREA = Area(
    "flow-add",
    "Adding a flow: addParentJob, children added with a parent (the link, the parent record "
    "and its policy flags, the dependencies), -5 for a missing parent, and a custom id added "
    "again (-7, adoption).",
    NOTES,
    tuple(_cases()),
    since=FLOW_SINCE,
    rule=(
        "addParentJob stores the job and puts it in `waiting-children` at its timestamp. A "
        "child (`opts.parent = {id, queue}`) stores `parentKey` = `<queue>:<id>` and `parent` "
        "= {id, queueKey, and each policy flag set}, and its key joins `<queue>:<id>:"
        "dependencies`. A missing parent hash gives -5 before any write."
    ),
)
