"""Differential property testing: random op sequences against a candidate and the model.

A hypothesis `RuleBasedStateMachine` generates op sequences (adds of every route with custom
ids from a small pool, clock steps, moveToActive, promote, changeDelay, changePriority and
moveToDelayed with the fetch token) on an explicit clock that starts at 1700000000000. Each op
goes to the candidate, on a fresh queue of a real Redis, and to `reference_impl.QueueModel`.
After every op the op's return must equal the model's, and the queue's snapshot must match the
model's store under the same rules and client tolerances as the vectors.

On a failure hypothesis shrinks the sequence; the failure text ends with the minimal sequence as
a ready-to-paste vector (a `tests:` entry) whose expectation the model computed.

`check_candidate` is the entry point for ports (callable from any pytest test); `main` is the
`bullmq-conformance properties` subcommand.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import redis
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir, storage_directory
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from conformance import compare, signals, snapshot
from conformance.candidates.base import Candidate, QueueRef
from conformance.errors import (
    CandidateError,
    CandidateSkipped,
    CandidateUnusable,
    InfrastructureError,
)
from conformance.properties_worker import WorkerRules
from conformance.resources import cache_dir
from conformance.runner import QueueNames, drop_connections
from conformance.servers import client_for_url, health
from conformance.session import profile_for
from reference_impl import versions
from reference_impl.cases import T
from reference_impl.expected import expect_for, expected_keys
from reference_impl.form import store_to_form
from reference_impl.generate import dump
from reference_impl.keys import KeyProfile
from reference_impl.model import QueueModel
from reference_impl.ops import (
    Add,
    ChangeDelay,
    ChangePriority,
    MoveToActive,
    MoveToDelayed,
    Op,
    Promote,
    Result,
    op_name,
    op_to_dict,
)
from reference_impl.versions import Version
from reference_impl.worker_ops import WORKER_OPS, result_form

#: Where every generated clock starts (2023-11-14T22:13:20Z, as in the vectors).
START = T
#: Clock steps: 0 keeps several ops in one millisecond; the others line fire times up.
CLOCK_STEPS = (0, 0, 1, 4, 5, 10, 95, 100, 995, 1000, 4000, 5000)
#: Delays, chosen so that different (now, delay) pairs often share a fire time.
DELAYS = (1, 5, 10, 100, 1000, 5000)
PRIORITIES = (1, 2, 3, 7)
CUSTOM_IDS = ("a", "b", "c")
#: The id used for a job that does not exist.
MISSING_ID = "missing"
ADD_KINDS = ("standard", "lifo", "delayed", "prioritized", "delayed-prioritized")
#: Most ops per generated sequence.
DEFAULT_STEPS = 30


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
    protocol: Version = versions.CURRENT
    runs: int = 0
    skipped: set[str] = field(default_factory=set)
    last_vector: str | None = None
    errored: str | None = None
    #: The candidate could not start: every later op fails the same way, at once.
    unusable: CandidateUnusable | None = None
    #: A single server the suite started: snapshots may scan inside their read script.
    owned: bool = False


def vector_for(ops: list[Op], vector_id: str, description: str,
               protocol: Version = versions.CURRENT) -> dict[str, Any]:
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


class DifferentialMachine(WorkerRules, RuleBasedStateMachine):
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

    def teardown(self) -> None:
        """Delete every key of this example's queue (after an interrupt, on fresh connections
        and without letting a Redis error hide the interrupt)."""
        if signals.active().received is None:
            snapshot.delete_queue(self.ctx.client, self.queue)
            return
        drop_connections(self.ctx.client)
        with contextlib.suppress(redis.RedisError):
            snapshot.delete_queue(self.ctx.client, self.queue)

    def _job(self, ref: int) -> str:
        """A known job id (by index), or a missing one for a negative index."""
        if ref < 0 or not self.ids:
            return MISSING_ID
        return self.ids[ref % len(self.ids)]

    def _apply(self, op: Op) -> Result | None:
        """Apply `op` to both sides and compare; None when the candidate skips the op."""
        if self.ctx.unusable is not None:
            raise self.ctx.unusable  # not started again for each of Hypothesis's replays
        try:
            actual: Any = self.ctx.candidate.apply(self.ctx.client, self.queue, op)
        except CandidateUnusable as exc:
            self.ctx.unusable = exc
            raise
        except CandidateSkipped:
            self.ctx.skipped.add(op_name(op))
            return None
        except CandidateError as exc:
            actual = f"<errored: {exc}>"
            self.ctx.errored = self.ctx.errored or f"candidate error in {op_name(op)}: {exc}"
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise InfrastructureError(f"Redis connection lost: {exc}") from None
        self.ops.append(op)
        expected: Result = result_form(self.model.apply(op))
        lines = compare.compare_returns([expected], [actual], [op_name(op)])
        snap = snapshot.take(self.ctx.client, self.queue, owned=self.ctx.owned)
        lines += compare.compare_keys(expected_keys(store_to_form(self.model.store)), snap.keys)
        lines += [f"key outside BASE {self.queue.base!r}: {name}" for name in snap.stray]
        if lines:
            self._fail(lines)
        return expected

    def _fail(self, lines: list[str]) -> None:
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

    @rule(step=st.sampled_from(CLOCK_STEPS))
    def tick(self, step: int) -> None:
        """Advance the clock (0 keeps the next ops in the same millisecond)."""
        self.now += step

    @rule(kind=st.sampled_from(ADD_KINDS), delay=st.sampled_from(DELAYS),
          priority=st.sampled_from(PRIORITIES),
          custom=st.one_of(st.none(), st.sampled_from(CUSTOM_IDS)))
    def add(self, kind: str, delay: int, priority: int, custom: str | None) -> None:
        """Queue.add through the route `kind` names, with an auto or custom id."""
        opts: dict[str, Any] = {}
        if kind == "lifo":
            opts["lifo"] = True
        if kind.startswith("delayed"):
            opts["delay"] = delay
        if kind.endswith("prioritized"):
            opts["priority"] = priority
        returned = self._apply(Add("job", self.now, opts=opts, job_id=custom))
        if isinstance(returned, str) and returned not in self.ids:
            self.ids.append(returned)

    @rule()
    def move_to_active(self) -> None:
        """A worker fetch at `now` with a fresh lock token."""
        self.fetches += 1
        token = f"tok-{self.fetches}"
        returned = self._apply(MoveToActive(self.now, token=token))
        if isinstance(returned, dict) and returned["job"] is not None:
            self.fetched.append((returned["job"], token))

    @rule(ref=st.integers(-1, 7))
    def promote(self, ref: int) -> None:
        """Job.promote on a known (or missing) job."""
        self._apply(Promote(self._job(ref)))

    @rule(ref=st.integers(-1, 7), delay=st.sampled_from((0, *DELAYS)))
    def change_delay(self, ref: int, delay: int) -> None:
        """Job.changeDelay at `now`."""
        self._apply(ChangeDelay(self._job(ref), delay, self.now))

    @rule(ref=st.integers(-1, 7), priority=st.sampled_from((0, *PRIORITIES)),
          lifo=st.booleans())
    def change_priority(self, ref: int, priority: int, lifo: bool) -> None:
        """Job.changePriority({priority, lifo})."""
        self._apply(ChangePriority(self._job(ref), priority, lifo))

    @precondition(lambda self: bool(self.fetched))
    @rule(index=st.integers(0, 7), delay=st.sampled_from((0, *DELAYS)),
          skip_attempt=st.booleans())
    def move_to_delayed(self, index: int, delay: int, skip_attempt: bool) -> None:
        """The worker moves a job it fetched back to delayed, with that fetch's token."""
        job_id, token = self.fetched[index % len(self.fetched)]
        self._apply(MoveToDelayed(job_id, self.now, delay, token=token,
                                  skip_attempt=skip_attempt))


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


