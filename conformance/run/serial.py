"""Run one vector against a candidate on a live Redis and judge the result.

Per vector: a fresh run-unique queue, seed `given`, apply `when` through the candidate, snapshot
every key of the queue, compare with `expect`, and delete the queue's keys.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field, replace
from typing import Any, cast

import redis
from redis.exceptions import RedisClusterException

from conformance.candidates.base import Candidate
from conformance.candidates.scripts.call import UnkillableScript, is_unkillable, kill_runaway
from conformance.core.errors import (
    CandidateError,
    CandidateSkipped,
    CandidateUnusable,
    InfrastructureError,
)
from conformance.core.outcomes import Outcome, SkipKind
from conformance.core.queues import QueueNames, QueueRef
from conformance.servers import ServerInfo, capabilities, health
from conformance.state import compare, snapshot
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.expected import QUEUE_PLACEHOLDER
from reference_impl.form import kind_of, score_from_form, string_parts
from reference_impl.keys import KeyProfile
from reference_impl.ops import Op, op_name
from reference_impl.versions import Version

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
    #: Why it was skipped (SKIPPED only): whether it applies to the run is data, not wording.
    skip: SkipKind | None = None
    #: The ops the candidate does not support, when it skipped the vector for them.
    skipped_ops: tuple[str, ...] = ()
    #: On a shared server: names outside the run written while the vector ran (by the
    #: candidate, or by another client), for a warning; never a verdict.
    foreign_writes: tuple[str, ...] = ()
    #: Why the candidate's runaway script could not be killed (it has written): the server is
    #: left busy, so the run stops once the verdict is held against it.
    unkillable: str | None = None


def seed(client: redis.Redis, queue: QueueRef, given: dict[str, Any],
         connection_id: bool = False) -> int | None:
    """Write a vector's `given` keys; with `connection_id`, return our connection's CLIENT ID
    (read in the same round trip)."""
    pipe = client.pipeline(transaction=False)
    if connection_id:
        pipe.client_id()
    seed_commands(pipe, queue, given)
    replies = pipe.execute()
    return int(replies[0]) if connection_id else None


def seed_commands(pipe: Any, queue: QueueRef, given: dict[str, Any]) -> None:
    """Queue on `pipe` the commands that write a vector's `given` keys."""
    for suffix, entry in given.items():
        key = queue.key(suffix)
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


def other_range_reason(vector: Vector, protocol: Version) -> str:
    """Why a vector whose range does not hold `protocol` is skipped."""
    return f"holds for bullmq {vector.span}, not the protocol judged ({versions.text(protocol)})"


def skip_group(kind: SkipKind | None, reason: str, protocol: str | None) -> str:
    """The line a skip is counted under in a summary: every vector of another protocol range
    together (judged at `protocol`), any other reason as it is."""
    if kind is SkipKind.RANGE and protocol is not None:
        return f"holds for another protocol range, not the protocol judged ({protocol})"
    return reason


def run_vector(
    vector: Vector,
    candidate: Candidate,
    client: redis.Redis,
    profile: KeyProfile,
    names: QueueNames,
    server: ServerInfo | None = None,
    since: health.Identity | None = None,
    protocol: Version = versions.CURRENT,
    finder: snapshot.KeyFinder | None = None,
) -> Verdict:
    """Run one vector, judged at `protocol`. Redis outages raise InfrastructureError; nothing
    else escapes.

    A vector whose range does not hold `protocol`, one for another profile, or one whose
    `needs` the profile or `server` lacks, is skipped with the reason. A vector that fails or
    errors is first held against the server (`since` is its identity at the run's start, see
    `conformance.servers.health`): when the server is at fault, InfrastructureError is raised
    instead of a verdict. `finder` lists the queue's keys (by default, a SCAN).
    """
    track = since is not None and since.client_id is not None
    seeded: list[int] = []
    try:
        verdict = _run(vector, candidate, client, profile, names, server,
                       seeded if track else None, protocol, finder)
    except CandidateUnusable:
        # An adapter that cannot start because Redis is gone is Redis's fault.
        _hold_against_server(client, profile, names, server, since, None, vector)
        raise
    # Our connection's id when the seed was written; None when our own side closed the
    # connection since (redis-py does on a reply it cannot decode).
    mine = seeded[0] if seeded and not verdict.closed_by_us else None
    return held(verdict, client, profile, names, server, since, mine)


