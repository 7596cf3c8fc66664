"""The flow rules of the `properties` state machine: FlowProducer.add of a parent with one
child or of a chain (root > mid > leaf), Queue.add of a child under a known job, and a job's
flow calls (moveToWaitingChildren, getDependencyCounts, removeChildDependency,
removeUnprocessedChildren, removeJob with or without its children), mixed into
`conformance.properties.machine.DifferentialMachine` beside the queue half's and the worker
half's rules. Like the worker half's, they are claimed from `versions.WORKER_SINCE` on only.

Every parent has at most one pending child at any time. Redis does not fix the SMEMBERS order
of a set of two or more non-integer members (a parent's `:dependencies` holds its children's
full keys), and the model raises NotImplementedError where a script walks such a set (removing
a parent with its children, or its unprocessed children; the lock check over pending
descendants). So each flow has one child per level, and a child is only added under a job with
nothing pending. Ids are fresh in each example (`f1`, `f1c`, `f2`, `f2m`, ...).

Values name the queue as `<q>` (`reference_impl.keys.QUEUE_REF`), as the model holds it; the
machine binds each op to the real name before the candidate gets it (`flow_op` says which ops
start that).
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
from hypothesis.stateful import precondition, rule

from conformance.properties.queue_rules import DELAYS, MISSING_ID, PRIORITIES, MachineState
from conformance.properties.worker_rules import WRONG_TOKEN
from reference_impl import versions
from reference_impl.keys import QUEUE_REF
from reference_impl.model import QueueModel
from reference_impl.ops import Add, AddFlow, AddParentJob, Op
from reference_impl.versions import Version
from reference_impl.worker_ops import (
    FLOW_JOB_OPS,
    GetDependencyCounts,
    MoveToWaitingChildren,
    RemoveChildDependency,
    RemoveJob,
    RemoveUnprocessedChildren,
)

#: A child's failure policy: none, or one of the flags its parent record carries.
POLICIES = (None, "fpof", "cpof", "idof", "rdof")
#: How a job is added: to wait, delayed, or prioritized.
ROUTES = ("standard", "delayed", "prioritized")
DEPENDENCY_TYPES = ("processed", "unprocessed", "ignored", "failed")
_FLOW_TYPES = (AddFlow, AddParentJob, *FLOW_JOB_OPS.values())


def flow_op(op: Op) -> bool:
    """Whether `op` belongs to a flow: once one has run, values in the queue name it (`<q>`)
    and the machine binds and unbinds every op of the example."""
    return isinstance(op, _FLOW_TYPES) or (isinstance(op, Add) and bool(op.opts.get("parent")))


def _route_opts(route: str, delay: int, priority: int) -> dict[str, Any]:
    if route == "delayed":
        return {"delay": delay}
    if route == "prioritized":
        return {"priority": priority}
    return {}


def _node(job_id: str, opts: dict[str, Any], *children: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f"job-{job_id}", "jobId": job_id, "data": {"id": job_id}}
    if opts:
        out["opts"] = opts
    if children:
        out["children"] = list(children)
    return out


def _with_policy(opts: dict[str, Any], policy: str | None) -> dict[str, Any]:
    return {**opts, policy: True} if policy else opts


def _flow_protocol(machine: Any) -> bool:
    """Flows are claimed from WORKER_SINCE on, like the worker half."""
    protocol: Version = machine.ctx.protocol
    return protocol >= versions.WORKER_SINCE


def _has_parents(machine: Any) -> bool:
    return _flow_protocol(machine) and bool(machine.parents)


def _has_children(machine: Any) -> bool:
    return _flow_protocol(machine) and bool(machine.children)


def _fetched_in_flow(machine: Any) -> bool:
    return _has_parents(machine) and bool(machine.fetched)


class FlowState(MachineState):
    """What the flow rules read and keep of the machine (`DifferentialMachine` sets them)."""

    model: QueueModel
    #: Jobs that were given a child, in order (each once).
    parents: list[str]
    #: (child, parent) of each child added, in order.
    children: list[tuple[str, str]]
    #: Flows and children added so far: the next fresh id's number.
    flows: int

    def _no_pending(self, job_id: str) -> bool:
        """Whether `job_id` has no pending child (the model's `:dependencies`), so that one
        more keeps it at one."""
        return self.model.store.scard(f"{job_id}:dependencies") == 0

    def _link(self, child: str, parent: str) -> None:
        if child not in self.ids:
            self.ids.append(child)
        if parent not in self.parents:
            self.parents.append(parent)
        self.children.append((child, parent))


def _childless_job(machine: Any) -> bool:
    return _flow_protocol(machine) and any(machine._no_pending(job_id) for job_id in machine.ids)


class FlowRules(FlowState):
    """Rules for flows."""

    @precondition(_flow_protocol)
    @rule(chain=st.booleans(), policies=st.tuples(st.sampled_from(POLICIES),
                                                    st.sampled_from(POLICIES)),
          root_route=st.sampled_from(ROUTES), leaf_route=st.sampled_from(ROUTES),
          delay=st.sampled_from(DELAYS), priority=st.sampled_from(PRIORITIES))
    def add_flow(self, chain: bool, policies: tuple[str | None, str | None], root_route: str,
                 leaf_route: str, delay: int, priority: int) -> None:
        """FlowProducer.add of a parent with one child, or of a chain root > mid > leaf; the
        root may be delayed or prioritized (it waits for its children first), the leaf added
        to wait, delayed or prioritized, each child with a random failure policy."""
        self.flows += 1
        root, leaf = f"f{self.flows}", f"f{self.flows}c"
        leaf_node = _node(leaf, _with_policy(_route_opts(leaf_route, delay, priority),
                                             policies[0]))
        links = [(leaf, root)]
        if chain:
            mid = f"f{self.flows}m"
            leaf_node = _node(mid, _with_policy({}, policies[1]), leaf_node)
            links = [(mid, root), (leaf, mid)]
        tree = _node(root, _route_opts(root_route, delay, priority), leaf_node)
        returned = self._apply(AddFlow(self.now, tree))
        if returned == root:
            if root not in self.ids:
                self.ids.append(root)
            for child, parent in links:
                self._link(child, parent)

    @precondition(_childless_job)
    @rule(ref=st.integers(0, 7), policy=st.sampled_from(POLICIES),
          route=st.sampled_from(ROUTES), delay=st.sampled_from(DELAYS),
          priority=st.sampled_from(PRIORITIES), custom=st.booleans())
    def add_child(self, ref: int, policy: str | None, route: str, delay: int, priority: int,
                  custom: bool) -> None:
        """Queue.add with opts.parent under a known job with nothing pending (often an active
        one: a worker adding a child to the job it runs), with a custom or an auto id."""
        free = [job_id for job_id in self.ids if self._no_pending(job_id)]
        parent = free[ref % len(free)]
        opts = _with_policy(_route_opts(route, delay, priority), policy)
        opts["parent"] = {"id": parent, "queue": QUEUE_REF}
        job_id = None
        if custom:
            self.flows += 1
            job_id = f"f{self.flows}c"
        returned = self._apply(Add("child", self.now, {"of": parent}, opts, job_id))
        if isinstance(returned, str):
            self._link(returned, parent)

    @precondition(_fetched_in_flow)
    @rule(index=st.integers(0, 7), honest=st.booleans(),
          named=st.sampled_from(("none", "own", "other")), ref=st.integers(0, 7))
    def move_to_waiting_children(self, index: int, honest: bool, named: str,
                                 ref: int) -> None:
        """Job.moveToWaitingChildren by the holder (or a stranger) of a fetched job, for any
        pending child, for one of its own children, or for another job's (or a missing one)."""
        job_id, token = self.fetched[index % len(self.fetched)]
        child: dict[str, str] | None = None
        if named == "own":
            own = [c for c, p in self.children if p == job_id]
            child = {"id": own[ref % len(own)] if own else MISSING_ID, "queue": QUEUE_REF}
        elif named == "other":
            others = [c for c, p in self.children if p != job_id]
            child = {"id": others[ref % len(others)] if others else MISSING_ID,
                     "queue": QUEUE_REF}
        self._apply(MoveToWaitingChildren(job_id, self.now, token if honest else WRONG_TOKEN,
                                          child))

    @precondition(_has_parents)
    @rule(ref=st.integers(-1, 7),
          types=st.lists(st.sampled_from(DEPENDENCY_TYPES), min_size=1, max_size=4,
                         unique=True))
    def get_dependency_counts(self, ref: int, types: list[str]) -> None:
        """Job.getDependenciesCount of a known parent (or a missing job), some types in some
        order."""
        job_id = self.parents[ref % len(self.parents)] if ref >= 0 else MISSING_ID
        self._apply(GetDependencyCounts(job_id, tuple(types)))

    @precondition(_has_children)
    @rule(ref=st.integers(0, 7),
          which=st.sampled_from(("own", "own", "other", "missing")))
    def remove_child_dependency(self, ref: int, which: str) -> None:
        """Job.removeChildDependency of a known child from its parent; or, as the script
        is called with any key, from another job (1) or a missing one (-5)."""
        child, parent = self.children[ref % len(self.children)]
        if which == "other":
            parent = next((p for p in reversed(self.parents) if p != parent), MISSING_ID)
        elif which == "missing":
            parent = MISSING_ID
        self._apply(RemoveChildDependency(child, f"{QUEUE_REF}:{parent}"))

    @precondition(_has_parents)
    @rule(ref=st.integers(0, 7))
    def remove_unprocessed_children(self, ref: int) -> None:
        """Job.removeUnprocessedChildren of a known parent."""
        self._apply(RemoveUnprocessedChildren(self.parents[ref % len(self.parents)]))

    @precondition(_has_parents)
    @rule(ref=st.integers(0, 15), children=st.booleans())
    def remove_flow_job(self, ref: int, children: bool) -> None:
        """Job.remove of a parent or a child of a flow, with or without its children."""
        jobs = list(dict.fromkeys([*self.parents, *(c for c, _ in self.children)]))
        self._apply(RemoveJob(jobs[ref % len(jobs)], remove_children=children))
