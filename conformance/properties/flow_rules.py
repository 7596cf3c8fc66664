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
start that). A flow's leaf may live in a second queue (`<q2>`): a worker there ends it
(`finish_child_elsewhere`), and the calls on such a child go to its queue.
"""

from __future__ import annotations

from typing import Any, TypeVar

import hypothesis.strategies as st
from hypothesis.stateful import precondition, rule

from conformance.properties.queue_rules import (
    DELAYS,
    MISSING_ID,
    PRIORITIES,
    MachineState,
    nameable,
)
from conformance.properties.worker_rules import KEEP_JOBS, WRONG_TOKEN
from reference_impl import versions
from reference_impl.cases.flow_insert import node
from reference_impl.flows import POLICY_FLAGS
from reference_impl.keys import QUEUE2_REF, QUEUE_REF
from reference_impl.model import QueueModel
from reference_impl.ops import Add, AddFlow, AddParentJob, MoveToActive, Op
from reference_impl.versions import Version
from reference_impl.worker_ops import (
    FLOW_JOB_OPS,
    GetDependencyCounts,
    MoveToFinished,
    MoveToWaitingChildren,
    RemoveChildDependency,
    RemoveJob,
    RemoveUnprocessedChildren,
)

#: A child's failure policy: none, or one of the flags its parent record carries.
POLICIES = (None, *POLICY_FLAGS)
#: How a job is added: to wait, delayed, or prioritized.
ROUTES = ("standard", "delayed", "prioritized")
DEPENDENCY_TYPES = tuple(GetDependencyCounts("").types)
_FLOW_TYPES = (AddFlow, AddParentJob, *FLOW_JOB_OPS.values())
_T = TypeVar("_T", str, tuple[str, str])


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
    return node(job_id, *children, **opts)


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


def _has_children_elsewhere(machine: Any) -> bool:
    return _flow_protocol(machine) and bool(machine.elsewhere)


def _fetched_in_flow(machine: Any) -> bool:
    return _has_parents(machine) and bool(machine.fetched)


class FlowState(MachineState):
    """What the flow rules read and keep of the machine (`DifferentialMachine` sets them)."""

    model: QueueModel
    #: The second queue's model (children elsewhere).
    model2: QueueModel
    #: Jobs that were given a child, in order (each once).
    parents: list[str]
    #: (child, parent) of each child added, in order.
    children: list[tuple[str, str]]
    #: Flows and children added so far: the next fresh id's number.
    flows: int
    #: The children that live in the second queue (never in `ids`, the first queue's jobs).
    elsewhere: set[str]
    #: Of those, the fetched ones with their tokens (a worker of the second queue).
    fetched2: list[tuple[str, str]]
    #: The check's shared context (`conformance.properties.machine.Context`).
    ctx: Any

    def _no_pending(self, job_id: str) -> bool:
        """Whether `job_id` has no pending child (the model's `:dependencies`), so that one
        more keeps it at one."""
        return self.model.store.scard(f"{job_id}:dependencies") == 0

    def _active(self, jobs: list[_T]) -> list[_T]:
        """Of `jobs` (ids, or (id, token) pairs), those the model holds in `active`, or all
        of them when none is: the rules that want a worker's running job pick these first."""
        active = set(self.model.store.lrange("active"))
        running = [job for job in jobs if (job if isinstance(job, str) else job[0]) in active]
        return running or jobs

    def _held_children(self) -> list[tuple[str, str]]:
        """The fetched children (with their tokens) whose lock the token still holds, in
        the model."""
        children = {child for child, _ in self.children}
        store = self.model.store
        return [(job_id, token) for job_id, token in self.fetched
                if job_id in children and store.get(f"{job_id}:lock") == token]

    def _add_child(self, parent: str, policy: str | None, route: str, delay: int,
                   priority: int, custom: bool) -> str | None:
        """Queue.add of a child under `parent`; the child's id, or None when it was not
        added."""
        opts = _with_policy(_route_opts(route, delay, priority), policy)
        opts["parent"] = {"id": parent, "queue": QUEUE_REF}
        job_id = None
        if custom:
            self.flows += 1
            job_id = f"f{self.flows}c"
        returned = self._apply(Add("child", self.now, {"of": parent}, opts, job_id))
        if not isinstance(returned, str):
            return None
        self._link(returned, parent)
        return returned

    def _link(self, child: str, parent: str) -> None:
        if child not in self.ids and child not in self.elsewhere:
            self.ids.append(child)
        if parent not in self.parents:
            self.parents.append(parent)
        self.children.append((child, parent))


def _childless_job(machine: Any) -> bool:
    return _flow_protocol(machine) and any(machine._no_pending(job_id) for job_id in machine.ids)


def _fetched_childless(machine: Any) -> bool:
    return _flow_protocol(machine) and any(machine._no_pending(job_id)
                                           for job_id, _ in machine.fetched)


class FlowRules(FlowState):
    """Rules for flows."""

    @precondition(_flow_protocol)
    @rule(chain=st.booleans(), policies=st.tuples(st.sampled_from(POLICIES),
                                                    st.sampled_from(POLICIES)),
          root_route=st.sampled_from(ROUTES), leaf_route=st.sampled_from(ROUTES),
          delay=st.sampled_from(DELAYS), priority=st.sampled_from(PRIORITIES),
          elsewhere=st.booleans())
    def add_flow(self, chain: bool, policies: tuple[str | None, str | None], root_route: str,
                 leaf_route: str, delay: int, priority: int, elsewhere: bool) -> None:
        """FlowProducer.add of a parent with one child, or of a chain root > mid > leaf; the
        root may be delayed or prioritized (it waits for its children first), the leaf added
        to wait, delayed or prioritized, each child with a random failure policy. With
        `elsewhere`, the leaf lives in the second queue."""
        self.flows += 1
        root, leaf = f"f{self.flows}", f"f{self.flows}c"
        leaf_node = _node(leaf, _with_policy(_route_opts(leaf_route, delay, priority),
                                             policies[0]))
        if elsewhere and self.ctx.second_queue:
            leaf_node["queue"] = QUEUE2_REF
            self.elsewhere.add(leaf)
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
        """Queue.add with opts.parent under a known job with nothing pending (in any state,
        or gone: -5), with a custom or an auto id."""
        free = [job_id for job_id in self.ids if self._no_pending(job_id)]
        self._add_child(free[ref % len(free)], policy, route, delay, priority, custom)

    @precondition(_fetched_childless)
    @rule(index=st.integers(0, 7), policy=st.sampled_from(POLICIES),
          route=st.sampled_from(ROUTES), delay=st.sampled_from(DELAYS),
          priority=st.sampled_from(PRIORITIES), named=st.booleans())
    def spawn_child(self, index: int, policy: str | None, route: str, delay: int,
                    priority: int, named: bool) -> None:
        """A worker's pattern: the holder of a fetched job (a running one when there is one)
        adds a child to it, then calls moveToWaitingChildren with its token (for any pending
        child, or naming the new one)."""
        jobs = self._active([entry for entry in self.fetched if self._no_pending(entry[0])])
        job_id, token = jobs[index % len(jobs)]
        child = self._add_child(job_id, policy, route, delay, priority, True)
        named_child = {"id": child, "queue": QUEUE_REF} if named and child else None
        self._apply(MoveToWaitingChildren(job_id, self.now, token, named_child))

    @precondition(_fetched_in_flow)
    @rule(index=st.integers(0, 7), parent=st.booleans(), honest=st.booleans(),
          named=st.sampled_from(("none", "own", "other")), ref=st.integers(0, 7))
    def move_to_waiting_children(self, index: int, parent: bool, honest: bool, named: str,
                                 ref: int) -> None:
        """Job.moveToWaitingChildren by the holder (or a stranger) of a fetched job (with
        `parent`, one that was given a child, when there is one), for any pending child, for
        one of its own children, or for another job's (or a missing one)."""
        jobs = self.fetched
        if parent:
            jobs = self._active([entry for entry in jobs if entry[0] in self.parents]) or jobs
        job_id, token = jobs[index % len(jobs)]
        child: dict[str, str] | None = None
        if named == "own":
            own = [c for c, p in self.children if p == job_id]
            picked = own[ref % len(own)] if own else MISSING_ID
            child = {"id": picked,
                     "queue": QUEUE2_REF if picked in self.elsewhere else QUEUE_REF}
        elif named == "other":
            others = [c for c, p in self.children if p != job_id]
            child = {"id": others[ref % len(others)] if others else MISSING_ID,
                     "queue": QUEUE_REF}
        self._apply(MoveToWaitingChildren(job_id, self.now, token if honest else WRONG_TOKEN,
                                          child))

    # A worker's whole turn in one rule, with one argument for how the job ends: rules that
    # need a fetched job come up seldom, and this is the one that releases parents.
    @precondition(_has_children)
    @rule(index=st.integers(0, 7),
          end=st.tuples(st.booleans(), st.sampled_from(KEEP_JOBS), st.booleans()))
    def finish_child(self, index: int, end: tuple[bool, dict[str, Any], bool]) -> None:
        """The holder completes or fails a running child (its last attempt), with keepJobs
        and fetch-next: its parent records it, by its policy, and is released when nothing
        else is pending. With no child running, a worker fetches the next job first and
        ends that one."""
        self._end_child(index, end, self._held_children(), self.fetched, False)

    @precondition(_has_children_elsewhere)
    @rule(index=st.integers(0, 7),
          end=st.tuples(st.booleans(), st.sampled_from(KEEP_JOBS), st.booleans()))
    def finish_child_elsewhere(self, index: int, end: tuple[bool, dict[str, Any], bool]
                               ) -> None:
        """`finish_child` by a worker of the second queue: its parent, in the first queue,
        records it there and is released there."""
        store = self.model2.store
        held = [(job_id, token) for job_id, token in self.fetched2
                if store.get(f"{job_id}:lock") == token]
        self._end_child(index, end, held, self.fetched2, True)

    def _end_child(self, index: int, end: tuple[bool, dict[str, Any], bool],
                   held: list[tuple[str, str]], fetched: list[tuple[str, str]],
                   elsewhere: bool) -> None:
        """A worker's turn on a child of the first queue or (`elsewhere`) the second: one of
        the `held` children, or the next job it fetches (noted in `fetched`, as is a
        fetch-next's job), completed or failed as `end` says."""
        failed, keep, fetch_next = end
        if held:
            job_id, token = held[index % len(held)]
        else:
            self.fetches += 1
            token = f"tok-{self.fetches}"
            taken = self._apply(MoveToActive(self.now, token=token), elsewhere=elsewhere)
            if not isinstance(taken, dict) or not nameable(taken.get("job")):
                return
            job_id = taken["job"]
            fetched.append((job_id, token))
        fields = {"failedReason": "boom", "stacktrace": "[]"} if failed else None
        returned = self._apply(MoveToFinished(
            job_id, self.now, "failed" if failed else "completed",
            "boom" if failed else f'"{job_id} done"', token, keep, 0, fields, fetch_next),
            elsewhere=elsewhere)
        if isinstance(returned, dict) and nameable(returned.get("job")):
            fetched.append((returned["job"], token))

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
        self._apply(RemoveChildDependency(child, f"{QUEUE_REF}:{parent}"),
                    elsewhere=child in self.elsewhere)

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
        job_id = jobs[ref % len(jobs)]
        self._apply(RemoveJob(job_id, remove_children=children),
                    elsewhere=job_id in self.elsewhere)