def held(verdict: Verdict, client: redis.Redis, profile: KeyProfile, names: QueueNames,
         server: ServerInfo | None, since: health.Identity | None,
         connection: int | None) -> Verdict:
    """A failing verdict held against the server (see `run_vector`): InfrastructureError when
    the server is at fault, the verdict with a note when the suite killed a busy script.
    `connection`: our connection's CLIENT ID at the vector's seed."""
    if verdict.outcome.failing and since is not None:
        fault = _hold_against_server(client, profile, names, server, since, connection,
                                     verdict.vector, verdict.message, verdict.unkillable)
        if fault is not None:  # a busy server whose script the suite could kill: its own
            return replace(verdict, message=f"{verdict.message} ({fault})")
    return verdict


def _hold_against_server(client: redis.Redis, profile: KeyProfile, names: QueueNames,
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


def _run(vector: Vector, candidate: Candidate, client: redis.Redis, profile: KeyProfile,
         names: QueueNames, server: ServerInfo | None, seeded: list[int] | None,
         protocol: Version, finder: snapshot.KeyFinder | None = None) -> Verdict:
    """The vector's verdict; appends our connection's id at the seed to `seeded` if given."""
    skipped = skip_verdict(vector, candidate, profile, server, protocol)
    if skipped is not None:
        return skipped
    queue = QueueRef(profile, names.next(), protocol)
    snap: snapshot.Snapshot | None = None
    early: Verdict | None = None  # the candidate broke, or skipped an op: no snapshot
    interrupted = False
    try:
        try:
            connection = seed(client, queue, dict(vector.given), seeded is not None)
            if seeded is not None and connection is not None:
                seeded.append(connection)
            results: list[Any] = []
            for op in vector.when:
                early = _apply(vector, candidate, client, queue, op, results)
                if early is not None:
                    break
            else:
                # On a server of our own, the keys go with the read: nothing is left to delete.
                private = server is not None and server.private
                snap = snapshot.take(client, queue, finder, delete=True, owned=private,
                                     run_prefix=names.root if private else "")
        except BaseException as exc:
            if not isinstance(exc, Exception):  # KeyboardInterrupt (any signal, see signals.py)
                interrupted = True
                drop_connections(client)
            raise
        finally:
            if interrupted:
                # Nothing more is sent on the way out of a signal (a stalled link would hold
                # the exit): a server of our own is thrown away, and on a `url:` server the
                # run's final sweep deletes this queue with the rest, waiting briefly.
                pass
            elif early is not None:
                # A refused cleanup must not hide why the vector ended (a server left busy by
                # the candidate's script, say); a lost connection still ends the run.
                with contextlib.suppress(redis.ResponseError, RedisClusterException):
                    snapshot.delete_queue(client, queue, finder=finder)
            else:
                snapshot.delete_queue(client, queue, snap.names if snap is not None else None,
                                      finder)
    except REDIS_DOWN as exc:
        raise InfrastructureError(health.connection_lost(exc)) from None
    except UnicodeDecodeError as exc:
        return Verdict(vector, Outcome.ERRORED, f"a key of the queue holds bytes that are not "
                       f"UTF-8 (written by the candidate): {_around(exc)}", closed_by_us=True)
    except redis.RedisError as exc:
        return Verdict(vector, Outcome.ERRORED, f"Redis rejected a command: {_explain(exc)}")
    except RedisClusterException as exc:
        return Verdict(vector, Outcome.ERRORED, f"the cluster client refused a command: {exc}")
    if early is not None:
        return early
    assert snap is not None  # every op ran, so the snapshot was taken
    return judged(vector, results, snap, queue)


def judged(vector: Vector, results: list[Any], snap: snapshot.Snapshot,
           queue: QueueRef) -> Verdict:
    """The verdict of a vector whose every op ran: passed, or failed with the diff."""
    diff = judge(vector, results, snap, queue)
    if diff:
        count = sum(1 for line in diff if not line.startswith(" "))
        return Verdict(vector, Outcome.FAILED, f"{count} difference(s) in Redis state", tuple(diff))
    return Verdict(vector, Outcome.PASSED)


def skip_verdict(vector: Vector, candidate: Candidate, profile: KeyProfile,
                 server: ServerInfo | None, protocol: Version) -> Verdict | None:
    """The skip of a vector decided before it runs (another range or profile, unmet `needs`,
    an op the candidate does not support), or None when it runs."""
    if not vector.span.holds(protocol):
        return Verdict(vector, Outcome.SKIPPED, other_range_reason(vector, protocol),
                       skip=SkipKind.RANGE)
    if vector.profile is not None and vector.profile != profile.name:
        return Verdict(vector, Outcome.SKIPPED, f"vector is for profile {vector.profile}",
                       skip=SkipKind.PROFILE)
    missing = capabilities.unmet(vector.needs, profile, server)
    if missing is not None:
        return Verdict(vector, Outcome.SKIPPED, missing, skip=SkipKind.NEEDS)
    supported = candidate.capabilities.ops
    unsupported = sorted({op_name(op) for op in vector.when} - supported) if supported else []
    if unsupported:
        return Verdict(vector, Outcome.SKIPPED,
                       f"candidate does not support {', '.join(unsupported)}",
                       skip=SkipKind.CANDIDATE, skipped_ops=tuple(unsupported))
    return None


def _apply(vector: Vector, candidate: Candidate, client: redis.Redis, queue: QueueRef, op: Op,
           results: list[Any]) -> Verdict | None:
    """Apply one op, appending its result; the vector's verdict when the op ends it."""
    try:
        results.append(candidate.apply(client, queue, op))
    except UnkillableScript as exc:
        return Verdict(vector, Outcome.ERRORED, f"candidate error in {op_name(op)}: {exc}",
                       unkillable=str(exc))
    except CandidateError as exc:
        return Verdict(vector, Outcome.ERRORED, f"candidate error in {op_name(op)}: {exc}")
    except CandidateSkipped as exc:
        return Verdict(vector, Outcome.SKIPPED,
                       f"candidate does not support {op_name(op)}: {exc.reason}",
                       skip=SkipKind.CANDIDATE, skipped_ops=(op_name(op),))
    except UnicodeDecodeError as exc:
        return Verdict(vector, Outcome.ERRORED, f"candidate error in {op_name(op)}: its reply "
                       f"holds bytes that are not UTF-8: {_around(exc)}", closed_by_us=True)
    return None


def _around(exc: UnicodeDecodeError) -> str:
    """The bytes that would not decode, with a little context, escaped."""
    return repr(bytes(exc.object[max(0, exc.start - 20):exc.end + 20]))


def drop_connections(client: redis.Redis) -> None:
    """Close every pooled connection of `client`.

    An interrupt between the replies of a pipeline leaves the rest unread on the connection;
    reused, it would hand each later command the reply of an earlier one.
    """
    if hasattr(client, "connection_pool"):
        client.connection_pool.disconnect()
    else:  # a RedisCluster: one pool per node
        cast(Any, client).disconnect_connection_pools()


def _explain(exc: redis.RedisError) -> str:
    text = str(exc)
    if "CROSSSLOT" in text:
        text += (" (a script or command used keys in several hash slots: on Redis Cluster every "
                 "key of a queue must share its hash tag)")
    return text


def judge(vector: Vector, results: list[Any], snap: snapshot.Snapshot,
          queue: QueueRef) -> list[str]:
    """Every difference between what the vector expects and what the candidate did."""
    diff = compare.compare_returns(vector.returns, results, [op_name(op) for op in vector.when])
    diff += compare.compare_keys(vector.keys, snap.keys)
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
