"""Find the keys a vector wrote without scanning the server's whole keyspace.

On a shared server (`url:`), `SCAN MATCH *<queue>*` per vector costs time in proportion to the
server's size. Instead, one dedicated connection turns on `CLIENT TRACKING ... BCAST` with no
prefix, redirected to itself and subscribed to `__redis__:invalidate`: Redis then tells it the
name of every key any connection writes (ours, an adapter's, a client library's), deleted and
expired keys included, so a key written outside BASE is seen as well as any other.

Redis sends broadcast invalidations from `beforeSleep`, in the event-loop iteration of the
write, ahead of replies to anything read later. So once the candidate's writes have returned, a
PING sent on the tracking connection is answered only after their invalidations: reading up to
its reply yields every name they touched. Only names holding this run's queue-name prefix are
kept, so a busy server's traffic costs parsing, not memory.

When the connection breaks (an output-buffer limit on a busy server, an interrupt mid-read),
that vector's keys are found by SCAN, tracking starts again for the next one, and the final
sweep scans too.
"""

from __future__ import annotations

import contextlib
import re
from collections import defaultdict

import redis

from conformance.core.queues import QUEUE_DIGITS, QueueRef, run_prefix
from conformance.state import snapshot

_CHANNEL = "__redis__:invalidate"
#: Foreign names kept per vector: enough to name a candidate's stray write, bounded on a busy
#: server.
_FOREIGN_KEPT = 20


class KeysFlushed(Exception):
    """Another client flushed the database (FLUSHALL or FLUSHDB) since the keys were last
    listed: what the vector wrote may be gone, through no fault of the candidate."""

    def __init__(self) -> None:
        super().__init__("someone else flushed the server (FLUSHALL or FLUSHDB) during the "
                         "run; keys the suite wrote were lost")


class TrackingRefused(Exception):
    """The server would not track keys for us (Redis < 6, an ACL, a proxy); the message says
    why, in one line."""