def check_candidate(candidate: Candidate, redis_url: str, profile: str | KeyProfile = "bullmq",
                    examples: int = 100, seed: int | None = None, *,
                    max_steps: int = DEFAULT_STEPS, start_candidate: bool = True,
                    names: QueueNames | None = None, cluster: bool = False,
                    protocol: Version = versions.CURRENT, owned: bool = False) -> PropertyResult:
    """Run `examples` random op sequences against `candidate` and the model.

    `redis_url` is a `redis://` URL (a `url:` spec prefix is accepted); every example uses a
    fresh queue there and deletes its keys afterwards, so any server may be used. `seed` makes
    the run reproducible; without one a seed is drawn and reported in the result. With
    `start_candidate` (the default) the candidate is started here and closed at the end; pass
    False for a candidate the caller has already started and will close. `names` gives the
    queue names (a run passes its own, so its final sweep also covers these queues); by default
    they are fresh. `profile` is a profile name or a KeyProfile; `cluster` says that
    `redis_url` is a Redis Cluster node (a cluster client is then used). `protocol` is the
    version the model and the candidate's calling convention follow. `owned` says the suite
    started this server (no one else's keys are there), which lets snapshots scan in a script.
    """
    url = redis_url.removeprefix("url:")
    chosen = secrets.randbits(32) if seed is None else seed
    key_profile = profile if isinstance(profile, KeyProfile) else profile_for(profile)
    client = client_for_url(url, cluster)
    ctx = _Context(candidate, client, names if names is not None else QueueNames(), key_profile,
                   chosen, protocol, owned=owned and not cluster)

    def factory() -> DifferentialMachine:
        return DifferentialMachine(ctx)

    config = settings(max_examples=examples, stateful_step_count=max_steps, deadline=None,
                      database=None, derandomize=False, print_blob=False,
                      phases=(Phase.explicit, Phase.generate, Phase.shrink),
                      report_multiple_bugs=False, verbosity=Verbosity.quiet,
                      suppress_health_check=[HealthCheck.too_slow,
                                             HealthCheck.filter_too_much,
                                             HealthCheck.data_too_large])
    failure: str | None = None
    started = time.perf_counter()
    if start_candidate:
        candidate.start(url, key_profile)
    probe = health.probe_key(key_profile, ctx.queue_names.run_id)
    since: health.Identity | None = None
    try:
        try:
            # Only a restart is told by identity here: across many examples our own side may
            # close and make the connection again (redis-py does after a reply it cannot
            # decode), so a new client id proves nothing.
            since = health.Identity(health.identity(client, cluster).run_id, None)
            with _hypothesis_storage():
                run_state_machine_as_test(hypothesis_seed(chosen)(factory), settings=config)
        except PropertyFailure as exc:
            failure = str(exc)
        except (InfrastructureError, redis.ConnectionError, redis.TimeoutError):
            raise
        except redis.RedisError as exc:
            if ctx.unusable is None and (fault := health.problem(client, probe)) is not None:
                raise InfrastructureError(fault) from None
            failure = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # hypothesis' Flaky and the like: still a failed check
            failure = f"{type(exc).__name__}: {exc}"
            if ctx.last_vector is not None:
                failure += f"\n\nlast failing sequence as a vector:\n\n{ctx.last_vector}"
        if failure is not None:
            # Hypothesis replays a failure; a server that died or changed under it makes that
            # a "Flaky" failure, or any other. It is the server's fault, not the candidate's.
            fault = health.problem(client, probe, since, cluster)
            if fault is not None:
                raise InfrastructureError(fault)
        if ctx.unusable is not None:
            raise ctx.unusable
    finally:
        if start_candidate:
            candidate.close()
        client.close()
    return PropertyResult(
        examples=ctx.runs, seed=chosen, passed=failure is None, failure=failure,
        errored=ctx.errored if failure is not None else None,
        vector_yaml=ctx.last_vector if failure is not None else None,
        seconds=time.perf_counter() - started, skipped_ops=tuple(sorted(ctx.skipped)))


def main(args: argparse.Namespace) -> int:
    """`bullmq-conformance properties`: 0 when the candidate agrees with the model, else 1."""
    from conformance import servers
    from conformance.candidates import from_spec

    candidate = from_spec(args.candidate)
    profile_for(args.profile)
    with servers.provision(args.redis) as info:
        print(f"properties: candidate {candidate.name}, profile {args.profile}, "
              f"{args.examples} examples, redis {info.kind} {info.engine} {info.version}")
        result = check_candidate(candidate, info.url, args.profile, args.examples, args.seed,
                                 cluster=info.cluster, owned=info.private)
    print(f"seed {result.seed} (rerun with --seed {result.seed})")
    print(f"{result.examples} examples in {result.seconds:.1f} s "
          f"({result.examples_per_second:.1f} examples/s)")
    if result.skipped_ops:
        print(f"ops the candidate skips, left out: {', '.join(result.skipped_ops)}")
    if result.passed:
        print("passed: the candidate agreed with the model after every op")
        return 0
    print(f"FAILED: {result.failure}")
    return 1
