"""flow-child-end: what a child's completion or failure (moveToFinished-14) does to its parent.

A completed child (found through its `parentKey`) leaves the parent's `:dependencies` for
`:processed` with its return value, and the last one releases the parent. A failed child acts
by the flags of the parent record stored on it, never by the finishing call's options.
"""

from __future__ import annotations

from typing import Any

from reference_impl.cases import Area, Case, Flag, T, add, fetch, job_hash, zset
from reference_impl.cases.finish import complete, fail
from reference_impl.cases.flow_add import FLOW_SINCE, P, child
from reference_impl.cases.flow_insert import flow, node
from reference_impl.keys import QUEUE_REF
from reference_impl.ops import Pause
from reference_impl.worker_ops import RetryJob

NOTES = {
    "processed": Flag(
        "flow",
        "A completed child still in the parent's `:dependencies` is moved out of it (SREM) "
        "into `:processed`, keyed by its full key, with its return value as sent; a child "
        "no longer there writes nothing to the parent.",
    ),
    "release": Flag(
        "flow",
        "When the last dependency goes, a parent in `waiting-children` is released: RPUSH to "
        "wait (the next job taken), marker 0 unless paused or maxed, and `waiting jobId <p> "
        "prev waiting-children`, before the child's own `completed` event.",
    ),
    "release-route": Flag(
        "flow",
        "A released parent with a priority goes to prioritized at the next `pc`; one with a "
        "delay goes to delayed at exactly (now + delay) * 0x1000, with no same-millisecond "
        "band, a `delayed` event and the delay marker.",
    ),
    "release-needs-waiting": Flag(
        "flow",
        "Only a parent that exists and is in `waiting-children` moves; another parent, or a "
        "deleted one, keeps `:processed` updated and moves nowhere.",
    ),
    "fail-no-policy": Flag(
        "flow",
        "A failed child without a policy flag in its parent record leaves the parent as it "
        "was: the child stays a dependency, and the parent waits.",
    ),
    "fpof": Flag(
        "flow",
        "failParentOnFailure: the child leaves `:dependencies` for `:unsuccessful` (scored "
        "now); a parent in waiting-children is released at once with `defa` = \"child "
        "<key> failed\" (a worker fails it when taken); a parent elsewhere, unless failed, "
        "only gets `defa`.",
    ),
    "cpof": Flag(
        "flow",
        "continueParentOnFailure: the child leaves `:dependencies`, its failedReason goes "
        "into the parent's `:failed` hash, and the parent is released even with other "
        "children still pending.",
    ),
    "idof-rdof": Flag(
        "flow",
        "ignoreDependencyOnFailure and removeDependencyOnFailure: the child leaves "
        "`:dependencies` and the parent is released when none is left; idof also records "
        "the failedReason in the parent's `:failed`, rdof does not.",
    ),
    "policy-source": Flag(
        "flow",
        "The policy is read from the parent record on the child (`parent`), not from the "
        "child's opts.",
    ),
    "removed-child": Flag(
        "flow",
        "A child deleted as it finishes (keepJobs count 0) is still unlinked: completed, "
        "through `:processed` as usual; failed without a policy, by removing it from "
        "`:dependencies`, the last one moving the parent to the head of wait whatever its "
        "priority or delay; a failed child trimmed later (keepJobs) is unlinked the same way.",
    ),
}

#: When children finish: a minute after they were added.
NOW = T + 60000


def _flow(*children: dict[str, Any], **parent_opts: Any) -> tuple[Any, ...]:
    """FlowProducer.add of parent `p` (with `parent_opts`) and `children` (nodes), and the
    first child taken by a worker."""
    return (flow(node(P, *children, **parent_opts)), fetch(T + 100))


def _seeded(*, record: str = "", opts: str = '{"attempts":3}', dependency: bool = True,
            parent_hash: bool = True) -> dict[str, Any]:
    """An active child `c` of parent `p` (in waiting-children), seeded: `record` is extra
    JSON members of its parent record; `dependency`: c is in p's dependencies; `parent_hash`:
    p's hash exists."""
    given: dict[str, Any] = {
        "waiting-children": zset([(P, T)]),
        "c": job_hash({"name": "a", "opts": opts, "parentKey": f"{QUEUE_REF}:{P}",
                       "parent": f'{{"id":"{P}","queueKey":"{QUEUE_REF}"{record}}}',
                       "processedOn": str(T + 100), "ats": "1"}),
        "c:lock": {"string": {"value": "tok", "pttl": 30000}},
        "active": {"list": ["c"]},
    }
    if parent_hash:
        given[P] = job_hash({"name": "report", "delay": "0", "priority": "0"})
    if dependency:
        given[f"{P}:dependencies"] = {"set": [f"{QUEUE_REF}:c"]}
    return given


