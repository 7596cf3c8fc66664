"""A conformance run's shared state: the Redis server, the candidate, and the verdicts.

Used by the pytest plugin, and usable without pytest (the bench drives it directly).
"""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import redis
from redis.exceptions import RedisClusterException

import reference_impl
from conformance import servers
from conformance.candidates import from_spec
from conformance.candidates.base import Candidate
from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.core import signals
from conformance.core.errors import (
    HarnessError,
    InfrastructureError,
    RedisNotStarted,
    UsageError,
)
from conformance.core.outcomes import Outcome
from conformance.core.queues import QueueNames
from conformance.run import batch
from conformance.run.serial import run_vector
from conformance.run.spec import RunOptions, profile_for
from conformance.run.verdict import Verdict
from conformance.servers import capabilities, health
from conformance.state.keytracker import KeysFlushed, KeyTracker, TrackingRefused
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.keys import KeyProfile
from reference_impl.versions import Version

SUITE_VERSION = reference_impl.__version__
#: The vectors due after this one, in order, or a function giving them (called only when a
#: batch is to be sent).
Upcoming = Sequence[tuple[Vector, Version]] | Callable[[], Sequence[tuple[Vector, Version]]]
_SWEEP_BATCH = 1000
#: Seconds the final sweep waits for a server after a signal (the 1 s promise of a stop).
_INTERRUPTED_TIMEOUT_S = 0.25


def foreign_warnings(seen: Counter[str]) -> list[str]:
    """The warning about names outside the run written on a shared server while vectors ran
    (`seen`: by how many vectors), or none."""
    if not seen:
        return []
    shown = ", ".join(f"{name} ({count} vector{'s' if count > 1 else ''})"
                      for name, count in seen.most_common(5))
    more = len(seen) - 5
    return [f"warning: keys outside the run's queues were written on the shared server while "
            f"vectors ran, by the candidate or by another client: {shown}"
            + (f" and {more} more" if more > 0 else "")
            + "; a port must write only under its queue's prefix"]


def check_cluster(candidate: Candidate, profile: KeyProfile) -> None:
    """Refuse, in words, what cannot run on Redis Cluster: an untagged profile, or a candidate
    that does not run its scripts through our cluster client."""
    reason = capabilities.not_cluster_safe(profile)
    if reason is not None:
        raise UsageError(reason)
    if not candidate.capabilities.cluster:
        raise UsageError(f"candidate {candidate.name} cannot run on Redis Cluster yet: only "
                         "reference and scripts:DIR run their scripts through the suite's "
                         "cluster client (adapters and clients are handed one node's URL)")


