"""The verdict steps that both drivers share: the serial one (`conformance.run.serial`, one
vector at a time) and the batched one (`conformance.run.batch`, many vectors of a scripts
candidate in one pipeline).

- seeding: the commands that write a vector's `given` keys (`seed`, `seed_commands`);
- skipping: the skips decided before a vector runs (`skip_verdict`: another protocol range or
  key profile, unmet `needs`, an op the candidate does not support), each a typed `Skip`;
- judging: a vector whose every op ran, held against its `expect` (`judged`, `judge`);
- holding a failing verdict against the server (`held`, `hold_against_server`): when the
  server, not the candidate, is at fault, the run stops with InfrastructureError instead;
  a candidate's script that cannot be killed stops it too (`stop_unkillable`).

The `Verdict` they make is what a vector's item reports.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import redis

from conformance.candidates.base import Candidate
from conformance.candidates.scripts.call import is_unkillable, kill_runaway
from conformance.core.errors import InfrastructureError
from conformance.core.outcomes import Outcome, Skip, SkipKind
from conformance.core.queues import QueueNames, QueueRef
from conformance.run import binding
from conformance.servers import ServerInfo, capabilities, health
from conformance.state import compare, snapshot
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.expected import QUEUE_PLACEHOLDER
from reference_impl.form import kind_of, score_from_form, string_parts
from reference_impl.getter_ops import PLAIN_READS
from reference_impl.keys import QUEUE_REFS, KeyProfile
from reference_impl.ops import op_name
from reference_impl.scheduler_ops import CLIENT_SIDE
from reference_impl.versions import Version

#: The errors of a lost (or stalled) connection to Redis: the run stops, no verdict is given.
REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)
#: How long a script killed on a server the suite started may take to stop.
KILL_WAIT_S = 5.0


@dataclass(frozen=True)
class Verdict:
    """The outcome of one vector, with a one-line message and the state diff if it failed."""

    vector: Vector
    outcome: Outcome
    message: str = ""
    diff: tuple[str, ...] = field(default=())
    #: Our side closed the Redis connection during the vector (a reply it could not decode).
    closed_by_us: bool = False
    #: Why it was skipped (SKIPPED only): its kind, reason and the ops the candidate skipped.
    skip: Skip | None = None
    #: On a shared server: names outside the run written while the vector ran (by the
    #: candidate, or by another client), for a warning; never a verdict.
    foreign_writes: tuple[str, ...] = ()
    #: Why the candidate's runaway script could not be killed (it has written): the server is
    #: left busy, so the run stops once the verdict is held against it.
    unkillable: str | None = None

    @classmethod
    def skipped(cls, vector: Vector, skip: Skip) -> Verdict:
        """`vector` skipped for `skip` (its message is the skip's reason)."""
        return cls(vector, Outcome.SKIPPED, skip.reason, skip=skip)


def seed(client: redis.Redis, queue: QueueRef, given: dict[str, Any],
         connection_id: bool = False, others: Sequence[QueueRef] = ()) -> int | None:
    """Write a vector's `given` keys; with `connection_id`, return our connection's CLIENT ID
    (read in the same round trip). `others`: the vector's other queues (`seed_commands`)."""
    pipe = client.pipeline(transaction=False)
    if connection_id:
        pipe.client_id()
    seed_commands(pipe, queue, given, others)
    replies = pipe.execute()
    return int(replies[0]) if connection_id else None


def seed_commands(pipe: Any, queue: QueueRef, given: dict[str, Any],
                  others: Sequence[QueueRef] = ()) -> None:
    """Queue on `pipe` the commands that write a vector's `given` keys: suffixes of `queue`,
    and (a bound flow across queues) full names of the `others`' keys."""
    queues = (queue, *others)
    for suffix, entry in given.items():
        key = binding.key_of(suffix, queues)
        kind = kind_of(entry)
        body = entry[kind]
        if kind == "string":
            value, pttl = string_parts(body)
            pipe.set(key, value, px=pttl)
        elif kind == "list":
            pipe.rpush(key, *body)
        elif kind == "zset":
            # float() of an int is exactly float() of its Fraction, without building one
            pipe.zadd(key, {m: float(s) if type(s) is int else float(score_from_form(s))
                            for m, s in body.items()})
        elif kind == "hash":
            pipe.hset(key, mapping={k: seed_value(v) for k, v in body.items()})
        elif kind == "set":
            pipe.sadd(key, *body)
        elif kind == "stream":
            for fields in body:
                pipe.xadd(key, dict(zip(fields[::2], fields[1::2], strict=True)))


def seed_value(value: Any) -> str:
    """A seeded hash value: plain strings as they are, `{json: X}` as compact JSON."""
    if isinstance(value, dict):
        body = value.get("json", value.get("json_includes"))
        return json.dumps(body, separators=(",", ":"))
    return str(value)


def skip_verdict(vector: Vector, candidate: Candidate, profile: KeyProfile,
                 server: ServerInfo | None, protocol: Version) -> Verdict | None:
    """The skip of a vector decided before it runs (another range or profile, unmet `needs`,
    an op the candidate does not support), or None when it runs."""
    if not vector.span.holds(protocol):
        return Verdict.skipped(vector, Skip.other_range(str(vector.span),
                                                        versions.text(protocol)))
    if vector.profile is not None and vector.profile != profile.name:
        return Verdict.skipped(vector, Skip(SkipKind.PROFILE,
                                            f"vector is for profile {vector.profile}"))
    missing = capabilities.unmet(vector.needs, profile, server)
    if missing is not None:
        return Verdict.skipped(vector, Skip(SkipKind.NEEDS, missing))
    supported = candidate.capabilities.ops
    unsupported = sorted({op_name(op) for op in vector.when} - supported) if supported else []
    if unsupported:
        why = {**CLIENT_SIDE, **PLAIN_READS}
        reasons = sorted({why[name] for name in unsupported if name in why})
        return Verdict.skipped(vector, Skip.unsupported(unsupported, "; ".join(reasons) or None))
    return None


def judged(vector: Vector, results: list[Any], snap: snapshot.Snapshot,
           queue: QueueRef, others: Sequence[QueueRef] = ()) -> Verdict:
    """The verdict of a vector whose every op ran: passed, or failed with the diff."""
    diff = judge(vector, results, snap, queue, others)
    if diff:
        count = sum(1 for line in diff if not line.startswith(" "))
        return Verdict(vector, Outcome.FAILED, f"{count} difference(s) in Redis state", tuple(diff))
    return Verdict(vector, Outcome.PASSED)


def judge(vector: Vector, results: list[Any], snap: snapshot.Snapshot,
          queue: QueueRef, others: Sequence[QueueRef] = ()) -> list[str]:
    """Every difference between what the vector expects and what the candidate did."""
    diff = compare.compare_returns(vector.returns, results, [op_name(op) for op in vector.when])
    diff += compare.compare_keys(vector.keys, snap.keys)
    # A value naming a queue (a parent key, a child's key in :dependencies) is shown as
    # `<q>` (`<q2>`), as vectors write it: the same failure reads the same in every run.
    for ref, named in zip(QUEUE_REFS, (queue, *others), strict=False):
        diff = [line.replace(binding.qualified(named), ref) for line in diff]
    diff += [f"key outside BASE {queue.base!r}: {name}" for name in snap.stray]
    diff += foreign_lines(snap)
    if vector.one_slot:
        diff += _slot_diff(queue, [*(queue.key(s) for s in snap.keys), *snap.stray])
    if vector.key_names is not None:
        actual = [queue.key(s) for s in snap.keys] + list(snap.stray)
        wanted = [k.replace(QUEUE_PLACEHOLDER, queue.name) for k in vector.key_names]
        diff += compare.compare_key_names(wanted, actual)
    return diff


def foreign_lines(snap: snapshot.Snapshot) -> list[str]:
    """The keys a candidate wrote outside every queue of the run, on a server the suite
    started (where no one else writes)."""
    return [f"key outside every queue of the run: {name} (on a server the suite started only "
            "the candidate writes; deleted)" for name in snap.foreign]


def _slot_diff(queue: QueueRef, names: list[str]) -> list[str]:
    """Keys outside BASE's hash slot: on Redis Cluster a script using them fails (CROSSSLOT)."""
    home = capabilities.slot_of(queue.base)
    slots = {name: capabilities.slot_of(name) for name in sorted(names)}
    return [f"key {name} is in hash slot {slot}, not in slot {home} of {queue.base!r}: Redis "
            f"Cluster would reject the script with CROSSSLOT"
            for name, slot in slots.items() if slot != home]


def held(verdict: Verdict, client: redis.Redis, profile: KeyProfile, names: QueueNames,
         server: ServerInfo | None, since: health.Identity | None,
         connection: int | None) -> Verdict:
    """A failing verdict held against the server: InfrastructureError when the server is at
    fault (see `hold_against_server`), the verdict with a note when the suite killed a busy
    script. `since`: the server's identity at the run's start (`conformance.servers.health`;
    None: nothing is held); `connection`: our connection's CLIENT ID at the vector's seed."""
    if verdict.outcome.failing and since is not None:
        fault = hold_against_server(client, profile, names, server, since, connection,
                                    verdict.vector, verdict.message, verdict.unkillable)
        if fault is not None:  # a busy server whose script the suite could kill: its own
            return replace(verdict, message=f"{verdict.message} ({fault})")
    return verdict


def hold_against_server(client: redis.Redis, profile: KeyProfile, names: QueueNames,
                        server: ServerInfo | None, since: health.Identity | None,
                        connection: int | None, vector: Vector, cause: str = "",
                        unkillable: str | None = None) -> str | None:
    """Raise InfrastructureError when the server, not the candidate, is at fault.

    `cause` is the failing verdict's message. A scripts candidate's call that runs past its
    limit has been killed already (its vector errored), so a server still busy is running a
    script that is not the candidate's, or one of the candidate's that has written and cannot
    be killed (`unkillable`, why: the run stops; on a server the suite started, the suite
    shuts it down, the only end Redis allows). After an adapter errored, a busy script may be
    its own or someone else's: on a server the suite started (only the run's processes use
    it) it is killed and the vector stays the candidate's (the note returned says so); on a
    `url:` server, not ours to meddle with, the run stops and says both.
    """
    if since is None:
        return None
    cluster = server is not None and server.cluster
    at_vector = health.Identity(since.run_id, connection)
    fault = health.problem(client, health.probe_key(profile, names.run_id), at_vector, cluster)
    if fault is None:
        return None
    if health.is_busy(fault):
        private = server is not None and server.private
        if unkillable is not None:
            raise InfrastructureError(f"{stop_unkillable(client, private, unkillable)} (at "
                                      f"vector {vector.id})")
        if private:
            try:
                if not kill_runaway(client, KILL_WAIT_S):
                    return None  # it ended by itself meanwhile
                return "a script still ran after it, and the suite killed it with SCRIPT KILL"
            except redis.ResponseError as exc:
                if is_unkillable(exc):
                    reason = cause.removeprefix("candidate error in ").split(": ", 1)[-1]
                    raise InfrastructureError(f"{stop_unkillable(client, True, reason)} (at "
                                              f"vector {vector.id})") from None
            except redis.RedisError:
                pass
        candidates = cause.startswith("candidate error in ")
        fault = health.attributed(fault, health.EITHER if candidates else health.NOT_OURS)
    raise InfrastructureError(f"{fault} (at vector {vector.id})")


def stop_unkillable(client: redis.Redis, private: bool, reason: str) -> str:
    """The line that stops a run whose candidate's script cannot be killed (`reason`): on a
    server the suite started, after shutting it down through `client` (SHUTDOWN NOSAVE, the
    one end Redis allows)."""
    what = f"a script of the candidate's cannot be killed: {reason}"
    if private:
        with contextlib.suppress(redis.RedisError):
            client.shutdown(nosave=True)
        return f"{what}; the suite shut its server down (SHUTDOWN NOSAVE)"
    return (f"{what}; the server is not the suite's to shut down, and stays busy until the "
            "script ends or someone runs SHUTDOWN NOSAVE")
