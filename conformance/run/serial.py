"""The serial driver: one vector at a time, against a candidate on a live Redis.

Per vector (`run_vector`): the skips decided before it runs; a fresh run-unique queue; its
`given` seeded; its `when` applied op by op through the candidate (`_apply`: an op the candidate
errors on or skips ends the vector); every key of the queue snapshotted and deleted; the result
judged against `expect`; and a failing verdict held against the server. The steps the batched
driver (`conformance.run.batch`) shares are in `conformance.run.verdict`; this module adds what
only the serial path does: ops applied one call at a time, and the words for each way the
candidate or Redis broke a vector.
"""

from __future__ import annotations

import contextlib
from typing import Any, cast

import redis
from redis.exceptions import RedisClusterException

from conformance.candidates.base import Candidate
from conformance.candidates.scripts.call import UnkillableScript
from conformance.core.errors import (
    CandidateError,
    CandidateSkipped,
    CandidateUnusable,
    InfrastructureError,
)
from conformance.core.outcomes import Outcome, Skip
from conformance.core.queues import QueueNames, QueueRef
from conformance.run import binding
from conformance.run.verdict import (
    REDIS_DOWN,
    Verdict,
    held,
    hold_against_server,
    judged,
    seed,
    skip_verdict,
)
from conformance.servers import ServerInfo, health
from conformance.state import snapshot
from conformance.vectors import Vector
from reference_impl.keys import KeyProfile
from reference_impl.ops import Op, op_name
from reference_impl.versions import Version


def run_vector(
    vector: Vector,
    candidate: Candidate,
    client: redis.Redis,
    profile: KeyProfile,
    names: QueueNames,
    server: ServerInfo | None = None,
    since: health.Identity | None = None,
    *,
    protocol: Version,
    finder: snapshot.KeyFinder | None = None,
) -> Verdict:
    """Run one vector, judged at `protocol`. Redis outages raise InfrastructureError; nothing
    else escapes.

    A vector whose range does not hold `protocol`, one for another profile, one whose `needs`
    the profile or `server` lacks, or one with an op the candidate does not support, is skipped
    (`verdict.skip_verdict`). A vector that fails or errors is first held against the server
    (`verdict.held`; `since` is its identity at the run's start, see
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
        hold_against_server(client, profile, names, server, since, None, vector)
        raise
    # Our connection's id when the seed was written; None when our own side closed the
    # connection since (redis-py does on a reply it cannot decode).
    mine = seeded[0] if seeded and not verdict.closed_by_us else None
    return held(verdict, client, profile, names, server, since, mine)


def _run(vector: Vector, candidate: Candidate, client: redis.Redis, profile: KeyProfile,
         names: QueueNames, server: ServerInfo | None, seeded: list[int] | None,
         protocol: Version, finder: snapshot.KeyFinder | None = None) -> Verdict:
    """The vector's verdict; appends our connection's id at the seed to `seeded` if given."""
    skipped = skip_verdict(vector, candidate, profile, server, protocol)
    if skipped is not None:
        return skipped
    queue, *others = queues = binding.fresh_queues(vector, profile, names, protocol)
    vector = binding.bound(vector, queues)
    snap: snapshot.Snapshot | None = None
    early: Verdict | None = None  # the candidate broke, or skipped an op: no snapshot
    interrupted = False
    # On a server of our own, the keys go with the read: nothing is left to delete.
    private = server is not None and server.private
    try:
        try:
            connection = seed(client, queue, dict(vector.given), seeded is not None, others)
            if seeded is not None and connection is not None:
                seeded.append(connection)
            results: list[Any] = []
            for target, op in zip(binding.op_queues(vector, queues), vector.when, strict=True):
                early = _apply(vector, candidate, client, target, op, results)
                if early is not None:
                    break
            else:
                snap = snapshot.take(client, queue, finder, delete=True, private=private,
                                     run_prefix=names.root if private else "")
                if others:
                    snap = snapshot.merged(snap, [(snapshot.take(
                        client, other, finder, delete=True, private=private), other)
                        for other in others])
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
                    if private:
                        # The ops before the one that ended it may have written outside the
                        # queue too: those keys go now, not into the next vector's verdict.
                        snapshot.take(client, queue, finder, delete=True, private=True,
                                      run_prefix=names.root)
                        for other in others:
                            snapshot.take(client, other, finder, delete=True, private=True)
                    else:
                        for each in queues:
                            snapshot.delete_queue(client, each, finder=finder)
            elif snap is not None:
                snapshot.unlink_names(client, snap.names)
            else:
                for each in queues:
                    snapshot.delete_queue(client, each, finder=finder)
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
    return judged(vector, results, snap, queue, others)


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
        return Verdict.skipped(vector, Skip.unsupported((op_name(op),), exc.reason))
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
