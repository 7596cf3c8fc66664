"""The batched driver: many vectors of a scripts candidate (`reference`, `scripts:DIR`) run
in pipelined batches on a server the suite started (`pipelined`).

Every vector runs in its own queue, and a script call's KEYS and ARGV depend only on its op and
queue (`ScriptsCandidate.plan`: one call per op, or addFlow's several, whose result is its first
call's reply), never on an earlier reply. So a batch of up to BATCH_SIZE
vectors takes two round trips: SCRIPT EXISTS for the scripts it calls, then one pipeline
(`_one_round_trip`) with our CLIENT ID (when verdicts are held against the server), SCRIPT LOAD
of the scripts Redis lacks, every vector's seed and ops in order, and last one `READ_KEYS` call
(`snapshot.read_matching`) that reads and deletes every key of the run, and lists and deletes
any key outside it. The pipeline is sent without reading its replies (`_InFlight`): Redis runs a
batch while the one before it is judged (`run_vectors`; `conformance.run.session` sends the
batch of the items due next through `Batches`).

The steps the serial driver shares are `conformance.run.verdict`'s: the skips decided before a
vector runs, the seed's commands, the judgement of a vector whose every op ran (`judged`), and
a failing verdict held against the server (`held`, with the batch's connection).

Whatever the serial path would tell apart from a plain run is left to it, through the one
fallback into `conformance.run.serial` (`Batches._serially`, its `run_vector`): a vector whose
plan fails (a script the candidate lacks) or with an error reply to any of its commands (a Lua
error, NOSCRIPT after a flush, a rejected seed) runs again on a fresh queue, where the ops after
the failing one are never sent; and every vector of a batch does when our side broke (a reply
or a key that is not UTF-8, the read refused) or the read found keys outside every queue of the
run (alone, each vector tells whose they are), once the batch's keys are deleted (one SCAN, then
UNLINK). So verdicts are the serial path's, word for word.

A batch's replies are read with the candidate's per-call limit (`ScriptsCandidate.limited`): a
reply that does not come by then is a script of the batch still running (redis-py closes the
connection). It is killed with SCRIPT KILL and the batch's connection with CLIENT KILL, turn by
turn while another call of the batch runs away in its place, so that nothing more of the batch
runs; its keys are deleted, and its vectors run again one by one, where only the runaway one
errors. A script that has written cannot be killed: the suite shuts its server down, and the
run stops.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import redis
from redis.client import NEVER_DECODE

from conformance.candidates.base import Candidate
from conformance.candidates.scripts.call import (
    ScriptCall,
    is_busy_reply,
    is_unkillable,
    kill_runaway,
    limited_client,
    unkillable_text,
)
from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.core.errors import CandidateError, InfrastructureError
from conformance.core.queues import QueueNames, QueueRef
from conformance.run import binding
from conformance.run.serial import run_vector  # the one fallback (see the docstring)
from conformance.run.verdict import (
    REDIS_DOWN,
    Verdict,
    held,
    judged,
    seed_commands,
    skip_verdict,
    stop_unkillable,
)
from conformance.servers import ServerInfo, health
from conformance.state import snapshot
from conformance.vectors import Vector
from reference_impl.keys import KeyProfile
from reference_impl.ops import Result
from reference_impl.versions import Version

#: Vectors per batch: enough to amortize the round trips, few enough that a batch stays well
#: under the shortest expiry a vector checks (1 s).
BATCH_SIZE = 48
_T = TypeVar("_T")
#: Set to 1 to run every vector serially (the escape hatch, and the path to compare with).
SERIAL_ENV = "BULLMQ_CONFORMANCE_SERIAL"


def serial_forced() -> bool:
    """Whether `BULLMQ_CONFORMANCE_SERIAL=1` asks for the serial path."""
    return os.environ.get(SERIAL_ENV, "") not in ("", "0")


def pipelined(candidate: Candidate, server: ServerInfo | None) -> bool:
    """Whether vectors of `candidate` on `server` may run in batches: a scripts candidate, on
    a single server the suite started, unless the serial path is forced."""
    return (isinstance(candidate, ScriptsCandidate) and server is not None and server.private
            and not serial_forced())


@dataclass(frozen=True)
class _Planned:
    index: int
    vector: Vector
    queue: QueueRef
    #: The vector's other queues (a flow across queues: `<q2>`).
    others: tuple[QueueRef, ...]
    #: Each op's queue, and its script calls (`ScriptsCandidate.plan`): one, addFlow's
    #: several, or none (a worker that asks for no next iteration).
    ops: tuple[tuple[QueueRef, tuple[ScriptCall, ...]], ...]

    @property
    def queues(self) -> tuple[QueueRef, ...]:
        """Every queue of the vector, its own first."""
        return (self.queue, *self.others)

    @property
    def calls(self) -> tuple[ScriptCall, ...]:
        """Every script call of the vector, in the order sent."""
        return tuple(call for _, calls in self.ops for call in calls)

    def results(self, replies: list[object]) -> list[Result]:
        """Each op's result from the replies to `calls`: its first call's (addFlow's root), or
        None for an op that called nothing."""
        results: list[Result] = []
        at = 0
        for _, calls in self.ops:
            results.append(calls[0].finish(replies[at]) if calls else None)
            at += len(calls)
        return results


def run_vectors(vectors: Sequence[Vector], candidate: Candidate, client: redis.Redis,
                profile: KeyProfile, names: QueueNames, server: ServerInfo | None = None,
                since: health.Identity | None = None, *, protocol: Version,
                batch_size: int = BATCH_SIZE) -> list[Verdict]:
    """The verdicts of `vectors`, in order, as the serial driver gives them one by one: in
    batches when `pipelined(candidate, server)` (each batch sent before the one ahead of it is
    judged), else by `conformance.run.serial.run_vector`. Redis outages raise
    InfrastructureError."""
    if not isinstance(candidate, ScriptsCandidate) or not pipelined(candidate, server):
        return [run_vector(v, candidate, client, profile, names, server, since,
                           protocol=protocol) for v in vectors]
    chunks = [vectors[start:start + batch_size] for start in range(0, len(vectors), batch_size)]
    verdicts: list[Verdict] = []
    with contextlib.closing(Batches(candidate, client, profile, names, server, since)) as runs:
        ticket = runs.submit(chunks[0], protocol) if chunks else None
        for chunk in chunks[1:]:
            assert ticket is not None
            runs.receive(ticket)
            later = runs.submit(chunk, protocol)
            verdicts += runs.verdicts(ticket)  # judged while Redis runs `later`
            ticket = later
        if ticket is not None:
            verdicts += runs.verdicts(ticket)
    return verdicts


@dataclass
class Ticket:
    """A submitted batch: its plan, its round trip while in flight, then what came back (None
    when our side broke and every vector goes to the serial path). Not frozen: it moves from
    planned to in flight to received."""

    vectors: Sequence[Vector]
    protocol: Version
    done: dict[int, Verdict]
    serial: list[int]
    planned: list[_Planned]
    flight: _InFlight | None = None
    spans: list[tuple[int, int]] = field(default_factory=list)
    fetched: _Fetched | None = None


@dataclass(frozen=True)
class _Fetched:
    ran: list[tuple[_Planned, list[object]]]
    snaps: list[snapshot.Snapshot]
    connection: int | None


class _Stalled(Exception):
    """No reply came within the limit: the `index`-th command's (a script still running).
    `replies` are those read before it; the connection is closed."""

    def __init__(self, index: int, replies: list[object]) -> None:
        super().__init__(f"no reply to command {index} within the limit")
        self.index, self.replies = index, replies


class _InFlight:
    """A pipeline sent on a connection of its own, its replies not read yet: Redis runs it
    while we do something else. redis-py's `Pipeline.execute` sends and reads at once, so the
    two halves use its connection's own `pack_commands`, `send_packed_command` and
    `read_response`. Replies come as Redis sent them, errors as exceptions in their place: no
    reply callback is applied, and none would change a reply the batch reads."""

    def __init__(self, pool: redis.ConnectionPool, connection: Any,
                 commands: list[tuple[tuple[Any, ...], dict[str, Any]]]) -> None:
        self._pool, self._connection, self._commands = pool, connection, commands

    @classmethod
    def send(cls, client: redis.Redis, pipe: redis.client.Pipeline) -> _InFlight:
        """Send `pipe`'s commands, not waiting for a reply."""
        pool = client.connection_pool
        connection = pool.get_connection()
        commands = [(args, options) for args, options in pipe.command_stack]
        try:
            connection.send_packed_command(connection.pack_commands(
                [args for args, _ in commands]))
        except BaseException:
            connection.disconnect()
            pool.release(connection)
            raise
        return cls(pool, connection, commands)

    def receive(self) -> list[object]:
        """Every reply, in order (a reply that is an error, as the exception)."""
        replies: list[object] = []
        try:
            for _, options in self._commands:
                try:
                    replies.append(self._connection.read_response(
                        disable_decoding=NEVER_DECODE in options))
                except redis.ResponseError as exc:
                    replies.append(exc)
                except redis.TimeoutError:  # redis-py has closed the connection
                    raise _Stalled(len(replies), replies) from None
        except BaseException:
            self._connection.disconnect()  # replies may be left unread on it
            raise
        finally:
            self._pool.release(self._connection)
        return replies

    def abandon(self) -> None:
        """Drop the round trip: its connection is closed, its replies never read."""
        self._connection.disconnect()
        self._pool.release(self._connection)


class Batches:
    """The batches of one run, one round trip each, one in flight at a time.

    `submit` plans a batch and sends it; Redis runs it while the caller does something else
    (judges the batch before, or reports its items); `verdicts` reads what came back and judges
    it. Anything that touches Redis from our side first `settle`s the batch in flight: its
    read-and-delete covers every queue of the run.
    """

    def __init__(self, candidate: ScriptsCandidate, client: redis.Redis, profile: KeyProfile,
                 names: QueueNames, server: ServerInfo | None,
                 since: health.Identity | None) -> None:
        self.candidate, self.client, self.profile = candidate, client, profile
        self.names, self.server, self.since = names, server, since
        self._in_flight: Ticket | None = None

    def submit(self, vectors: Sequence[Vector], protocol: Version) -> Ticket:
        """Plan `vectors` (drawing their queue names) and send their round trip."""
        self.settle()
        ticket = _plan(vectors, self.candidate, self.profile, self.names, self.server, protocol)
        if ticket.planned:
            ticket.flight = self._guarded(ticket, lambda: self._send(ticket))
            self._in_flight = ticket
        return ticket

    def receive(self, ticket: Ticket) -> None:
        """Read the replies of `ticket`'s round trip, if still in flight."""
        if ticket.flight is None:
            return
        flight, ticket.flight = ticket.flight, None
        if self._in_flight is ticket:
            self._in_flight = None

        def step() -> _Fetched | None:
            try:
                replies = flight.receive()
            except UnicodeDecodeError:  # a reply that is not UTF-8 (its connection is closed)
                self._broken(ticket)
                return None
            except _Stalled as stalled:
                self._runaway(ticket, stalled)
                return None
            return self._fetched(ticket, replies)

        ticket.fetched = self._guarded(ticket, step)

    def settle(self) -> None:
        """Receive the batch in flight, if any: our side is about to use Redis."""
        if self._in_flight is not None:
            self.receive(self._in_flight)

    def verdicts(self, ticket: Ticket) -> list[Verdict]:
        """The verdicts of a submitted batch, in order."""
        self.receive(ticket)
        done, serial = dict(ticket.done), list(ticket.serial)
        fetched = ticket.fetched
        if fetched is None:
            serial += [run.index for run in ticket.planned]
        else:
            for (run, op_replies), snap in zip(fetched.ran, fetched.snaps, strict=True):
                done[run.index] = judged(run.vector, run.results(op_replies), snap, run.queue,
                                         run.others)
            finished = {run.index for run, _ in fetched.ran}
            serial += [run.index for run in ticket.planned if run.index not in finished]
            failing = [i for i in sorted(finished) if done[i].outcome.failing]
            if failing and self.since is not None:
                self.settle()
                for index in failing:
                    done[index] = held(done[index], self.client, self.profile, self.names,
                                       self.server, self.since, fetched.connection)
        if serial:
            self.settle()
        for index in sorted(serial):
            done[index] = self._serially(ticket.vectors[index], ticket.protocol)
        return [done[index] for index in range(len(ticket.vectors))]

    def _serially(self, vector: Vector, protocol: Version) -> Verdict:
        """The fallback: `vector` run by the serial driver (`conformance.run.serial`), on a
        fresh queue, for the words of what the batch could only see went wrong."""
        return run_vector(vector, self.candidate, self.client, self.profile, self.names,
                          self.server, self.since, protocol=protocol)

    def close(self) -> None:
        """Cut short a round trip still in flight (not asked for: the run stops, and it may
        wait on the candidate's runaway script), and delete its keys."""
        ticket, self._in_flight = self._in_flight, None
        if ticket is None or ticket.flight is None:
            return
        ticket.flight.abandon()
        ticket.flight = None
        with contextlib.suppress(redis.RedisError):
            self._broken(ticket)

    def _guarded(self, ticket: Ticket, step: Callable[[], _T]) -> _T:
        """`step`, cleaning up the batch's keys when it raises; a lost connection is an
        InfrastructureError."""
        try:
            return step()
        except BaseException as exc:
            if self._in_flight is ticket:
                self._in_flight = None
            if ticket.flight is not None:
                ticket.flight.abandon()
                ticket.flight = None
            with contextlib.suppress(redis.RedisError):
                self._broken(ticket)
            if isinstance(exc, REDIS_DOWN):
                raise InfrastructureError(health.connection_lost(exc)) from None
            raise

    def _send(self, ticket: Ticket) -> _InFlight:
        pipe, ticket.spans = _one_round_trip(ticket.planned, self.candidate, self.client,
                                             self._track(), self.names)
        limited, _ = self.candidate.limited(self.client)
        return _InFlight.send(limited, pipe)

    def _runaway(self, ticket: Ticket, stalled: _Stalled) -> None:
        """End a batch whose script still ran at the limit: kill it, then the batch's
        connection (Redis goes on with the commands it had read from it: a later runaway call
        among them is killed too), and delete the batch's keys. Its vectors then run serially.
        A script that has written cannot be killed: the server is shut down (it is the
        suite's) and the run stops."""
        _, limit = self.candidate.limited(self.client)
        admin = limited_client(self.client, limit, db=0)  # no SELECT: refused while busy
        try:
            owner = stalled.replies[0] if self._track() and stalled.replies else None
            turns = 2 + sum(len(run.calls) for run in ticket.planned)
            for turn in range(turns):
                try:
                    if turn == turns - 1 or not isinstance(owner, int):
                        # The batch's connection is gone (or unknown: closed, at least): wait
                        # for the last killed script to stop, so that the cleanup is answered.
                        kill_runaway(self.client, limit)
                        break
                    kill_runaway(self.client, limit, wait=False)
                    admin.client_kill_filter(_id=str(owner))
                    owner = None
                except redis.ResponseError as exc:
                    if is_unkillable(exc):
                        raise InfrastructureError(self._unkillable(ticket, stalled.index, limit,
                                                                   admin)) from None
                    if "No such client" in str(exc):
                        owner = None  # gone already
                    elif not is_busy_reply(exc):
                        raise
                    # else another call of the batch runs away: killed on the next turn
        finally:
            admin.close()
            admin.connection_pool.disconnect()
        self._broken(ticket)

    def _unkillable(self, ticket: Ticket, index: int, limit: float,
                    admin: redis.Redis) -> str:
        """Shut the suite's server down (the one end Redis allows a script that has written),
        and say why the run stops."""
        # Replies before the stalled one may be held back too (Redis sends none to a client
        # while its script runs), so the runaway call is one of those not read.
        files = sorted({call.file_name for run, (_, high) in zip(ticket.planned, ticket.spans,
                                                                  strict=True)
                        for position, call in enumerate(run.calls, high - len(run.calls))
                        if position >= index})
        name = (files[0] if len(files) == 1 else f"one of {', '.join(files)}" if files
                else "a script of the batch")
        return stop_unkillable(admin, True, unkillable_text(name, limit))

    def _track(self) -> bool:
        return self.since is not None and self.since.client_id is not None

    def _fetched(self, ticket: Ticket, replies: list[object]) -> _Fetched | None:
        """What a round trip's replies say; None when our side broke (or Redis refused one of
        our commands): every vector then runs on its own, where the serial path words what
        went wrong."""
        planned, spans = ticket.planned, ticket.spans
        if isinstance(replies[-1], Exception):  # the snapshot script itself was refused
            self._broken(ticket)
            return None
        try:
            read, foreign = snapshot.decode_read_all(cast(bytes, replies[-1]))
        except UnicodeDecodeError:
            self._broken(ticket)
            return None
        if foreign:
            # Keys outside every queue of the run, which on our server only the candidate
            # writes (the read deleted them): each vector runs on its own, to tell whose.
            self._broken(ticket)
            return None
        found = _by_queue(read, self.names, [queue for run in planned for queue in run.queues])
        ran = [(run, replies[high - len(run.calls):high])
               for run, (low, high) in zip(planned, spans, strict=True)
               if not any(isinstance(reply, Exception) for reply in replies[low:high])]
        every = iter(snapshot.snapshots(read, [(found[queue.name], queue.base)
                                               for run, _ in ran for queue in run.queues]))
        snaps = [snapshot.merged(next(every), [(next(every), other) for other in run.others])
                 for run, _ in ran]
        connection = int(cast(int, replies[0])) if self._track() else None
        return _Fetched(ran, snaps, connection)

    def _broken(self, ticket: Ticket) -> None:
        """Delete whatever keys a batch left (its replies cannot be used, or it was cut)."""
        snapshot.unlink_names(self.client, _all(_queue_keys(
            self.client, self.names, [queue for run in ticket.planned for queue in run.queues])))


def _plan(vectors: Sequence[Vector], candidate: ScriptsCandidate, profile: KeyProfile,
          names: QueueNames, server: ServerInfo | None, protocol: Version) -> Ticket:
    done: dict[int, Verdict] = {}
    serial: list[int] = []
    planned: list[_Planned] = []
    for index, vector in enumerate(vectors):
        skipped = skip_verdict(vector, candidate, profile, server, protocol)
        if skipped is not None:
            done[index] = skipped
            continue
        queue, *others = queues = binding.fresh_queues(vector, profile, names, protocol)
        vector = binding.bound(vector, queues)
        try:
            ops = tuple((target, candidate.plan(target, op)) for target, op
                        in zip(binding.op_queues(vector, queues), vector.when, strict=True))
        except CandidateError:  # a missing script: the serial path says which op needs it
            serial.append(index)
            continue
        planned.append(_Planned(index, vector, queue, tuple(others), ops))
    return Ticket(vectors, protocol, done, serial, planned)


def _all(found: dict[str, list[str]]) -> list[str]:
    return [name for keys in found.values() for name in keys]


def _one_round_trip(planned: list[_Planned], candidate: ScriptsCandidate, client: redis.Redis,
                    track: bool, names: QueueNames
                    ) -> tuple[redis.client.Pipeline, list[tuple[int, int]]]:
    """The batch's one pipeline, not sent: our CLIENT ID if `track`, SCRIPT LOAD of the
    scripts the batch calls that Redis lacks, then each vector's seed and ops, then the reading
    and deleting of every key of the run (`snapshot.read_matching`). With it, each vector's
    slice of its replies (its seed, then its ops)."""
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
        seed_commands(pipe, run.queue, dict(run.vector.given), run.others)
        for target, calls in run.ops:
            for call in calls:
                keys = candidate.script_call_keys(target, call)
                pipe.evalsha(call.sha, len(keys), *keys, *call.args)
        spans.append((low, len(pipe)))
    snapshot.read_matching(pipe, names.glob, names.root)
    return pipe, spans


def _by_queue(keys: Iterable[str], names: QueueNames, queues: list[QueueRef]
              ) -> dict[str, list[str]]:
    """`keys`, by the queue of `queues` whose name they hold."""
    wanted: dict[str, list[str]] = {queue.name: [] for queue in queues}
    pattern = names.pattern
    for key in keys:
        for name in dict.fromkeys(pattern.findall(key)):
            if name in wanted:
                wanted[name].append(key)
    return wanted


def _queue_keys(client: redis.Redis, names: QueueNames, queues: list[QueueRef]
                ) -> dict[str, list[str]]:
    """Every key of the run that holds a name of `queues`, by queue name (one SCAN)."""
    return _by_queue(set(client.scan_iter(match=names.glob, count=10_000)), names,
                     queues)
