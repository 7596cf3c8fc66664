"""Key tracking on a shared server (`--redis url:`): each vector's keys are found from
`CLIENT TRACKING ... BCAST` invalidations instead of a SCAN of the whole keyspace.

The tracker must see writes by every connection (the candidate's own, an adapter's), read them
in order after those writes, still catch keys outside BASE, fall back to SCAN when the server
refuses tracking or the tracking connection breaks, and leave foreign keys alone.
"""

from __future__ import annotations

import threading

import pytest
import redis
from shared_server_helpers import db_url

from conformance import servers
from conformance.candidates.base import Candidate
from conformance.core.errors import InfrastructureError
from conformance.core.outcomes import Outcome
from conformance.core.queues import QueueNames, QueueRef
from conformance.run.session import Run
from conformance.run.spec import RunOptions
from conformance.state.keytracker import KeyTracker, TrackingRefused
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.keys import PROFILES
from reference_impl.ops import Op, Result
from tests.cli_helpers import cli

#: Databases of the module's server: one per test.
DB_ORDER, DB_BREAK, DB_STRAY, DB_EMPTY, DB_FULL, DB_REFUSED, DB_XDIST = 1, 2, 3, 4, 5, 6, 7
DB_FLUSH, DB_FOREIGN = 8, 9
FOREIGN = 200_000
FILL = """
for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do redis.call('SET', 'foreign:' .. i, i) end
"""
CHECKSUM = """
local sum = 0
for i = 1, tonumber(ARGV[1]) do sum = sum + tonumber(redis.call('GET', 'foreign:' .. i)) end
return tostring(sum)
"""


