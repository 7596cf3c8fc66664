"""The differential state machine of the `properties` area: one example is a fresh queue of a
real Redis and a fresh `reference_impl.QueueModel`, each op applied to both, and after every op
the op's return and the queue's keys compared (`differences`). The rules that draw the ops are
the queue half's (`queue_rules`), the worker half's (`worker_rules`), the flows' (`flow_rules`)
and the job schedulers' (`scheduler_rules`); `check` runs the machine under Hypothesis and
judges.

The model's values name the queue `<q>` (a child's `parentKey`, a parent's `:dependencies`);
once an example has run a flow op, each op goes to the candidate bound to the real name, and
its reply and the queue's keys are compared unbound (`conformance.run.binding`). Examples
without flows skip that work. A flow may put children in a second queue (`<q2>`, its own model
joined to the first): from its first op there, both queues are compared after every op.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
from hypothesis.stateful import RuleBasedStateMachine

from conformance.candidates.base import Candidate
from conformance.candidates.scripts.call import RunawayScript, UnkillableScript
from conformance.core import signals
from conformance.core.errors import (
    CandidateError,
    CandidateSkipped,
    CandidateUnusable,
    InfrastructureError,
)
from conformance.core.options import PROPERTY_STEPS
from conformance.core.queues import QueueNames, QueueRef
from conformance.properties.flow_rules import FlowRules, flow_op
from conformance.properties.getter_rules import GetterRules
from conformance.properties.queue_rules import MISSING_ID, QueueRules
from conformance.properties.scheduler_rules import SCHEDULER_TYPES, SchedulerRules
from conformance.properties.worker_rules import WorkerRules
from conformance.run import binding
from conformance.run.serial import drop_connections
from conformance.run.verdict import REDIS_DOWN, foreign_lines
from conformance.servers import health
from conformance.state import compare, snapshot
from conformance.state.keytracker import KeysFlushed
from reference_impl import versions
from reference_impl.cases import T
from reference_impl.expected import expect_for, world, world_keys
from reference_impl.generate import dump
from reference_impl.keys import QUEUE2_REF, KeyProfile
from reference_impl.model import QueueModel
from reference_impl.ops import (
    OnQueue,
    Op,
    Result,
    Step,
    op_name,
    step_parts,
    step_to_dict,
)
from reference_impl.versions import Version
from reference_impl.worker_ops import WORKER_OPS, result_form

#: Where every generated clock starts (2023-11-14T22:13:20Z, as in the vectors).
START = T
#: Most ops per generated sequence (the `properties --steps` default, defined with the options).
DEFAULT_STEPS = PROPERTY_STEPS
#: Faults of the server or the link met inside the state machine.
TRANSIENT = (*REDIS_DOWN, KeysFlushed)


class PropertyFailure(AssertionError):
    """The candidate and the model disagreed after an op (the message says where and how)."""


@dataclass
class Context:
    """What every example of one `check_candidate` call shares."""

    candidate: Candidate
    client: redis.Redis
    queue_names: QueueNames
    profile: KeyProfile
    seed: int
    protocol: Version
    runs: int = 0
    applied: int = 0
    #: Of `applied`, the flow ops (`flow_rules.flow_op`).
    flow_applied: int = 0
    #: Of `flow_applied`, the ops that reach a flow's second queue (run there, or a flow
    #: with a node there).
    second_queue_applied: int = 0
    #: Of `applied`, the job scheduler ops (`scheduler_rules`).
    scheduler_applied: int = 0
    skipped: set[str] = field(default_factory=set)
    last_vector: str | None = None
    errored: str | None = None
    #: The candidate could not start: every later op fails the same way, at once.
    unusable: CandidateUnusable | None = None
    #: A single server the suite started: snapshots may scan inside their read script.
    private: bool = False
    #: Flows may put a child in a second queue (`capabilities.shared_slot`: not on a cluster
    #: whose profile puts each queue in its own hash slot).
    second_queue: bool = True
    #: Lists a queue's keys on a server holding keys not ours (the run's key tracker), so that
    #: a snapshot never scans a crowded keyspace; None: SCAN (inside the read when `private`).
    finder: snapshot.KeyFinder | None = None
    #: The first Redis fault met inside the state machine: the whole check is then the
    #: server's (or the link's) business, never a verdict on the candidate.
    infra: str | None = None
    #: The ops of the last sequence that disagreed, for the replay of a Flaky report.
    last_ops: list[Step] = field(default_factory=list)
    #: Seconds of real time the disagreeing example had run when it disagreed.
    last_elapsed: float = 0.0
    #: A script of the candidate that outlived its call's limit: the check stops at once
    #: (each of Hypothesis's replays would wait out the limit again).
    runaway: RunawayScript | UnkillableScript | None = None


def vector_for(ops: list[Step], vector_id: str, description: str,
               protocol: Version) -> dict[str, Any]:
    """A complete vector for `ops` from an empty queue, its expectation computed by the model
    at `protocol`; its range is the span of versions around it that the model treats alike."""
    era = versions.era_of(protocol)
    plain = [step_parts(step)[1] for step in ops]
    if any(isinstance(op, tuple(WORKER_OPS.values())) or flow_op(op) for op in plain):
        era = versions.Range(max(era.since, versions.WORKER_SINCE), era.until)
    span = era.as_dict()
    crossing = any(step_parts(step)[0] is not None for step in ops)
    return {
        "id": f"properties/{vector_id}",
        "description": description,
        "since": span["since"],
        **({"until": span["until"]} if span["until"] else {}),
        "flags": [],
        **({"needs": ["shared-slot"]} if crossing else {}),
        "given": {},
        "when": [step_to_dict(step) for step in ops],
        "expect": expect_for({}, ops, protocol=protocol),
    }


def vector_yaml(vector: dict[str, Any]) -> str:
    """The vector as a one-item YAML list, ready to paste under a vector file's `tests:`."""
    text = dump({"tests": [vector]})
    return text.split("\ntests:\n", 1)[1]


