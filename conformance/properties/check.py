"""Differential property testing: random op sequences against a candidate and the model.

A hypothesis `RuleBasedStateMachine` generates op sequences (adds of every route with custom
ids from a small pool, clock steps, moveToActive, promote, changeDelay, changePriority and
moveToDelayed with the fetch token) on an explicit clock that starts at 1700000000000. Each op
goes to the candidate, on a fresh queue of a real Redis, and to `reference_impl.QueueModel`.
After every op the op's return must equal the model's, and the queue's snapshot must match the
model's store under the same rules and client tolerances as the vectors.

On a failure hypothesis shrinks the sequence; the failure text ends with the minimal sequence as
a ready-to-paste vector (a `tests:` entry) whose expectation the model computed. The rules live
in `properties_queue` and `properties_worker`.

Nothing of the world becomes a verdict on the candidate: on a server holding others' keys, a
snapshot finds the queue's keys by key tracking, never by a scan of the keyspace; a lost
connection or another client's flush runs the check again once (after the server passes the
suite's probe), and a second one is an infrastructure error; a disagreement that Hypothesis
cannot replay is replayed by us, and one that does not come back, or that took longer in real
time than the shortest expiry its ops set (Redis's clock runs while the model's stands still),
is no verdict: the check runs again, and a second such result is reported as errored with the
reason, never as failed.

`check_candidate` is the entry point for ports (callable from any pytest test); `main` is the
`bullmq-conformance properties` subcommand.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import redis
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.configuration import set_hypothesis_home_dir, storage_directory
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from conformance.candidates.base import Candidate
from conformance.candidates.scripts.call import RunawayScript, UnkillableScript
from conformance.core import signals
from conformance.core.errors import (
    CandidateError,
    CandidateSkipped,
    CandidateUnusable,
    InfrastructureError,
)
from conformance.core.queues import QueueNames, QueueRef
from conformance.core.resources import cache_dir
from conformance.properties.queue_rules import MISSING_ID, QueueRules
from conformance.properties.worker_rules import WorkerRules
from conformance.run.serial import drop_connections
from conformance.run.spec import profile_for
from conformance.run.verdict import REDIS_DOWN, foreign_lines
from conformance.servers import client_for_url, health
from conformance.state import compare, snapshot
from conformance.state.keytracker import KeysFlushed, KeyTracker, TrackingRefused
from reference_impl import versions
from reference_impl.cases import T
from reference_impl.expected import expect_for, expected_keys
from reference_impl.form import store_to_form
from reference_impl.generate import dump
from reference_impl.keys import KeyProfile
from reference_impl.model import QueueModel
from reference_impl.ops import (
    Op,
    Result,
    op_name,
    op_to_dict,
)
from reference_impl.versions import Version
from reference_impl.worker_ops import WORKER_OPS, result_form

#: Where every generated clock starts (2023-11-14T22:13:20Z, as in the vectors).
START = T
#: Most ops per generated sequence.
DEFAULT_STEPS = 30
#: The shortest expiry (PX) any rule sets, in seconds: the stall check's throttle and the
#: locks (30 s). The model's clock stands still between ops while Redis's runs: an example
#: that took longer than this in real time may see a key expire that the model still holds.
SHORTEST_EXPIRY_S = 30.0
#: Faults of the server or the link met inside the state machine.
_TRANSIENT = (*REDIS_DOWN, KeysFlushed)


class PropertyFailure(AssertionError):
    """The candidate and the model disagreed after an op (the message says where and how)."""


@dataclass(frozen=True)
class PropertyResult:
    """The outcome of `check_candidate`.

    `examples` counts the op sequences run, shrinking replays included; `failure` is the diff of
    the first disagreement of the minimal sequence followed by that sequence as a vector, and
    `vector_yaml` is the vector alone (both None when `passed`). `errored` is set when the
    candidate itself broke (a CandidateError) rather than disagreed. `skipped_ops` names ops the
    candidate reported as unsupported; they were left out of the comparison.
    """

    examples: int
    seed: int
    passed: bool
    failure: str | None = None
    errored: str | None = None
    vector_yaml: str | None = None
    seconds: float = 0.0
    skipped_ops: tuple[str, ...] = ()
    #: Ops the candidate applied and that were compared with the model (0: nothing judged).
    ops_applied: int = 0

    @property
    def examples_per_second(self) -> float:
        """Throughput of the run."""
        return self.examples / self.seconds if self.seconds > 0 else 0.0


@dataclass
class _Context:
    """What every example of one `check_candidate` call shares."""

    candidate: Candidate
    client: redis.Redis
    queue_names: QueueNames
    profile: KeyProfile
    seed: int
    protocol: Version
    runs: int = 0
    applied: int = 0
    skipped: set[str] = field(default_factory=set)
    last_vector: str | None = None
    errored: str | None = None
    #: The candidate could not start: every later op fails the same way, at once.
    unusable: CandidateUnusable | None = None
    #: A single server the suite started: snapshots may scan inside their read script.
    private: bool = False
    #: Lists a queue's keys on a server holding keys not ours (the run's key tracker), so that
    #: a snapshot never scans a crowded keyspace; None: SCAN (inside the read when `private`).
    finder: snapshot.KeyFinder | None = None
    #: The first Redis fault met inside the state machine: the whole check is then the
    #: server's (or the link's) business, never a verdict on the candidate.
    infra: str | None = None
    #: The ops of the last sequence that disagreed, for the replay of a Flaky report.
    last_ops: list[Op] = field(default_factory=list)
    #: Seconds of real time the disagreeing example had run when it disagreed.
    last_elapsed: float = 0.0
    #: A script of the candidate that outlived its call's limit: the check stops at once
    #: (each of Hypothesis's replays would wait out the limit again).
    runaway: RunawayScript | UnkillableScript | None = None


def vector_for(ops: list[Op], vector_id: str, description: str,
               protocol: Version) -> dict[str, Any]:
    """A complete vector for `ops` from an empty queue, its expectation computed by the model
    at `protocol`; its range is the span of versions around it that the model treats alike."""
    era = versions.era_of(protocol)
    if any(isinstance(op, tuple(WORKER_OPS.values())) for op in ops):
        era = versions.Range(max(era.since, versions.WORKER_SINCE), era.until)
    span = era.as_dict()
    return {
        "id": f"properties/{vector_id}",
        "description": description,
        "since": span["since"],
        **({"until": span["until"]} if span["until"] else {}),
        "flags": [],
        "given": {},
        "when": [op_to_dict(op) for op in ops],
        "expect": expect_for({}, ops, protocol=protocol),
    }


def vector_yaml(vector: dict[str, Any]) -> str:
    """The vector as a one-item YAML list, ready to paste under a vector file's `tests:`."""
    text = dump({"tests": [vector]})
    return text.split("\ntests:\n", 1)[1]