def _scans(client: redis.Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_scan", {}).get("calls", 0))


def _queue(names: QueueNames) -> QueueRef:
    return QueueRef(PROFILES["bullmq"], names.next(), versions.CURRENT)


def test_writes_of_other_connections_are_read_after_them(own_server: servers.ServerInfo
                                                         ) -> None:
    """Keys a script on another connection writes (and deletes) are all listed as soon as its
    call returns, a stray key included; foreign keys and another run's are not kept."""
    url = db_url(own_server, DB_ORDER)
    ours, writer = servers.client_for_url(url), redis.Redis.from_url(url)
    names = QueueNames()
    tracker = KeyTracker(url, names.run_id)
    write = writer.register_script(
        "for i = 1, 20 do redis.call('SET', KEYS[1] .. i, 'x') end "
        "redis.call('SET', 'stray:{' .. ARGV[1] .. '}', 'x') "
        "redis.call('DEL', KEYS[1] .. '1') "
        "redis.call('SET', 'foreign:' .. KEYS[1], 'x') "
        "redis.call('SET', 'bull:bmqc-0badc0de-000001:x', 'x')")
    try:
        scans = _scans(ours)
        for _ in range(300):  # each round reads right behind the writes
            queue = _queue(names)
            write(keys=[queue.key("k")], args=[queue.name])
            found = tracker.keys_of(ours, queue)
            wanted = sorted([queue.key(f"k{i}") for i in range(1, 21)]
                            + [f"stray:{{{queue.name}}}", f"foreign:{queue.key('k')}"])
            assert found == wanted
            ours.unlink(*found)
        assert _scans(ours) == scans, "keys were found by SCAN, not by tracking"
        assert tracker.complete
    finally:
        tracker.close()
        ours.unlink(*(k for k in ours.scan_iter(count=1000)))


def test_broken_tracking_falls_back_to_scan(own_server: servers.ServerInfo) -> None:
    """A tracking connection killed between vectors: that vector's keys come from SCAN, the
    next one is tracked again, and the final sweep reports that it must scan."""
    url = db_url(own_server, DB_BREAK)
    client = servers.client_for_url(url)
    names = QueueNames()
    tracker = KeyTracker(url, names.run_id)
    try:
        first, second = _queue(names), _queue(names)
        client.set(first.key("id"), "1")
        client.client_kill_filter(skipme=True, _type="pubsub")
        client.set(first.key("meta"), "1")  # after the kill: no invalidation reaches us
        scans = _scans(client)
        assert tracker.keys_of(client, first) == sorted([first.key("id"), first.key("meta")])
        assert _scans(client) > scans
        assert not tracker.complete
        client.set(second.key("wait"), "1")
        scans = _scans(client)
        assert tracker.keys_of(client, second) == [second.key("wait")]
        assert _scans(client) == scans, "tracking did not start again"
        assert tracker.sweep(client) is None
    finally:
        tracker.close()
        client.unlink(*(k for k in client.scan_iter(count=1000)))


class StrayWriter:
    """The reference candidate, plus a key outside BASE written from another connection
    (a thread's, like an adapter's) after every op."""

    def __init__(self, inner: Candidate, url: str) -> None:
        self.inner = inner
        self.name, self.version = "stray-writer", "0"
        self.capabilities = inner.capabilities
        self._other = redis.Redis.from_url(url)

    def start(self, redis_url: str, profile: object) -> None:
        self.inner.start(redis_url, profile)  # type: ignore[arg-type]

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        result = self.inner.apply(client, queue, op)
        thread = threading.Thread(target=self._other.set,
                                  args=(f"stray:{{{queue.name}}}", "outside"))
        thread.start()
        thread.join()
        return result

    def close(self) -> None:
        self.inner.close()
        self._other.close()


def _run_all(url: str, vectors: list[Vector], candidate_wrapper: type | None = None
             ) -> tuple[list[tuple[str, Outcome, str]], Run]:
    run = Run(RunOptions(redis=f"url:{url}"))
    if candidate_wrapper is not None:
        run.candidate = candidate_wrapper(run.candidate, url)
    run.start()
    try:
        assert run.protocol is not None
        verdicts = [run.run(v, run.protocol) for v in vectors]
    finally:
        run.close()
    return [(v.vector.id, v.outcome, "\n".join(v.diff)) for v in verdicts], run


def test_key_written_outside_base_is_caught(own_server: servers.ServerInfo,
                                           all_vectors: list[Vector]) -> None:
    """On the tracked path a key outside BASE, written by another connection, fails the
    vector, and is deleted with the queue."""
    url = db_url(own_server, DB_STRAY)
    client = servers.client_for_url(url)
    vectors = [v for v in all_vectors if v.id.startswith("band-bump/")][:3]
    assert vectors
    verdicts, run = _run_all(url, vectors, StrayWriter)
    assert run.scan_reason is None and run.tracker is not None
    for vid, outcome, diff in verdicts:
        assert outcome == Outcome.FAILED, vid
        assert f"key outside BASE 'bull:bmqc-{run.names.run_id}-" in diff
        assert "stray:{bmqc-" in diff
    assert client.dbsize() == 0


class Flusher:
    """The reference candidate, while another client flushes the database after the apply
    calls numbered in `flush_at` (after the op: what it wrote is gone)."""

    flush_at: frozenset[int] = frozenset({2})

    def __init__(self, inner: Candidate, url: str) -> None:
        self.inner = inner
        self.name, self.version = "flusher", "0"
        self.capabilities = inner.capabilities
        self._other = redis.Redis.from_url(url)
        self.calls = 0

    def start(self, redis_url: str, profile: object) -> None:
        self.inner.start(redis_url, profile)  # type: ignore[arg-type]

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        result = self.inner.apply(client, queue, op)
        self.calls += 1
        if self.calls in self.flush_at:
            self._other.flushdb()  # someone else's, on the run's database
        return result

    def close(self) -> None:
        self.inner.close()
        self._other.close()


class AlwaysFlusher(Flusher):
    flush_at = frozenset(range(1, 1000))


def test_someone_elses_flush_runs_the_vector_again(own_server: servers.ServerInfo,
                                                   all_vectors: list[Vector]) -> None:
    """A FLUSHDB by another client (no client killed) mid-vector wipes what the candidate
    wrote: the tracker is told, and the vector runs again instead of failing."""
    url = db_url(own_server, DB_FLUSH)
    vectors = [v for v in all_vectors if v.id.startswith("band-bump/")][:3]
    assert all(len(v.when) >= 2 for v in vectors[:1]), "the flush must land mid-vector"
    verdicts, run = _run_all(url, vectors, Flusher)
    assert [o for _, o, _ in verdicts] == [Outcome.PASSED] * len(vectors), verdicts
    assert isinstance(run.candidate, Flusher) and run.candidate.calls > sum(
        len(v.when) for v in vectors), "the flushed vector ran again"


def test_a_flush_in_every_try_stops_the_run(own_server: servers.ServerInfo,
                                            all_vectors: list[Vector]) -> None:
    url = db_url(own_server, DB_FLUSH)
    vector = next(v for v in all_vectors if v.id.startswith("band-bump/"))
    with pytest.raises(InfrastructureError, match=r"someone else flushed the server .* twice"):
        _run_all(url, [vector], AlwaysFlusher)


class ForeignWriter(StrayWriter):
    """The reference candidate, plus a write far outside its queue (`bull:prod:wait`) from
    another connection after every op."""

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        result = self.inner.apply(client, queue, op)
        self._other.rpush("bull:prod:wait", "x")
        return result


def test_writes_outside_the_run_are_warned_about(own_server: servers.ServerInfo,
                                                 all_vectors: list[Vector]) -> None:
    """On a shared server a write outside the run's queues may be another client's: no
    verdict changes, but the run warns, naming the key and how many vectors saw it."""
    url = db_url(own_server, DB_FOREIGN)
    client = servers.client_for_url(url)
    vectors = [v for v in all_vectors if v.id.startswith("band-bump/")][:3]
    try:
        verdicts, run = _run_all(url, vectors, ForeignWriter)
        assert [o for _, o, _ in verdicts] == [Outcome.PASSED] * len(vectors)
        (warning,) = run.warnings()
        assert f"bull:prod:wait ({len(vectors)} vectors)" in warning
        _, quiet = _run_all(url, vectors)
        assert quiet.warnings() == []
    finally:
        client.delete("bull:prod:wait")


@pytest.mark.slow
def test_foreign_keys_neither_slow_nor_touched(own_server: servers.ServerInfo,
                                              all_vectors: list[Vector]) -> None:
    """A run on a database holding 200,000 foreign keys gives the verdicts of a run on an
    empty one, sends no SCAN, and leaves every foreign key as it was."""
    full = servers.client_for_url(db_url(own_server, DB_FULL))
    try:
        for start in range(1, FOREIGN + 1, 50_000):
            full.eval(FILL, 0, start, min(start + 49_999, FOREIGN))
        checksum = full.eval(CHECKSUM, 0, FOREIGN)
        empty, _ = _run_all(db_url(own_server, DB_EMPTY), all_vectors)
        scans = _scans(full)
        crowded, _ = _run_all(db_url(own_server, DB_FULL), all_vectors)
        assert _scans(full) == scans, "the run scanned the keyspace"
        assert crowded == empty
        assert sum(1 for _, o, _ in crowded if o == Outcome.PASSED) > 400
        assert full.dbsize() == FOREIGN
        assert full.eval(CHECKSUM, 0, FOREIGN) == checksum
    finally:
        full.unlink(*(k for k in full.scan_iter(count=10_000)))


def test_refused_tracking_falls_back_to_scan(own_server: servers.ServerInfo,
                                            all_vectors: list[Vector]) -> None:
    """A user whose ACL denies CLIENT TRACKING: the run scans, says so in its header, and
    still judges and cleans up."""
    admin = servers.client_for(own_server)
    admin.acl_setuser("bmqc-no-tracking", enabled=True, passwords=["+secret"], keys=["*"],
                      channels=["*"], commands=["+@all", "-client|tracking"], reset=True)
    url = db_url(own_server, DB_REFUSED).replace("://", "://bmqc-no-tracking:secret@", 1)
    try:
        with pytest.raises(TrackingRefused, match=r"CLIENT TRACKING refused: .*no permissions"):
            KeyTracker(url, "cafe")
        vectors = [v for v in all_vectors if v.id.startswith("band-bump/")][:3]
        verdicts, run = _run_all(url, vectors)
        assert run.tracker is None and run.scan_reason is not None
        assert "warning: each vector scans the keyspace" in run.header()
        assert [o for _, o, _ in verdicts] == [Outcome.PASSED] * len(vectors)
        assert servers.client_for(own_server, db=DB_REFUSED).dbsize() == 0
    finally:
        admin.acl_deluser("bmqc-no-tracking")


@pytest.mark.slow
def test_parallel_workers_track_their_own_keys(own_server: servers.ServerInfo) -> None:
    """`-n 2` on a url: server holding foreign keys: every worker (and the controller's final
    sweep) finds keys by tracking, so no SCAN is sent, and only the foreign keys remain."""
    url = db_url(own_server, DB_XDIST)
    client = servers.client_for_url(url)
    try:
        client.eval(FILL, 0, 1, 50_000)
        checksum = client.eval(CHECKSUM, 0, 50_000)
        scans = _scans(client)
        proc = cli("run", "-q", "-n", "2", "--redis", f"url:{url}", "--examples", "0",
                   timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
        assert " passed" in proc.stdout
        assert _scans(client) == scans, "a worker scanned the keyspace"
        assert client.dbsize() == 50_000
        assert client.eval(CHECKSUM, 0, 50_000) == checksum
    finally:
        client.unlink(*(k for k in client.scan_iter(count=10_000)))


def test_silent_tracking_falls_back_to_scan(own_server: servers.ServerInfo,
                                           all_vectors: list[Vector],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that accepts CLIENT TRACKING but reports no write (a proxy, a look-alike):
    the run sees its probe go unreported and scans instead of finding no keys."""
    monkeypatch.setattr(KeyTracker, "_note", lambda self, names: None)
    vectors = [v for v in all_vectors if v.id.startswith("band-bump/")][:3]
    verdicts, run = _run_all(db_url(own_server, DB_REFUSED), vectors)
    assert run.tracker is None
    assert run.scan_reason == "CLIENT TRACKING was accepted, but no write was reported"
    assert [o for _, o, _ in verdicts] == [Outcome.PASSED] * len(vectors)
    assert servers.client_for(own_server, db=DB_REFUSED).dbsize() == 0