class DifferentialMachine(QueueRules, WorkerRules, FlowRules, SchedulerRules, GetterRules,
                          RuleBasedStateMachine):
    """One example: a fresh queue, a fresh model, and the ops applied to both."""

    def __init__(self, context: Context) -> None:
        super().__init__()
        self.ctx = context
        context.runs += 1
        self.queue = QueueRef(context.profile, context.queue_names.next(), context.protocol)
        #: The second queue of flows across queues, and its model (in the first's world).
        self.queue2 = QueueRef(context.profile, context.queue_names.next(), context.protocol)
        self.model, self.model2 = world(context.protocol)
        #: An op has run on the second queue: both queues are compared after each op.
        self.crossing = False
        self.now = START
        self.ops: list[Step] = []
        self.ids: list[str] = []
        self.fetched: list[tuple[str, str]] = []
        self.fetches = 0
        self.parents: list[str] = []
        self.children: list[tuple[str, str]] = []
        self.flows = 0
        self.elsewhere: set[str] = set()
        self.fetched2: list[tuple[str, str]] = []
        #: A flow op has run: ops are bound to the queue's name, replies and keys unbound.
        self.flowing = False
        self.started = time.monotonic()

    def teardown(self) -> None:
        """Delete every key of this example's queue (after an interrupt, on fresh connections
        and without letting a Redis error hide the interrupt)."""
        queues = (self.queue, self.queue2) if self.crossing else (self.queue,)
        if signals.active().received is None and self.ctx.infra is None:
            try:
                for queue in queues:
                    snapshot.delete_queue(self.ctx.client, queue, finder=self.ctx.finder)
            except TRANSIENT as exc:
                self.ctx.infra = self.ctx.infra or fault_text(exc)
                drop_connections(self.ctx.client)
            return
        # After an interrupt or a lost connection: on fresh connections, and without letting
        # a Redis error hide the interrupt (the run's final sweep gets what is left).
        drop_connections(self.ctx.client)
        with contextlib.suppress(redis.RedisError, OSError, KeysFlushed):
            for queue in queues:
                snapshot.delete_queue(self.ctx.client, queue, finder=self.ctx.finder)

    def _job(self, ref: int) -> str:
        """A known job id (by index), or a missing one for a negative index."""
        if ref < 0 or not self.ids:
            return MISSING_ID
        return self.ids[ref % len(self.ids)]

    def _apply(self, op: Op, elsewhere: bool = False) -> Result | None:
        """Apply `op` to both sides and compare; None when the candidate skips the op.
        `elsewhere`: on the second queue."""
        if self.ctx.unusable is not None:
            raise self.ctx.unusable  # not started again for each of Hypothesis's replays
        if self.ctx.infra is not None:
            # Redis or the link failed earlier: every replay Hypothesis makes ends here at once
            # (no op reaches a server that may be gone, and nothing is shrunk against it).
            raise InfrastructureError(self.ctx.infra)
        if self.ctx.runaway is not None:
            raise self.ctx.runaway
        flowing = self.flowing = self.flowing or flow_op(op) or elsewhere
        crossing = self.crossing = self.crossing or elsewhere or QUEUE2_REF in repr(op)
        queues = (self.queue, self.queue2) if crossing else (self.queue,)
        target = self.queue2 if elsewhere else self.queue
        try:
            try:
                sent = binding.bound_op(op, queues) if flowing else op
                actual: Any = self.ctx.candidate.apply(self.ctx.client, target, sent)
            except CandidateUnusable as exc:
                self.ctx.unusable = exc
                raise
            except (RunawayScript, UnkillableScript) as exc:
                self.ctx.runaway = exc
                self.ctx.errored = f"candidate error in {op_name(op)}: {exc}"
                raise
            except CandidateSkipped:
                self.ctx.skipped.add(op_name(op))
                return None
            except CandidateError as exc:
                actual = f"<errored: {exc}>"
                self.ctx.errored = self.ctx.errored or f"candidate error in {op_name(op)}: {exc}"
            self.ops.append(OnQueue(QUEUE2_REF, op) if elsewhere else op)
            self.ctx.applied += 1
            self.ctx.flow_applied += flow_op(op) or elsewhere
            self.ctx.second_queue_applied += elsewhere or QUEUE2_REF in repr(op)
            self.ctx.scheduler_applied += isinstance(op, SCHEDULER_TYPES)
            expected: Result = result_form((self.model2 if elsewhere else self.model).apply(op))
            lines = differences(self.ctx, queues, (self.model, self.model2), op, expected,
                                actual, unbind=flowing)
        except TRANSIENT as exc:
            self.ctx.infra = fault_text(exc)
            raise InfrastructureError(self.ctx.infra) from None
        if lines:
            self._fail(lines)
        return expected

    def _fail(self, lines: list[str]) -> None:
        self.ctx.last_ops = list(self.ops)
        self.ctx.last_elapsed = time.monotonic() - self.started
        count = len(self.ops)
        description = (f"Found by `bullmq-conformance properties` (seed {self.ctx.seed}); "
                       f"the candidate first differs after op {count}.")
        vector = vector_for(self.ops, f"seed-{self.ctx.seed}-{count}-ops", description,
                            self.ctx.protocol)
        text = vector_yaml(vector)
        self.ctx.last_vector = text
        op_text = json.dumps(step_to_dict(self.ops[-1]))
        raise PropertyFailure(
            f"after op {count} of the sequence, {op_text}:\n" + "\n".join(f"  {x}" for x in lines)
            + f"\n\nminimal op sequence ({count} ops) as a vector; paste under `tests:` in a "
            f"vector file (area `properties`):\n\n{text}")