class DifferentialMachine(QueueRules, WorkerRules, RuleBasedStateMachine):
    """One example: a fresh queue, a fresh model, and the ops applied to both."""

    def __init__(self, context: _Context) -> None:
        super().__init__()
        self.ctx = context
        context.runs += 1
        self.queue = QueueRef(context.profile, context.queue_names.next(), context.protocol)
        self.model = QueueModel(protocol=context.protocol)
        self.now = START
        self.ops: list[Op] = []
        self.ids: list[str] = []
        self.fetched: list[tuple[str, str]] = []
        self.fetches = 0
        self.started = time.monotonic()

    def teardown(self) -> None:
        """Delete every key of this example's queue (after an interrupt, on fresh connections
        and without letting a Redis error hide the interrupt)."""
        if signals.active().received is None and self.ctx.infra is None:
            try:
                snapshot.delete_queue(self.ctx.client, self.queue, finder=self.ctx.finder)
            except _TRANSIENT as exc:
                self.ctx.infra = self.ctx.infra or _fault_text(exc)
                drop_connections(self.ctx.client)
            return
        # After an interrupt or a lost connection: on fresh connections, and without letting
        # a Redis error hide the interrupt (the run's final sweep gets what is left).
        drop_connections(self.ctx.client)
        with contextlib.suppress(redis.RedisError, OSError, KeysFlushed):
            snapshot.delete_queue(self.ctx.client, self.queue, finder=self.ctx.finder)

    def _job(self, ref: int) -> str:
        """A known job id (by index), or a missing one for a negative index."""
        if ref < 0 or not self.ids:
            return MISSING_ID
        return self.ids[ref % len(self.ids)]

    def _apply(self, op: Op) -> Result | None:
        """Apply `op` to both sides and compare; None when the candidate skips the op."""
        if self.ctx.unusable is not None:
            raise self.ctx.unusable  # not started again for each of Hypothesis's replays
        if self.ctx.infra is not None:
            # Redis or the link failed earlier: every replay Hypothesis makes ends here at once
            # (no op reaches a server that may be gone, and nothing is shrunk against it).
            raise InfrastructureError(self.ctx.infra)
        if self.ctx.runaway is not None:
            raise self.ctx.runaway
        try:
            try:
                actual: Any = self.ctx.candidate.apply(self.ctx.client, self.queue, op)
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
            self.ops.append(op)
            self.ctx.applied += 1
            expected: Result = result_form(self.model.apply(op))
            lines = differences(self.ctx, self.queue, self.model, op, expected, actual)
        except _TRANSIENT as exc:
            self.ctx.infra = _fault_text(exc)
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
        op_text = json.dumps(op_to_dict(self.ops[-1]))
        raise PropertyFailure(
            f"after op {count} of the sequence, {op_text}:\n" + "\n".join(f"  {x}" for x in lines)
            + f"\n\nminimal op sequence ({count} ops) as a vector; paste under `tests:` in a "
            f"vector file (area `properties`):\n\n{text}")