@dataclass
class Run:
    """A started run: call `start()`, then `run(vector)` per vector, then `close()`."""

    options: RunOptions
    candidate: Candidate = field(init=False)
    profile: KeyProfile = field(init=False)
    protocol: Version | None = field(init=False)
    server: servers.ServerInfo | None = None
    client: redis.Redis | None = None
    names: QueueNames = field(default_factory=QueueNames)
    identity: health.Identity | None = None
    #: Verdicts of a batch, kept for their vectors' own `run` (by vector identity, protocol).
    _judged_early: dict[tuple[int, Version], Verdict] = field(default_factory=dict)
    #: Finds each vector's keys on a `url:` server; None: by SCAN (`conformance.state.keytracker`).
    tracker: KeyTracker | None = None
    #: Why keys are found by SCAN on a `url:` server, when tracking was refused.
    scan_reason: str | None = None
    #: The batches of a pipelined run, and the next one, sent ahead of its first vector.
    _batches: batch.Batches | None = None
    _next: batch.Ticket | None = None
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    #: On a shared server: names outside the run written while vectors ran, by how many
    #: vectors saw them (`warnings`).
    foreign_writes: Counter[str] = field(default_factory=Counter)
    #: Why keys of the run may be left on a `url:` server after close(), or None.
    left_behind: str | None = None

    def __post_init__(self) -> None:
        self.candidate = from_spec(self.options.candidate, self.options.adapter_timeout)
        self.profile = profile_for(self.options.profile, self.options.prefix)
        self.protocol = self.options.judged
        if servers.parse_spec(self.options.redis).kind == "cluster":
            check_cluster(self.candidate, self.profile)

    def start(self) -> None:
        """Provision Redis and start the candidate. Raises InfrastructureError (one line)."""
        self.provision()
        self.start_candidate()

    def provision(self) -> None:
        """Start (or connect to) the Redis of `options.redis`, without the candidate.

        An xdist controller calls only this; its workers `attach` to the server.
        """
        try:
            self.attach(self._stack.enter_context(servers.provision(self.options.redis)))
        except BaseException:
            self.close()
            raise

    def attach(self, server: servers.ServerInfo, db: int | None = None) -> None:
        """Use a server provisioned elsewhere (by an xdist controller), on `db` if given."""
        if db is not None:
            server = replace(server, url=servers.url_with_db(server.url, db))
        if server.cluster:
            check_cluster(self.candidate, self.profile)
        self.server = server
        try:
            self.client = servers.client_for(server)
            self.client.ping()
            fault = health.problem(self.client, health.probe_key(self.profile,
                                                                  self.names.run_id),
                                   cluster=server.cluster)
            if fault is None:
                self.identity = health.identity(self.client, server.cluster)
                self._track(server, self.client)
        except (redis.RedisError, RedisClusterException, OSError) as exc:
            fault = f"Redis is not usable: {exc}"
        if fault is not None:
            self.close()
            raise InfrastructureError(f"{fault} ({server.kind} server, before the first vector)")

    def _track(self, server: servers.ServerInfo, client: redis.Redis) -> None:
        """Track written keys on a server holding keys not ours; SCAN on one we started (it
        holds only our keys, so a scan is short) and on a cluster (tracking is per node)."""
        if server.owned or server.cluster:
            return
        try:
            tracker = KeyTracker(server.url, self.names.run_id, root=self.names.root)
        except TrackingRefused as exc:
            self.scan_reason = str(exc)
            return
        try:
            tracker.check(client, health.probe_key(self.profile, self.names.run_id))
        except TrackingRefused as exc:
            self.scan_reason = str(exc)
            return
        except BaseException:
            tracker.close()
            raise
        self.tracker = tracker

    @property
    def properties_protocol(self) -> Version:
        """The version the `properties` area checks against: the one judged, or the current
        one when every vector is judged at its own ranges (`identify`)."""
        return self.protocol or versions.CURRENT

    def started_server(self) -> servers.ServerInfo:
        """The server the run provisioned or attached. RedisNotStarted before there is one:
        the one error of that fault, wherever it is met (the run stops, exit 3)."""
        if self.server is None or self.client is None:
            raise RedisNotStarted
        return self.server

    def start_candidate(self) -> None:
        """Start the candidate on the attached server."""
        server = self.started_server()
        try:
            self.candidate.start(server.url, self.profile)
        except redis.RedisError as exc:
            self.close()
            raise InfrastructureError(f"Redis is not usable: {exc}") from None
        except BaseException:
            self.close()
            raise

    def run(self, vector: Vector, protocol: Version, upcoming: Upcoming = ()) -> Verdict:
        """Run one vector, judged at `protocol` (start() first).

        `upcoming`: the vectors due next, in order (or a function giving them, called only when
        needed). When the candidate and server take batches (`conformance.run.batch.pipelined`),
        those judged at the same protocol run in one batch with this one, each verdict kept for
        its own call, and the batch after it is sent before this one is judged: Redis runs it
        while the items of this one are reported.
        """
        self.started_server()
        kept = self._judged_early.pop((id(vector), protocol), None)
        if kept is not None:
            return kept
        following = upcoming() if callable(upcoming) else upcoming
        if following and batch.pipelined(self.candidate, self.server):
            same = itertools.takewhile(lambda due: due[1] == protocol, following)
            due = [vector, *(v for v, _ in same)]
            return self._batched(due[:batch.BATCH_SIZE], due[batch.BATCH_SIZE:], protocol)
        if self._batches is not None:
            self._batches.settle()
        try:
            return self._serial(vector, protocol)
        except KeysFlushed:
            # Someone else flushed the shared server while the vector ran: its keys may be
            # gone, through no fault of the candidate. Run it again, on a fresh queue.
            try:
                return self._serial(vector, protocol)
            except KeysFlushed as exc:
                raise InfrastructureError(f"{exc}, twice during vector {vector.id}") from None

    def _serial(self, vector: Vector, protocol: Version) -> Verdict:
        assert self.client is not None
        verdict = run_vector(vector, self.candidate, self.client, self.profile, self.names,
                             self.server, self.identity, protocol=protocol, finder=self.tracker)
        if self.tracker is not None and verdict.outcome.failing and self.tracker.flushed():
            raise KeysFlushed  # after the keys were listed: the snapshot may lack some
        if self.tracker is not None and verdict.outcome is not Outcome.SKIPPED:
            seen = self.tracker.foreign_writes()
            if seen:
                self.foreign_writes.update(seen)
                verdict = replace(verdict, foreign_writes=tuple(seen))
        return verdict

    def warnings(self, foreign_writes: Counter[str] | None = None) -> list[str]:
        """What the run saw that may be wrong but is no verdict: on a shared server, keys
        written outside the run's queues while vectors ran (`foreign_writes`: those of every
        xdist worker, when the controller gathered them; else this run's); keys the cleanup
        had to leave."""
        seen = self.foreign_writes if foreign_writes is None else foreign_writes
        return [*foreign_warnings(seen),
                *([f"warning: {self.left_behind}"] if self.left_behind else [])]

    def _batched(self, now: list[Vector], later: list[Vector], protocol: Version) -> Verdict:
        """The verdict of now[0], judging `now` as one batch (the one sent ahead, when it is
        that batch); the batch of `later` is sent before this one is judged."""
        assert self.client is not None and isinstance(self.candidate, ScriptsCandidate)
        if self._batches is None:
            self._batches = batch.Batches(self.candidate, self.client, self.profile,
                                          self.names, self.server, self.identity)
        runs, ticket, self._next = self._batches, self._next, None
        if ticket is not None and (ticket.protocol != protocol
                                   or list(map(id, ticket.vectors)) != list(map(id, now))):
            runs.receive(ticket)  # not the batch due (never expected): its verdicts are dropped
            ticket = None
        if ticket is None:
            ticket = runs.submit(now, protocol)
        runs.receive(ticket)
        if later:
            self._next = runs.submit(later[:batch.BATCH_SIZE], protocol)
        self._judged_early.clear()  # verdicts never asked for (after -x stopped the run, say)
        verdicts = runs.verdicts(ticket)
        # Keyed by the vectors asked for: a verdict holds its vector bound to its queue
        # (`conformance.run.binding`), another object when the vector names its queue.
        self._judged_early.update(((id(vector), protocol), verdict)
                                  for vector, verdict in zip(now[1:], verdicts[1:], strict=True))
        return verdicts[0]

    def close(self) -> None:
        """Stop whatever start() started.

        On a server we do not own (`url:`), first delete every key left under this run's queue
        names (an interrupted vector's, or a candidate's late write), and nothing else.
        """
        # Each step runs even when one before it is interrupted (a signal while an adapter is
        # slow to stop), and no signal is delivered again meanwhile: the server we started
        # must be stopped.
        with signals.active().closing():
            try:
                if self._batches is not None:
                    self._batches.close()
                with contextlib.suppress(HarnessError):
                    self.candidate.close()
            finally:
                try:
                    if self.server is not None and not self.server.owned:
                        self._sweep(self.server)
                finally:
                    try:
                        if self.tracker is not None:
                            self.tracker.close()
                        if self.client is not None:
                            with contextlib.suppress(redis.RedisError):
                                self.client.close()
                    finally:
                        self._stack.close()

    def _sweep(self, server: servers.ServerInfo) -> int:
        """UNLINK every key whose name contains this run's queue-name prefix; return the count.

        Never raises a Redis error: close() must still stop what start() started. When keys
        may be left (the server refuses writes, or does not answer), `left_behind` says so.
        """
        # A fresh client: the run's own may have been cut mid-reply by an interrupt, and a dead
        # server must fail fast instead of through redis-py's default retries. After a signal
        # the user is waiting: a server that does not answer at once is left as it is.
        # On a cluster, scan_iter visits every primary and unlink splits keys by slot.
        interrupted = signals.active().received is not None
        try:
            client = servers.client_for(server, fail_fast=True,
                                        timeout=_INTERRUPTED_TIMEOUT_S if interrupted else None)
        except (redis.RedisError, RedisClusterException):
            return 0  # no cluster node answers
        pattern = self.names.any_glob
        removed = 0
        batch: list[str] = []
        try:
            # Every name tracking saw (when it never broke), instead of a scan of the keyspace.
            tracked = (self.tracker.sweep(client, _INTERRUPTED_TIMEOUT_S if interrupted else None)
                       if self.tracker is not None else None)
            if tracked is not None:
                return tracked
            if interrupted and self.tracker is not None and self.tracker.broke_now:
                # The tracker's last wait ran out after a signal: the link or the server does
                # not answer, and a scan would wait as long again.
                raise redis.TimeoutError(f"no reply within {_INTERRUPTED_TIMEOUT_S} s")
            for name in client.scan_iter(match=pattern, count=_SWEEP_BATCH):
                batch.append(name)
                if len(batch) >= _SWEEP_BATCH:
                    removed += client.unlink(*batch)
                    batch.clear()
            if batch:
                removed += client.unlink(*batch)
        except redis.ConnectionError:
            pass  # the server is gone (killed, restarted): the run's stop already says so
        except (redis.RedisError, RedisClusterException, OSError) as exc:
            # Too slow (a stalled link), or refused (a replica now, an ACL): what is left
            # cannot be cleaned by us, and the user is told where it is.
            why = health.server_state(exc) or f"{type(exc).__name__}: {exc}".splitlines()[0]
            self.left_behind = (f"keys of this run may be left on the server (the cleanup "
                                f"failed: {why}): their names hold {self.names.prefix!r}; "
                                f"delete them with: redis-cli -u URL --scan --pattern "
                                f"'{pattern}' | xargs redis-cli -u URL unlink")
        finally:
            with contextlib.suppress(redis.RedisError, RedisClusterException):
                client.close()
        return removed

    def header(self) -> str:
        """One line naming the suite, candidate, profile and Redis engine."""
        engine = "not started"
        if self.server is not None:
            engine = f"{self.server.kind} {self.server.engine} {self.server.version}"
            if self.server.detail:
                engine += f" ({self.server.detail})"
            if self.scan_reason is not None:
                engine += f" (warning: each vector scans the keyspace: {self.scan_reason})"
        protocol = versions.text(self.protocol) if self.protocol else "every range (identify)"
        return (f"bullmq-conformance {SUITE_VERSION}: candidate {self.candidate.name} "
                f"[{self.candidate.version}], protocol {protocol}, "
                f"profile {self.profile.name}, redis {engine}")