def differences(ctx: Context, queues: Sequence[QueueRef], models: Sequence[QueueModel],
                op: Op, expected: Result, actual: Any, unbind: bool = False) -> list[str]:
    """Every difference after `op`: its return, then the keys of `queues` (the first, or both
    of a flow across queues) against the `models`' (the second's named `<q2>:<suffix>`, as a
    vector names them). With `unbind`, the queues' names in the reply and the keys are
    written `<q>` and `<q2>` first, as the model writes them."""
    queue, *others = queues
    if unbind:
        actual = binding.unbound(actual, queue, others)
    lines = compare.compare_returns([expected], [actual], [op_name(op)])
    snap = snapshot.take(ctx.client, queue, ctx.finder, private=ctx.private,
                         run_prefix=ctx.queue_names.root if ctx.private else "")
    if others:
        snap = snapshot.merged(snap, [(snapshot.take(ctx.client, other, ctx.finder,
                                                     private=ctx.private), other)
                                      for other in others])
    if unbind:
        snap = binding.unbound_snapshot(snap, queue, others)
    lines += compare.compare_keys(world_keys(models[0], models[1] if others else None),
                                  snap.keys)
    for each in queues:
        lines += [f"key outside BASE {each.base!r}: {name}" for name in snap.stray
                  if each.name in name]
    lines += foreign_lines(snap)
    return lines


def replay(ctx: Context, ops: Sequence[Step]) -> list[str] | None:
    """Apply `ops` again on fresh queues and models, outside Hypothesis: the first
    difference's lines, or None when every op agrees this time."""
    queues = (QueueRef(ctx.profile, ctx.queue_names.next(), ctx.protocol),
              QueueRef(ctx.profile, ctx.queue_names.next(), ctx.protocol))
    models = world(ctx.protocol)
    crossing = any(step_parts(step)[0] is not None or QUEUE2_REF in repr(step)
                   for step in ops)
    compared = queues if crossing else queues[:1]
    flowing = False
    try:
        for step in ops:
            on, op = step_parts(step)
            side = 1 if on is not None else 0
            flowing = flowing or flow_op(op) or side == 1
            try:
                actual: Any = ctx.candidate.apply(
                    ctx.client, queues[side],
                    binding.bound_op(op, compared) if flowing else op)
            except CandidateSkipped:
                continue
            except CandidateError as exc:
                actual = f"<errored: {exc}>"
            lines = differences(ctx, compared, models, op,
                                result_form(models[side].apply(op)), actual, unbind=flowing)
            if lines:
                return lines
        return None
    finally:
        with contextlib.suppress(redis.RedisError, OSError, KeysFlushed):
            for queue in queues:
                snapshot.delete_queue(ctx.client, queue, finder=ctx.finder)


def fault_text(exc: BaseException) -> str:
    """A fault of the server or the link, in one line."""
    if isinstance(exc, KeysFlushed):
        return str(exc)
    return health.connection_lost(exc)