@contextlib.contextmanager
def _hypothesis_storage() -> Iterator[None]:
    """Hypothesis keeps what it learns about local source files in its storage directory,
    `./.hypothesis` unless told otherwise. While we run it uses the suite's cache directory (a
    temporary one when the cache is off), then gets the caller's setting back: the suite
    writes nothing to the current directory, and a port's own hypothesis setup is left alone.
    `$HYPOTHESIS_STORAGE_DIRECTORY`, when set, is the user's choice and wins."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    previous = storage_directory(intent_to_write=False).home_directory
    with contextlib.ExitStack() as stack:
        cache = cache_dir()
        base = str(cache) if cache is not None else stack.enter_context(
            tempfile.TemporaryDirectory(prefix="bmqc-hypothesis-"))
        set_hypothesis_home_dir(os.path.join(base, "hypothesis"))
        try:
            yield
        finally:
            set_hypothesis_home_dir(previous)


def differences(ctx: _Context, queue: QueueRef, model: QueueModel, op: Op, expected: Result,
                actual: Any) -> list[str]:
    """Every difference after `op`: its return, then the queue's keys against the model's."""
    lines = compare.compare_returns([expected], [actual], [op_name(op)])
    snap = snapshot.take(ctx.client, queue, ctx.finder, private=ctx.private,
                         run_prefix=ctx.queue_names.root if ctx.private else "")
    lines += compare.compare_keys(expected_keys(store_to_form(model.store)), snap.keys)
    lines += [f"key outside BASE {queue.base!r}: {name}" for name in snap.stray]
    lines += foreign_lines(snap)
    return lines


def replay(ctx: _Context, ops: Sequence[Op]) -> list[str] | None:
    """Apply `ops` again on a fresh queue and model, outside Hypothesis: the first
    difference's lines, or None when every op agrees this time."""
    queue = QueueRef(ctx.profile, ctx.queue_names.next(), ctx.protocol)
    model = QueueModel(protocol=ctx.protocol)
    try:
        for op in ops:
            try:
                actual: Any = ctx.candidate.apply(ctx.client, queue, op)
            except CandidateSkipped:
                continue
            except CandidateError as exc:
                actual = f"<errored: {exc}>"
            lines = differences(ctx, queue, model, op, result_form(model.apply(op)), actual)
            if lines:
                return lines
        return None
    finally:
        with contextlib.suppress(redis.RedisError, OSError, KeysFlushed):
            snapshot.delete_queue(ctx.client, queue, finder=ctx.finder)


