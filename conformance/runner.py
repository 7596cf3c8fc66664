"""Run one vector against a candidate on a live Redis and judge the result.

Per vector: a fresh run-unique queue, seed `given`, apply `when` through the candidate, snapshot
every key of the queue, compare with `expect`, and delete the queue's keys.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import secrets
from dataclasses import dataclass, field, replace
from typing import Any, cast

import redis
from redis.exceptions import RedisClusterException

from conformance import compare, snapshot
from conformance.candidates.base import Candidate, QueueRef
from conformance.errors import (
    CandidateError,
    CandidateSkipped,
    CandidateUnusable,
    InfrastructureError,
)
from conformance.outcomes import Outcome
from conformance.servers import ServerInfo, capabilities, health
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.expected import QUEUE_PLACEHOLDER
from reference_impl.form import kind_of, score_from_form, string_parts
from reference_impl.keys import KeyProfile
from reference_impl.ops import Op, op_name
from reference_impl.versions import Version

REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)


@dataclass(frozen=True)
class Verdict:
    """The outcome of one vector, with a one-line message and the state diff if it failed."""

    vector: Vector
    outcome: Outcome
    message: str = ""
    diff: tuple[str, ...] = field(default=())
    #: Our side closed the Redis connection during the vector (a reply it could not decode).
    closed_by_us: bool = False


class QueueNames:
    """Run-unique, fixed-width queue names, so no name is a substring of another."""

    def __init__(self, run_id: str | None = None) -> None:
        self.run_id = run_id or secrets.token_hex(4)
        #: What every queue name of the run starts with.
        self.prefix = f"bmqc-{self.run_id}-"
        self._counter = itertools.count(1)

    def next(self) -> str:
        """A fresh queue name."""
        return f"{self.prefix}{next(self._counter):06d}"


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


#: The skip reason of a vector of another protocol range (`other_range_reason`), parsed back.
_OTHER_RANGE = re.compile(r"holds for bullmq [0-9.]+(?: up to [0-9.]+| on), (not the protocol "
                          r"judged \([0-9.]+\))")


def other_range_reason(vector: Vector, protocol: Version) -> str:
    """Why a vector whose range does not hold `protocol` is skipped."""
    return f"holds for bullmq {vector.span}, not the protocol judged ({versions.text(protocol)})"


def skip_group(reason: str) -> str:
    """The line a skip reason is counted under in a summary: every vector of another protocol
    range together, any other reason as it is."""
    found = _OTHER_RANGE.fullmatch(reason)
    return f"holds for another protocol range, {found.group(1)}" if found else reason


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
                                     verdict.vector)
        if fault is not None:  # a busy server whose script the suite could kill: its own
            return replace(verdict, message=f"{verdict.message} ({fault})")
    return verdict


def _hold_against_server(client: redis.Redis, profile: KeyProfile, names: QueueNames,
                         server: ServerInfo | None, since: health.Identity | None,
                         connection: int | None, vector: Vector) -> str | None:
    """Raise InfrastructureError when the server, not the candidate, is at fault.

    A server busy in a script right after a vector errored is most likely running the
    candidate's own runaway script. On a server the suite started, that script is killed and
    the vector stays the candidate's (the note returned says so); on a `url:` server, which is
    not ours to meddle with, the run stops, naming the likely cause.
    """
    if since is None:
        return None
    cluster = server is not None and server.cluster
    at_vector = health.Identity(since.run_id, connection)
    fault = health.problem(client, health.probe_key(profile, names.run_id), at_vector, cluster)
    if fault is None:
        return None
    if health.is_busy(fault):
        if server is not None and server.private:
            with contextlib.suppress(redis.RedisError):
                client.script_kill()
                return "a script still ran after it, and the suite killed it with SCRIPT KILL"
        fault += (" (most likely the candidate's own script, still running after the vector "
                  "errored: a script that never ends is a defect of the candidate)")
    raise InfrastructureError(f"{fault} (at vector {vector.id})")


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
                snap = snapshot.take(client, queue, finder, delete=True,
                                     owned=server is not None and server.private)
        except BaseException as exc:
            if not isinstance(exc, Exception):  # KeyboardInterrupt (any signal, see signals.py)
                interrupted = True
                drop_connections(client)
            raise
        finally:
            if interrupted:
                with contextlib.suppress(redis.RedisError, RedisClusterException):
                    snapshot.delete_queue(client, queue, finder=finder)
            elif early is not None:
                # A refused cleanup must not hide why the vector ended (a server left busy by
                # the candidate's script, say); a lost connection still ends the run.
                with contextlib.suppress(redis.ResponseError, RedisClusterException):
                    snapshot.delete_queue(client, queue, finder=finder)
            else:
                snapshot.delete_queue(client, queue, snap.names if snap is not None else None,
                                      finder)
    except REDIS_DOWN as exc:
        raise InfrastructureError(f"Redis connection lost: {exc}") from None
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
        return Verdict(vector, Outcome.SKIPPED, other_range_reason(vector, protocol))
    if vector.profile is not None and vector.profile != profile.name:
        return Verdict(vector, Outcome.SKIPPED, f"vector is for profile {vector.profile}")
    missing = capabilities.unmet(vector.needs, profile, server)
    if missing is not None:
        return Verdict(vector, Outcome.SKIPPED, missing)
    supported = candidate.capabilities.ops
    unsupported = sorted({op_name(op) for op in vector.when} - supported) if supported else []
    if unsupported:
        return Verdict(vector, Outcome.SKIPPED,
                       f"candidate does not support {', '.join(unsupported)}")
    return None


def _apply(vector: Vector, candidate: Candidate, client: redis.Redis, queue: QueueRef, op: Op,
           results: list[Any]) -> Verdict | None:
    """Apply one op, appending its result; the vector's verdict when the op ends it."""
    try:
        results.append(candidate.apply(client, queue, op))
    except CandidateError as exc:
        return Verdict(vector, Outcome.ERRORED, f"candidate error in {op_name(op)}: {exc}")
    except CandidateSkipped as exc:
        return Verdict(vector, Outcome.SKIPPED,
                       f"candidate does not support {op_name(op)}: {exc.reason}")
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
    if vector.one_slot:
        diff += _slot_diff(queue, [*(queue.key(s) for s in snap.keys), *snap.stray])
    if vector.key_names is not None:
        actual = [queue.key(s) for s in snap.keys] + list(snap.stray)
        wanted = [k.replace(QUEUE_PLACEHOLDER, queue.name) for k in vector.key_names]
        diff += compare.compare_key_names(wanted, actual)
    return diff


def _slot_diff(queue: QueueRef, names: list[str]) -> list[str]:
    """Keys outside BASE's hash slot: on Redis Cluster a script using them fails (CROSSSLOT)."""
    home = capabilities.slot_of(queue.base)
    slots = {name: capabilities.slot_of(name) for name in sorted(names)}
    return [f"key {name} is in hash slot {slot}, not in slot {home} of {queue.base!r}: Redis "
            f"Cluster would reject the script with CROSSSLOT"
            for name, slot in slots.items() if slot != home]
