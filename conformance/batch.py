"""Pipelined runs of many vectors on a scripts candidate (`reference`, `scripts:DIR`).

Every vector runs in its own queue, and a script call's KEYS and ARGV depend only on its op and
queue (`ScriptsCandidate.plan`), never on an earlier reply. So a batch of vectors is seeded and
driven in one pipeline (the scripts Redis lacks loaded first, then every seed, then every op, in
order), and snapshotted in a few more round trips for all of them (one SCAN of the run's names,
then TYPE and content); then every key is unlinked at once. Each vector is judged as
`runner.run_vector` judges it.

Whatever the serial path would tell apart from a plain run is left to it: a vector with an
error reply to any of its commands (a Lua error, NOSCRIPT after a flush, a rejected seed) is
run again serially on a fresh queue, where the ops after the failing one are never sent; and a
batch where our side broke (a reply that is not UTF-8, a refused snapshot command) is cleaned up
and run serially as a whole. So verdicts are the serial path's, in a few round trips per batch.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

import redis

from conformance import snapshot
from conformance.candidates.base import Candidate, QueueRef
from conformance.candidates.script_call import ScriptCall
from conformance.candidates.scripts import ScriptsCandidate
from conformance.errors import CandidateError, InfrastructureError
from conformance.runner import (
    REDIS_DOWN,
    QueueNames,
    Verdict,
    drop_connections,
    held,
    judged,
    run_vector,
    seed_commands,
    skip_verdict,
)
from conformance.servers import ServerInfo, health
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.keys import KeyProfile
from reference_impl.versions import Version

#: Vectors per batch: enough to amortize the round trips, few enough that a batch stays well
#: under the shortest expiry a vector checks (1 s).
BATCH_SIZE = 48
#: Set to 1 to run every vector serially (the escape hatch, and the path to compare with).
SERIAL_ENV = "BULLMQ_CONFORMANCE_SERIAL"


def serial_forced() -> bool:
    """Whether `BULLMQ_CONFORMANCE_SERIAL=1` asks for the serial path."""
    return os.environ.get(SERIAL_ENV, "") not in ("", "0")


def pipelined(candidate: Candidate, server: ServerInfo | None) -> bool:
    """Whether vectors of `candidate` on `server` may run in batches: a scripts candidate, on
    a single server the suite started, unless the serial path is forced."""
    return (isinstance(candidate, ScriptsCandidate) and server is not None and server.owned
            and not server.cluster and not serial_forced())


@dataclass(frozen=True)
class _Planned:
    index: int
    vector: Vector
    queue: QueueRef
    calls: tuple[ScriptCall, ...]


def run_vectors(vectors: Sequence[Vector], candidate: Candidate, client: redis.Redis,
                profile: KeyProfile, names: QueueNames, server: ServerInfo | None = None,
                since: health.Identity | None = None, protocol: Version = versions.CURRENT,
                batch_size: int = BATCH_SIZE) -> list[Verdict]:
    """The verdicts of `vectors`, in order, as `run_vector` gives them one by one: in batches
    when `pipelined(candidate, server)`, else serially. Redis outages raise
    InfrastructureError."""
    if not isinstance(candidate, ScriptsCandidate) or not pipelined(candidate, server):
        return [run_vector(v, candidate, client, profile, names, server, since, protocol)
                for v in vectors]
    verdicts: list[Verdict] = []
    for start in range(0, len(vectors), batch_size):
        verdicts += run_batch(vectors[start:start + batch_size], candidate, client, profile,
                              names, server, since, protocol)
    return verdicts


def run_batch(vectors: Sequence[Vector], candidate: ScriptsCandidate, client: redis.Redis,
              profile: KeyProfile, names: QueueNames, server: ServerInfo | None = None,
              since: health.Identity | None = None, protocol: Version = versions.CURRENT
              ) -> list[Verdict]:
    """One batch of `run_vectors`, pipelined whatever the server (see the module doc)."""
    done: dict[int, Verdict] = {}
    serial: list[int] = []
    planned: list[_Planned] = []
    for index, vector in enumerate(vectors):
        skipped = skip_verdict(vector, candidate, profile, server, protocol)
        if skipped is not None:
            done[index] = skipped
            continue
        queue = QueueRef(profile, names.next(), protocol)
        try:
            calls = tuple(candidate.plan(queue, op) for op in vector.when)
        except CandidateError:  # a missing script: the serial path says which op needs it
            serial.append(index)
            continue
        planned.append(_Planned(index, vector, queue, calls))
    if planned:
        try:
            _drive(planned, candidate, client, profile, names, server, since, done, serial)
        except REDIS_DOWN as exc:
            raise InfrastructureError(f"Redis connection lost: {exc}") from None
    for index in sorted(serial):
        done[index] = run_vector(vectors[index], candidate, client, profile, names, server,
                                 since, protocol)
    return [done[index] for index in range(len(vectors))]


def _drive(planned: list[_Planned], candidate: ScriptsCandidate, client: redis.Redis,
           profile: KeyProfile, names: QueueNames, server: ServerInfo | None,
           since: health.Identity | None, done: dict[int, Verdict], serial: list[int]) -> None:
    """Seed, drive, snapshot, judge and clean up `planned`; a vector the serial path must run
    goes to `serial`, every other verdict to `done`."""
    queues = [run.queue for run in planned]
    track = since is not None and since.client_id is not None
    try:
        replies, spans = _one_round_trip(planned, candidate, client, track, names)
        if isinstance(replies[-1], Exception):
            raise replies[-1]  # the snapshot script itself was refused
        read = snapshot.decode_read(cast(bytes, replies[-1]))
        found = _by_queue(read, names, queues)
        ran = [(run, replies[high - len(run.calls):high])
               for run, (low, high) in zip(planned, spans, strict=True)
               if not any(isinstance(reply, Exception) for reply in replies[low:high])]
        snaps = snapshot.snapshots(read, [(found[run.queue.name], run.queue.base)
                                          for run, _ in ran])
    except (UnicodeDecodeError, redis.ResponseError) as exc:
        # Our side broke on the batch (a reply that is not UTF-8), or Redis refused one of our
        # commands: each vector runs on its own, where the serial path words what went wrong.
        if isinstance(exc, UnicodeDecodeError):
            drop_connections(client)  # the rest of that pipeline's replies may be unread
        snapshot.unlink_names(client, _all(_queue_keys(client, names, queues)))
        serial.extend(run.index for run in planned)
        return
    except BaseException as exc:
        if not isinstance(exc, Exception):  # KeyboardInterrupt (any signal, see signals.py)
            drop_connections(client)
        with contextlib.suppress(redis.RedisError):
            snapshot.unlink_names(client, _all(_queue_keys(client, names, queues)))
        raise
    connection = int(cast(int, replies[0])) if track else None
    for (run, op_replies), snap in zip(ran, snaps, strict=True):
        results = [call.finish(reply) for call, reply in zip(run.calls, op_replies, strict=True)]
        verdict = judged(run.vector, results, snap, run.queue)
        done[run.index] = held(verdict, client, profile, names, server, since, connection)
    finished = {run.index for run, _ in ran}
    serial.extend(run.index for run in planned if run.index not in finished)


def _all(found: dict[str, list[str]]) -> list[str]:
    return [name for keys in found.values() for name in keys]


def _one_round_trip(planned: list[_Planned], candidate: ScriptsCandidate, client: redis.Redis,
                    track: bool, names: QueueNames
                    ) -> tuple[list[object], list[tuple[int, int]]]:
    """One pipeline: our CLIENT ID if `track`, SCRIPT LOAD of the scripts the batch calls that
    Redis lacks, then each vector's seed and ops, then the reading and deleting of every key of
    the run (`snapshot.read_matching`). The replies (errors as exceptions; the last one is the
    read), and each vector's slice of them (its seed, then its ops)."""
    scripts = {call.sha: call.text for run in planned for call in run.calls}
    scripts[snapshot.READ_KEYS_SHA] = snapshot.READ_KEYS
    # Bodies are sent only when Redis lacks them: they are most of the bytes otherwise.
    known = client.script_exists(*scripts)
    pipe = client.pipeline(transaction=False)
    if track:
        pipe.client_id()
    for text, there in zip(scripts.values(), known, strict=True):
        if not there:
            pipe.script_load(text)
    spans: list[tuple[int, int]] = []
    for run in planned:
        low = len(pipe)
        seed_commands(pipe, run.queue, dict(run.vector.given))
        for call in run.calls:
            keys = candidate.script_call_keys(run.queue, call)
            pipe.evalsha(call.sha, len(keys), *keys, *call.args)
        spans.append((low, len(pipe)))
    snapshot.read_matching(pipe, _run_pattern(names))
    return pipe.execute(raise_on_error=False), spans


def _run_pattern(names: QueueNames) -> str:
    """Every key holding a queue name of the run (`bmqc-<run id>-` and six digits), and not
    the health probe's (`bmqc-<run id>-probe`)."""
    return f"*{snapshot.glob_escape(f'bmqc-{names.run_id}-')}{'[0-9]' * 6}*"


def _by_queue(keys: Iterable[str], names: QueueNames, queues: list[QueueRef]
              ) -> dict[str, list[str]]:
    """`keys`, by the queue of `queues` whose name they hold."""
    wanted: dict[str, list[str]] = {queue.name: [] for queue in queues}
    pattern = re.compile(re.escape(f"bmqc-{names.run_id}-") + r"[0-9]{6}")
    for key in keys:
        for name in dict.fromkeys(pattern.findall(key)):
            if name in wanted:
                wanted[name].append(key)
    return wanted


def _queue_keys(client: redis.Redis, names: QueueNames, queues: list[QueueRef]
                ) -> dict[str, list[str]]:
    """Every key of the run that holds a name of `queues`, by queue name (one SCAN)."""
    return _by_queue(set(client.scan_iter(match=_run_pattern(names), count=10_000)), names,
                     queues)