class KeyTracker:
    """Every key name holding the run prefix that any connection writes, by queue name.

    Implements `snapshot.KeyFinder`. Not thread-safe: one per run (each xdist worker has its
    own run, so its own tracker).
    """

    def __init__(self, url: str, run_id: str, timeout: float = 30.0,
                 root: str | None = None) -> None:
        """`root`: the name prefix of the whole run (`QueueNames.root`) when `run_id` is one
        part's (an xdist worker's): names of the other parts are neither kept nor foreign."""
        self._url = url
        self._timeout = timeout
        self._marker = run_prefix(run_id).encode()
        self._root = (root or run_prefix(run_id)).encode()
        self._queue_re = re.compile(re.escape(self._marker) + rb"\d{%d}" % QUEUE_DIGITS)
        #: Names seen so far, by the first 6 digits of their queue number.
        self._seen: dict[bytes, set[bytes]] = defaultdict(set)
        #: Names holding the prefix but no queue name: no vector's, still the final sweep's.
        self._loose: set[bytes] = set()
        #: False once a write may have been missed: the final sweep must then scan.
        self.complete = True
        #: The last drain timed out (the server or the link did not answer in time).
        self.broke_now = False
        #: A flush of the server was reported and no caller was told yet.
        self._flushed = False
        #: Names outside the run written since `foreign_writes` was last asked (at most
        #: _FOREIGN_KEPT): the candidate's writes outside its queue, or another client's.
        self._foreign: set[bytes] = set()
        self._connection: redis.connection.AbstractConnection | None = None
        self._connect()

    def _connect(self) -> None:
        """Open the tracking connection; TrackingRefused when the server says no."""
        # RESP2: invalidations arrive as pub/sub messages, which the parser hands over as
        # replies (redis-py's RESP3 parser would swallow them as push messages).
        pool = redis.ConnectionPool.from_url(self._url, protocol=2, decode_responses=False,
                                             socket_timeout=self._timeout,
                                             socket_connect_timeout=self._timeout)
        connection = pool.get_connection()
        try:
            connection.send_command("CLIENT", "ID")
            own_id = connection.read_response()
            connection.send_command("CLIENT", "TRACKING", "ON", "REDIRECT", own_id, "BCAST")
            connection.read_response()
            connection.send_command("SUBSCRIBE", _CHANNEL)
            connection.read_response()
        except redis.ResponseError as exc:
            connection.disconnect()
            raise TrackingRefused(f"CLIENT TRACKING refused: {str(exc).splitlines()[0]}"
                                  ) from None
        except BaseException:
            connection.disconnect()
            raise
        self._connection = connection

    def _drain(self) -> bool:
        """Read every invalidation sent before a PING's reply; False when the connection is
        broken (it is then closed, and `complete` is False)."""
        connection = self._connection
        if connection is None:
            return False
        try:
            connection.send_command("PING")
            while True:
                message = connection.read_response()
                if not isinstance(message, list) or not message:
                    continue
                kind = message[0]
                if kind == b"pong":
                    return True
                if kind == b"message" and isinstance(message[2], list):
                    self._note(message[2])
                elif kind == b"message" and message[2] is None:
                    # A FLUSHDB or FLUSHALL (by anyone: the suite never sends one here): the
                    # keys are gone, and so may be what a vector wrote.
                    self._flushed = True
        except BaseException as exc:
            self._break()
            self.broke_now = isinstance(exc, (redis.TimeoutError, TimeoutError))
            if isinstance(exc, (redis.RedisError, OSError)):
                return False
            raise  # an interrupt: the reply stream is cut mid-read

    def _note(self, names: list[bytes]) -> None:
        marker, seen = self._marker, self._seen
        for name in names:
            if marker in name:
                groups = {found.group() for found in self._queue_re.finditer(name)}
                for group in groups:
                    seen[group].add(name)
                if not groups:
                    self._loose.add(name)
            elif len(self._foreign) < _FOREIGN_KEPT and self._root not in name:
                self._foreign.add(name)

    def _break(self) -> None:
        self.complete = False
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.disconnect()
        self._connection = None

    def check(self, client: redis.Redis, key: str) -> None:
        """Write and delete `key` (holding the run's prefix) through `client`; TrackingRefused
        when no invalidation names it: a server that accepts tracking but never reports."""
        client.set(key, "1", px=60_000)
        client.delete(key)
        if not self._drain() or key.encode() not in self._loose.union(*self._seen.values()):
            self.close()
            raise TrackingRefused("CLIENT TRACKING was accepted, but no write was reported")

    def keys_of(self, client: redis.Redis, queue: QueueRef) -> list[str]:
        """Every key name containing the queue name written since tracking began, sorted
        (some may be deleted since: their TYPE is `none`).

        By SCAN when the tracking connection broke; tracking then starts again, for the next
        queue (a fresh name, so nothing of it was written in between). KeysFlushed when
        someone flushed the server since the last call (once per flush).
        """
        if not self._drain():
            names = snapshot.queue_keys(client, queue)
            with contextlib.suppress(redis.RedisError, OSError, TrackingRefused):
                self._connect()
            return names
        if self._flushed:
            self._flushed = False
            raise KeysFlushed
        wanted = queue.name.encode()
        group = self._seen.get(wanted[:len(self._marker) + QUEUE_DIGITS], set())
        # Strict decoding, as a decoding client's SCAN: a name that is not UTF-8 errs the vector.
        return sorted(name.decode() for name in group if wanted in name)

    def flushed(self) -> bool:
        """Whether someone flushed the server since the last call or `keys_of` (as of now: the
        invalidations sent so far are read first). A flush after the keys were listed, before
        they were read, shows only here."""
        self._drain()
        flushed, self._flushed = self._flushed, False
        return flushed

    def foreign_writes(self) -> list[str]:
        """Names outside this run written since the last call (as of the last drain), sorted;
        on a shared server they may be another client's."""
        names, self._foreign = self._foreign, set()
        return sorted(name.decode(errors="backslashreplace") for name in names)

    def sweep(self, client: redis.Redis, timeout: float | None = None) -> int | None:
        """UNLINK every name of this run seen since tracking began; the count, or None when
        tracking broke at some point (a write may have been missed: the caller must scan).
        `timeout` bounds the wait for the last invalidations (after a signal, say)."""
        if timeout is not None and self._connection is not None:
            with contextlib.suppress(OSError, AttributeError):
                # redis-py keeps the socket's timeout from the pool's options; after a signal
                # the last drain must not wait out the 30 s meant for a busy server.
                self._connection._sock.settimeout(timeout)  # type: ignore[attr-defined]
        if not self.complete or not self._drain():
            return None
        return snapshot.unlink_names(client, sorted(self._loose.union(*self._seen.values())))

    def close(self) -> None:
        """Close the tracking connection (tracking ends with it)."""
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.disconnect()
            self._connection = None
