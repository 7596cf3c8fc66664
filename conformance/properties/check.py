"""Differential property testing: random op sequences against a candidate and the model.

A hypothesis `RuleBasedStateMachine` generates op sequences (adds of every route with custom
ids from a small pool, clock steps, moveToActive, promote, changeDelay, changePriority and
moveToDelayed with the fetch token; the worker half's ops; flows of one child per parent and
a parent's flow calls) on an explicit clock that starts at 1700000000000. Each op
goes to the candidate, on a fresh queue of a real Redis, and to `reference_impl.QueueModel`.
After every op the op's return must equal the model's, and the queue's snapshot must match the
model's store under the same rules and client tolerances as the vectors.

On a failure hypothesis shrinks the sequence; the failure text ends with the minimal sequence as
a ready-to-paste vector (a `tests:` entry) whose expectation the model computed. The state machine
and its rules live in `machine`, `queue_rules`, `worker_rules` and `flow_rules`.

Nothing of the world becomes a verdict on the candidate: on a server holding others' keys, a
snapshot finds the queue's keys by key tracking, never by a scan of the keyspace; a lost
connection or another client's flush runs the check again once (after the server passes the
suite's probe), and a second one is an infrastructure error; a disagreement that Hypothesis
cannot replay is replayed by us, and one that does not come back, or that took longer in real
time than the shortest expiry its ops set (Redis's clock runs while the model's stands still),
is no verdict: the check runs again, and a second such result is reported as errored with the
reason, never as failed.

A seed names one run wherever it is given: Hypothesis takes none of its constants from the
modules the process happens to have loaded (`reproducible`).

`check_candidate` is the entry point for ports (callable from any pytest test); `main` is the
`bullmq-conformance properties` subcommand.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import secrets
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import redis
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.configuration import set_hypothesis_home_dir, storage_directory
from hypothesis.stateful import run_state_machine_as_test

from conformance.candidates.base import Candidate
from conformance.candidates.scripts.call import RunawayScript, UnkillableScript
from conformance.core.errors import (
    CandidateUnusable,
    InfrastructureError,
)
from conformance.core.queues import QueueNames
from conformance.core.resources import cache_dir
from conformance.properties.machine import (
    DEFAULT_STEPS,
    TRANSIENT,
    Context,
    DifferentialMachine,
    PropertyFailure,
    fault_text,
    replay,
    vector_for,
    vector_yaml,
)
from conformance.properties.reproducible import seeded_draws_only
from conformance.run.serial import drop_connections
from conformance.run.spec import profile_for
from conformance.servers import capabilities, client_for_url, health
from conformance.state import snapshot
from conformance.state.keytracker import KeyTracker, TrackingRefused
from reference_impl import versions
from reference_impl.keys import KeyProfile
from reference_impl.versions import Version

#: The shortest expiry (PX) any rule sets, in seconds: the stall check's throttle and the
#: locks (30 s). The model's clock stands still between ops while Redis's runs: an example
#: that took longer than this in real time may see a key expire that the model still holds.
SHORTEST_EXPIRY_S = 30.0


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
    #: Of `ops_applied`, the flow ops (`conformance.properties.flow_rules.flow_op`).
    flow_ops_applied: int = 0
    #: Of `flow_ops_applied`, those that reach a flow's second queue (run there, or a flow
    #: with a node there).
    second_queue_ops_applied: int = 0
    #: Of `ops_applied`, the job scheduler ops (`conformance.properties.scheduler_rules`).
    scheduler_ops_applied: int = 0

    @property
    def examples_per_second(self) -> float:
        """Throughput of the run."""
        return self.examples / self.seconds if self.seconds > 0 else 0.0


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


def _reported(exc: BaseException) -> str:
    """What Hypothesis (or another library) raised, in one line, without its file paths."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    first = re.sub(r"(?:/[^\s:'\"]+)+\.py(?::\d+)?", "<file>", first)
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


@dataclass(frozen=True)
class _Attempt:
    """One pass of the state machine: its context and what became of it."""

    ctx: Context
    #: The disagreement, reproduced (by Hypothesis's final replay, or by ours).
    failure: str | None = None
    #: Why the pass gave no verdict although something went wrong (Hypothesis reported a
    #: failure that did not come back on replay, or the real clock ran past an expiry).
    unsure: str | None = None


def _attempt(ctx: Context, config: settings) -> _Attempt:
    """Run the state machine once with `ctx`; transient server faults are left in ctx.infra."""

    def factory() -> DifferentialMachine:
        return DifferentialMachine(ctx)

    try:
        with _hypothesis_storage(), seeded_draws_only():
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
    except (InfrastructureError, CandidateUnusable, *TRANSIENT) as exc:
        if ctx.unusable is not None:
            raise ctx.unusable from None
        if ctx.infra is None:
            ctx.infra = fault_text(exc)
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


def _runaway(ctx: Context) -> _Attempt:
    """The attempt of a check stopped by the candidate's runaway script (exit 3 when it could
    not be killed)."""
    assert ctx.runaway is not None
    if isinstance(ctx.runaway, UnkillableScript):
        raise InfrastructureError(str(ctx.runaway)) from None
    return _Attempt(ctx, failure=ctx.errored or str(ctx.runaway))


def _description(ctx: Context) -> str:
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
            ctx = Context(candidate, client, queue_names, key_profile, chosen, protocol,
                           private=private and not cluster, finder=finder,
                           second_queue=capabilities.shared_slot(key_profile, cluster))
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
        ops_applied=ctx.applied, flow_ops_applied=ctx.flow_applied,
        second_queue_ops_applied=ctx.second_queue_applied,
        scheduler_ops_applied=ctx.scheduler_applied)


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
                                 max_steps=args.steps, cluster=info.cluster,
                                 private=info.private, protocol=versions.CURRENT)
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
              f"{result.ops_applied} applied ops ({result.flow_ops_applied} of them flow ops, "
              f"{result.second_queue_ops_applied} reaching a flow's second queue, "
              f"{result.scheduler_ops_applied} job scheduler ops)")
        return 0
    print(f"FAILED: {result.failure}")
    return 1