def _cases() -> list[Case]:
    return [
        Case("last-child-releases-parent",
             "The only child completes: its value in processed, the parent in wait with marker 0 "
             "and its event.",
             (*_flow(node("c1")), complete("c1")), ("processed", "release")),
        Case("one-of-two",
             "One of two children completes: the parent keeps waiting for the other.",
             (*_flow(node("c1"), node("c2")), complete("c1")), ("processed",)),
        Case("released-parent-taken-next",
             "A released parent is RPUSHed: a fetch takes it before a job that was waiting.",
             (*_flow(node("c1")), add("late"), complete("c1"), fetch(NOW)),
             ("release",)),
        Case("value-verbatim",
             "processed stores the return value exactly as sent.",
             (*_flow(node("c1")), complete("c1", value='{"rows":[1,2,3],"ok":true}')),
             ("processed",)),
        Case("release-prioritized",
             "A released parent with priority 3 goes to prioritized at pc 1.",
             (*_flow(node("c1"), priority=3), complete("c1")), ("release-route",)),
        Case("release-delayed-no-band",
             "A released parent with delay 5000 scores (now + 5000) * 0x1000 exactly, beside a "
             "job due then.",
             (add("other", T, delay=NOW + 5000 - T), *_flow(node("c1"), delay=5000),
              complete("c1")), ("release-route",)),
        Case("release-paused",
             "Paused: the released parent goes to wait without marker 0.",
             (*_flow(node("c1")), Pause(), complete("c1")), ("release",)),
        Case("parent-not-waiting",
             "A waiting (not waiting-children) parent: processed is written, the parent stays.",
             (add("plain", job_id=P), child("a"), fetch(T + 100), fetch(T + 100),
              complete("2")), ("release-needs-waiting", "processed")),
        Case("parent-deleted",
             "The parent's hash is gone: processed is still written, nothing moves.",
             (complete("c"),), ("release-needs-waiting", "processed"),
             given=_seeded(parent_hash=False)),
        Case("not-a-dependency",
             "A child no longer in dependencies writes nothing to the parent.",
             (complete("c"),), ("processed",), given=_seeded(dependency=False)),
        Case("fail-no-policy",
             "A failed child without a policy: the parent keeps waiting, the child stays a "
             "dependency.",
             (*_flow(node("c1")), fail("c1")), ("fail-no-policy",)),
        Case("fpof-releases-with-defa",
             "fpof: the child goes to unsuccessful, the parent to wait with defa set.",
             (*_flow(node("c1", fpof=True), node("c2")), fail("c1")), ("fpof",)),
        Case("fpof-parent-active",
             "fpof under a parent that is active: defa is set, the parent stays.",
             (add("plain", job_id=P), fetch(T + 50), child("a", fpof=True), fetch(T + 100),
              fail("2")), ("fpof",)),
        Case("fpof-parent-failed",
             "fpof under a parent that already failed: no defa.",
             (child("a", fpof=True), fetch(T + 100), fail("1")), ("fpof",),
             given={P: job_hash({"name": "report", "failedReason": "x"}),
                    "failed": zset([(P, T + 10)])}),
        Case("fpof-prioritized-parent",
             "fpof with a priority-2 parent: it is released to prioritized, with defa.",
             (*_flow(node("c1", fpof=True), priority=2), fail("c1")), ("fpof",)),
        Case("cpof-releases-early",
             "cpof: failed records the reason and the parent is released though another "
             "child is pending.",
             (*_flow(node("c1", cpof=True), node("c2")), fail("c1")), ("cpof",)),
        Case("idof-last",
             "idof on the last dependency: failed records the reason, the parent is released.",
             (*_flow(node("c1", idof=True)), fail("c1")), ("idof-rdof",)),
        Case("idof-others-pending",
             "idof with another child pending: the reason is recorded, the parent waits.",
             (*_flow(node("c1", idof=True), node("c2")), fail("c1")), ("idof-rdof",)),
        Case("rdof-last",
             "rdof on the last dependency: the parent is released, nothing in failed.",
             (*_flow(node("c1", rdof=True)), fail("c1")), ("idof-rdof",)),
        Case("policy-from-record",
             "A child whose opts say fpof but whose parent record has no flag: the parent "
             "keeps waiting.",
             (fail("c"),), ("policy-source", "fail-no-policy"),
             given=_seeded(opts='{"fpof":true,"attempts":3}')),
        Case("policy-from-record-only",
             "A child whose record says fpof and whose opts do not: the parent is failed.",
             (fail("c"),), ("policy-source", "fpof"), given=_seeded(record=',"fpof":true')),
        Case("removed-on-complete",
             "keepJobs count 0: the child's keys go, processed is written, the parent released.",
             (*_flow(node("c1")), complete("c1", keep_jobs={"count": 0})), ("removed-child",)),
        Case("removed-on-fail-to-wait",
             "A failed child removed at once (no policy) is unlinked; the priority-2 parent goes "
             "to wait.",
             (*_flow(node("c1"), priority=2), fail("c1", keep_jobs={"count": 0})),
             ("removed-child",)),
        Case("release-delayed-behind-earlier",
             "A parent released to delayed behind an earlier delayed job: the marker keeps "
             "the earlier fire time.",
             (add("early", T, delay=NOW + 1000 - T), *_flow(node("c1"), delay=5000),
              complete("c1")), ("release-route",)),
        Case("release-maxed",
             "At its global concurrency (1, another job active), the released parent gets no "
             "marker 0.",
             (complete("c"),), ("release",),
             given=_seeded() | {"meta": job_hash({"concurrency": "1"}),
                                "active": {"list": ["busy", "c"]}}),
        Case("release-fetched-next",
             "Completing the last child with fetch-next takes the released parent in the "
             "same call.",
             (*_flow(node("c1")), complete("c1", fetch_next=True)), ("release",)),
        Case("parent-completes",
             "The released parent is taken and completes (0); its :processed stays.",
             (*_flow(node("c1")), complete("c1"), fetch(NOW),
              complete(P, now=NOW + 10, value='"sum"')), ("processed",)),
        Case("parent-pending-children",
             "A running job with a pending child cannot complete: -4, before its lock is "
             "checked.",
             (add("report", job_id=P), fetch(T + 50), child("a", job_id="c"),
              complete(P, token="none")), ("release-needs-waiting",)),
        Case("parent-failed-child",
             "A running job whose fpof child failed cannot complete: -9.",
             (add("report", job_id=P), fetch(T + 50), child("a", job_id="c", fpof=True),
              fetch(T + 60), fail("c"), complete(P)), ("fpof",)),
        Case("parent-fails-with-children",
             "A running job with a pending child can still fail; the child stays its "
             "dependency.",
             (add("report", job_id=P), fetch(T + 50), child("a", job_id="c"), fail(P)),
             ("release-needs-waiting",)),
        Case("fpof-after-cpof",
             "cpof released the delayed parent; an fpof failure then zeroes its delay, sends it "
             "to wait with defa.",
             (*_flow(node("c1", cpof=True), node("c2", fpof=True), delay=5000),
              fetch(T + 100), fail("c1"), fail("c2", now=NOW + 10)), ("fpof", "cpof")),
        Case("fpof-parent-in-wait",
             "An fpof child failing after the parent was released to wait: defa is set, "
             "the parent stays in wait.",
             (*_flow(node("c1", cpof=True), node("c2", fpof=True)), fetch(T + 100),
              fail("c1"), fail("c2", now=NOW + 10)), ("fpof",)),
        Case("retried-child-stays",
             "A retried child (retryJob) stays a dependency; completing it then releases the "
             "parent.",
             (*_flow(node("c1")), RetryJob("c1", NOW), fetch(NOW + 10),
              complete("c1", now=NOW + 20)), ("processed", "release")),
        Case("trimmed-completed-child",
             "A completed child trimmed by keepJobs count 1 leaves the parent's :processed "
             "as it was.",
             (*_flow(node("c1"), node("c2")), complete("c1"), fetch(NOW),
              complete("c2", now=NOW + 1, keep_jobs={"count": 1})), ("processed",)),
        Case("trimmed-failed-child",
             "A failed child (no policy) trimmed by keepJobs count 1 is unlinked: the parent goes "
             "to wait.",
             (flow(node(P, node("c1"))), add("x", job_id="x"), fetch(T + 100), fetch(T + 100),
              fail("c1"), fail("x", now=NOW + 1, keep_jobs={"count": 1})),
             ("removed-child",)),
    ]


AREA = Area(
    "flow-child-end",
    "A child finishing: completed children move to the parent's processed, the last one "
    "releasing the parent (wait, prioritized or delayed); failed children act by the parent "
    "record's policy (fpof, cpof, idof, rdof, none); a child deleted as it finishes.",
    NOTES,
    tuple(_cases()),
    since=FLOW_SINCE,
    rule=(
        "On completion, a child in `<parent>:dependencies` moves to `<parent>:processed` "
        "(field: the child's key, value: its return value); with none left, a parent in "
        "`waiting-children` is released: RPUSH wait, prioritized, or delayed at (now + "
        "delay) * 0x1000. On failure the stored record decides: fpof → `:unsuccessful` and "
        "the parent released with `defa`; cpof → `:failed` and released; idof/rdof → "
        "released when none is pending (idof also writes `:failed`); no flag → nothing."
    ),
)