def _fault_text(exc: BaseException) -> str:
    """A fault of the server or the link, in one line."""
    if isinstance(exc, KeysFlushed):
        return str(exc)
    return health.connection_lost(exc)


def _reported(exc: BaseException) -> str:
    """What Hypothesis (or another library) raised, in one line, without its file paths."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    first = re.sub(r"(?:/[^\s:'\"]+)+\.py(?::\d+)?", "<file>", first)
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


@dataclass(frozen=True)
class _Attempt:
    """One pass of the state machine: its context and what became of it."""

    ctx: _Context
    #: The disagreement, reproduced (by Hypothesis's final replay, or by ours).
    failure: str | None = None
    #: Why the pass gave no verdict although something went wrong (Hypothesis reported a
    #: failure that did not come back on replay, or the real clock ran past an expiry).
    unsure: str | None = None


def _attempt(ctx: _Context, config: settings) -> _Attempt:
    """Run the state machine once with `ctx`; transient server faults are left in ctx.infra."""

    def factory() -> DifferentialMachine:
        return DifferentialMachine(ctx)

    try:
        with _hypothesis_storage():
            # Typed as taking the machine's class; any factory of machines works (and a class
            # could not carry the context).
            machine = cast(Any, hypothesis_seed(ctx.seed)(factory))
            run_state_machine_as_test(machine, settings=config)
    except PropertyFailure as exc:
        if ctx.infra is not None:
            return _Attempt(ctx)
        if ctx.last_elapsed >= SHORTEST_EXPIRY_S:
            return _Attempt(ctx, unsure=(
                f"the disagreeing example ran for {ctx.last_elapsed:.0f} s of real time, longer "
                f"than the shortest expiry its ops set ({SHORTEST_EXPIRY_S:.0f} s): Redis may "
                "have expired a key the model still holds (a slow link or server)"))
        return _Attempt(ctx, failure=str(exc))
    except (RunawayScript, UnkillableScript):
        return _runaway(ctx)
    except (InfrastructureError, CandidateUnusable, *_TRANSIENT) as exc:
        if ctx.unusable is not None:
            raise ctx.unusable from None
        if ctx.infra is None:
            ctx.infra = _fault_text(exc)
        return _Attempt(ctx)
    except redis.RedisError as exc:
        # An error reply to the suite's own commands (a snapshot, a cleanup): the server's
        # state (READONLY, OOM, ...) when the probe says so, else held as unsure.
        if ctx.unusable is not None:
            raise ctx.unusable from None
        return _Attempt(ctx, unsure=f"Redis refused a command of the suite: {_reported(exc)}")
    except Exception as exc:  # Hypothesis's Flaky*, and the like
        if ctx.unusable is not None:
            raise ctx.unusable from None
        if ctx.runaway is not None:
            # Hypothesis's replays were cut short at their first op: a Flaky report of that.
            return _runaway(ctx)
        if ctx.infra is not None:
            return _Attempt(ctx)
        # A failure Hypothesis could not replay: ours replays the last disagreeing sequence.
        lines = replay(ctx, ctx.last_ops) if ctx.last_ops else None
        if lines is not None:
            vector = vector_yaml(vector_for(ctx.last_ops, f"seed-{ctx.seed}-"
                                            f"{len(ctx.last_ops)}-ops", _description(ctx),
                                            ctx.protocol))
            return _Attempt(ctx, failure=(
                f"after op {len(ctx.last_ops)} of the sequence (it disagreed again when "
                f"replayed):\n" + "\n".join(f"  {x}" for x in lines) + "\n\nthe sequence "
                f"as a vector; paste under `tests:` in a vector file (area `properties`):"
                f"\n\n{vector}"))
        return _Attempt(ctx, unsure=f"{_reported(exc)}; the disagreement did not come back "
                                    "when replayed")
    return _Attempt(ctx)


def _runaway(ctx: _Context) -> _Attempt:
    """The attempt of a check stopped by the candidate's runaway script (exit 3 when it could
    not be killed)."""
    assert ctx.runaway is not None
    if isinstance(ctx.runaway, UnkillableScript):
        raise InfrastructureError(str(ctx.runaway)) from None
    return _Attempt(ctx, failure=ctx.errored or str(ctx.runaway))


def _description(ctx: _Context) -> str:
    return (f"Found by `bullmq-conformance properties` (seed {ctx.seed}); the candidate first "
            f"differs after op {len(ctx.last_ops)}.")


def check_candidate(candidate: Candidate, redis_url: str, profile: str | KeyProfile = "bullmq",
                    examples: int = 100, seed: int | None = None, *,
                    max_steps: int = DEFAULT_STEPS, start_candidate: bool = True,
                    names: QueueNames | None = None, cluster: bool = False,
                    protocol: Version, private: bool = False,
                    finder: snapshot.KeyFinder | None = None) -> PropertyResult:
    """Run `examples` random op sequences against `candidate` and the model.

    `redis_url` is a `redis://` URL (a `url:` spec prefix is accepted); every example uses a
    fresh queue there and deletes its keys afterwards, so any server may be used. `seed` makes
    the run reproducible; without one a seed is drawn and reported in the result. With
    `start_candidate` (the default) the candidate is started here and closed at the end; pass
    False for a candidate the caller has already started and will close. `names` gives the
    queue names (a run passes its own, so its final sweep also covers these queues); by default
    they are fresh. `profile` is a profile name or a KeyProfile; `cluster` says that
    `redis_url` is a Redis Cluster node (a cluster client is then used). `protocol` is the
    version the model and the candidate's calling convention follow. `private` says the suite
    started this server (no one else's keys are there), which lets snapshots scan in a script.
    `finder` lists a queue's keys (a run passes its key tracker); on a server that is not
    `private`, one is made here when none is given, so that no snapshot scans the keyspace.

    No fault of the server or the link becomes a verdict: a lost connection or a flush by
    another client runs the check again from the start, once (the server must pass the
    suite's probe first); a second one raises InfrastructureError. A disagreement that does
    not come back when replayed runs the check again too; when the second pass ends the same
    way it is reported as `errored`, with the reason, never as failed.
    """
    url = redis_url.removeprefix("url:")
    chosen = secrets.randbits(32) if seed is None else seed
    key_profile = profile if isinstance(profile, KeyProfile) else profile_for(profile)
    client = client_for_url(url, cluster)
    queue_names = names if names is not None else QueueNames()
    config = settings(max_examples=examples, stateful_step_count=max_steps, deadline=None,
                      database=None, derandomize=False, print_blob=False,
                      phases=(Phase.explicit, Phase.generate, Phase.shrink),
                      report_multiple_bugs=False, verbosity=Verbosity.quiet,
                      suppress_health_check=[HealthCheck.too_slow,
                                             HealthCheck.filter_too_much,
                                             HealthCheck.data_too_large])
    started = time.perf_counter()
    probe = health.probe_key(key_profile, queue_names.run_id)
    with contextlib.ExitStack() as stack:
        stack.callback(client.close)
        if start_candidate:
            candidate.start(url, key_profile)
            stack.callback(candidate.close)
        if finder is None and not private and not cluster:
            finder = _tracker(url, queue_names, client, probe)
            if isinstance(finder, KeyTracker):
                stack.callback(finder.close)
        # Only a restart is told by identity here: across many examples our own side may
        # close and make the connection again (redis-py does after a reply it cannot
        # decode), so a new client id proves nothing.
        since = health.Identity(health.identity(client, cluster).run_id, None)
        outcome: _Attempt | None = None
        unsure = 0
        for tries in (1, 2):
            ctx = _Context(candidate, client, queue_names, key_profile, chosen, protocol,
                           private=private and not cluster, finder=finder)
            outcome = _attempt(ctx, config)
            unsure += outcome.unsure is not None
            if ctx.infra is None and outcome.failure is None and outcome.unsure is None:
                break
            # Before anything becomes a verdict, the server is held to account.
            drop_connections(client)
            fault = health.problem(client, probe, since, cluster)
            if fault is not None:
                raise InfrastructureError(fault)
            if ctx.infra is not None and tries == 2:
                raise InfrastructureError(f"{ctx.infra} (twice in the properties check, "
                                          "though the server answers the probe: an unreliable "
                                          "link or server)")
            if ctx.infra is None and outcome.unsure is None:
                break  # a reproduced disagreement on a healthy server: the candidate's
        assert outcome is not None
    ctx = outcome.ctx
    failure = outcome.failure
    errored = ctx.errored if failure is not None else None
    if failure is None and outcome.unsure is not None:
        again = "it happened twice" if unsure == 2 else "after a fault of the server or link"
        errored = f"no verdict: {outcome.unsure}; {again}, on a server that answers the probe"
        failure = errored
    return PropertyResult(
        examples=ctx.runs, seed=chosen, passed=failure is None, failure=failure,
        errored=errored, vector_yaml=ctx.last_vector if outcome.failure is not None else None,
        seconds=time.perf_counter() - started, skipped_ops=tuple(sorted(ctx.skipped)),
        ops_applied=ctx.applied)


def _tracker(url: str, names: QueueNames, client: redis.Redis,
             probe: str) -> snapshot.KeyFinder | None:
    """A key tracker for `names` on a server holding keys not ours, or None (SCAN) when the
    server will not track."""
    try:
        tracker = KeyTracker(url, names.run_id, root=names.root)
    except (TrackingRefused, redis.RedisError):
        return None
    try:
        tracker.check(client, probe)
    except TrackingRefused:
        return None
    except BaseException:
        tracker.close()
        raise
    return tracker


def main(args: argparse.Namespace) -> int:
    """`bullmq-conformance properties`: 0 when the candidate agrees with the model, else 1."""
    from conformance import servers
    from conformance.candidates import from_spec

    candidate = from_spec(args.candidate)
    profile_for(args.profile)
    with servers.provision(args.redis) as info:
        print(f"properties: candidate {candidate.name}, profile {args.profile}, "
              f"{args.examples} examples, redis {info.kind} {info.engine} {info.version}")
        # The subcommand has no --protocol: it judges at the current protocol.
        result = check_candidate(candidate, info.url, args.profile, args.examples, args.seed,
                                 cluster=info.cluster, private=info.private,
                                 protocol=versions.CURRENT)
    print(f"seed {result.seed} (rerun with --seed {result.seed})")
    print(f"{result.examples} examples in {result.seconds:.1f} s "
          f"({result.examples_per_second:.1f} examples/s)")
    if result.skipped_ops:
        print(f"ops the candidate skips, left out: {', '.join(result.skipped_ops)}")
    if result.passed and not result.ops_applied:
        print("FAILED: nothing judged: the candidate skipped every op it was given "
              f"({', '.join(result.skipped_ops) or 'no op ran'})")
        return 1
    if result.passed:
        print(f"passed: the candidate agreed with the model after each of its "
              f"{result.ops_applied} applied ops")
        return 0
    print(f"FAILED: {result.failure}")
    return 1
