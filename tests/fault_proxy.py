"""A loopback TCP proxy for the network-fault tests: it stands between a run and a redis-server
and adds what a real network does to a link: latency, connection resets, a reset storm, and a
blackhole (bytes accepted and held, nothing forwarded).

It runs an asyncio loop in one thread of its own; the test thread drives it through the
methods below, each safe to call from any thread. It listens on 127.0.0.1 only, forwards only
to a port of 127.0.0.1, and is bounded: at most `max_connections` at once (more are reset at
once), and at most `_QUEUE_CHUNKS` chunks held per direction (the reader then stops reading,
so TCP's own window holds back the sender, as on a slow link).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import socket
import struct
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

#: When a reset lands: at once (a connection idle then is made again by redis-py as it is
#: handed out, unseen), or as the connection's next reply arrives from the server, which is
#: then lost: the command ran, and the client sees the reset while it waits for the reply.
ResetWhen = Literal["now", "next_reply"]

_T = TypeVar("_T")
LOOPBACK = "127.0.0.1"
#: Chunks held per direction before the reader stops reading (backpressure, not memory).
_QUEUE_CHUNKS = 256
_READ_SIZE = 65536
#: How long a control call waits for the proxy's loop to act on it.
_CONTROL_TIMEOUT_S = 10.0
#: A closed chunk queue's end marker.
_EOF = b""


@dataclass(eq=False)
class _Link:
    """One proxied connection: the client's side, the server's side, and their pumps."""

    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    #: Reset as the next reply arrives (`ResetWhen` "next_reply").
    armed: bool = False

    def reset(self) -> None:
        """Abort both sides with an RST (SO_LINGER 0), as a middlebox dropping the flow does."""
        for writer in (self.client, self.server):
            sock = writer.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        for task in self.tasks:
            task.cancel()


class FaultProxy:
    """A TCP proxy from a free port of 127.0.0.1 to `127.0.0.1:target_port`.

    `latency` is added to each direction (one way), so a round trip costs twice it. Use as a
    context manager, or `start()` and `stop()`.
    """

    def __init__(self, target_port: int, *, latency: float = 0.0,
                 max_connections: int = 64) -> None:
        self.target_port = target_port
        self.max_connections = max_connections
        self._latency = latency
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy",
                                        daemon=True)
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self._flowing: asyncio.Event | None = None  # cleared: blackholed
        self._accepted = 0
        self._resets = 0
        self._held = 0
        self.port = 0

    # ------------------------------------------------------------------------------ lifecycle

    def start(self) -> FaultProxy:
        """Listen on a free port of 127.0.0.1 (`port`, `url`) and start forwarding."""
        self._thread.start()
        self._call(self._listen())
        return self

    def stop(self) -> None:
        """Reset every connection, stop listening, and end the loop's thread."""
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_CONTROL_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """`redis://127.0.0.1:<port>/0`, the proxied server's database 0."""
        return f"redis://{LOOPBACK}:{self.port}/0"

    # -------------------------------------------------------------------------------- faults

    @property
    def latency(self) -> float:
        """Seconds added to each direction of every connection."""
        return self._latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("latency must be >= 0")
        self._latency = seconds  # a float store: read by the loop at each chunk

    @property
    def accepted(self) -> int:
        """Connections accepted since the start."""
        return self._accepted

    @property
    def resets(self) -> int:
        """Connections reset since the start (by `reset_all`, a storm or a blackhole's end)."""
        return self._resets

    def held(self) -> int:
        """Chunks stopped by a blackhole now (at most one per direction of a connection; the
        rest wait behind them): > 0 once someone sent into the hole."""
        return self._held

    def open_connections(self) -> int:
        """Connections open now."""
        return self._call(self._count())

    def reset_all(self, when: ResetWhen = "now") -> int:
        """Reset (RST) every open connection, both sides, `when` it says; return how many
        connections were reset (`now`) or armed to be (`next_reply`: see `resets`)."""
        return self._call(self._reset_all(when))

    def reset_storm(self, every: float, duration: float, when: ResetWhen = "next_reply"
                    ) -> concurrent.futures.Future[int]:
        """Reset every open connection (`when` it says) every `every` seconds for `duration`
        seconds; the future holds how many were reset or armed."""
        if every <= 0 or duration < 0:
            raise ValueError("every must be > 0 and duration >= 0")
        return asyncio.run_coroutine_threadsafe(self._storm(every, duration, when), self._loop)

    def blackhole(self, seconds: float, then: Literal["resume", "reset"] = "resume"
                  ) -> concurrent.futures.Future[None]:
        """From now, accept connections and read their bytes but forward nothing, either way,
        for `seconds`; then forward what was held (`resume`) or reset every connection
        (`reset`). The future is done when the link is back."""
        self._call(self._hold())
        return asyncio.run_coroutine_threadsafe(self._release_after(seconds, then), self._loop)

    # ------------------------------------------------------------------------ the loop's side

    def _call(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(_CONTROL_TIMEOUT_S)

    async def _listen(self) -> None:
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server = await asyncio.start_server(self._accept, LOOPBACK, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = [task for link in self._links for task in link.tasks]
        await self._reset_all()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _count(self) -> int:
        return len(self._links)

    async def _reset_all(self, when: ResetWhen = "now") -> int:
        if when == "next_reply":
            for link in self._links:
                link.armed = True
            return len(self._links)
        links, self._links = list(self._links), set()
        for link in links:
            link.reset()
        self._resets += len(links)
        return len(links)

    async def _storm(self, every: float, duration: float, when: ResetWhen) -> int:
        loop = asyncio.get_running_loop()
        end, total = loop.time() + duration, 0
        while loop.time() < end:
            total += await self._reset_all(when)
            await asyncio.sleep(min(every, max(end - loop.time(), 0)))
        return total

    async def _hold(self) -> None:
        assert self._flowing is not None
        self._flowing.clear()

    async def _release_after(self, seconds: float, then: str) -> None:
        assert self._flowing is not None
        await asyncio.sleep(seconds)
        if then == "reset":
            await self._reset_all()
        self._flowing.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._accepted += 1
        if len(self._links) >= self.max_connections:
            _Link(writer, writer).reset()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(LOOPBACK, self.target_port)
        except OSError:
            _Link(writer, writer).reset()  # the server is down: the client sees a reset
            return
        link = _Link(writer, up_writer)
        self._links.add(link)
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(_QUEUE_CHUNKS)
            link.tasks.append(asyncio.create_task(self._read(source, queue)))
            link.tasks.append(asyncio.create_task(self._deliver(link, queue, sink,
                                                                to_client=sink is writer)))

    async def _read(self, source: asyncio.StreamReader,
                    queue: asyncio.Queue[tuple[float, bytes]]) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                data = await source.read(_READ_SIZE)
                # The due time is fixed when the bytes arrive: a steady latency delays each
                # chunk by it once, however many are in flight (a pipe, not a queue).
                await queue.put((loop.time() + self._latency, data))
                if not data:
                    return
        except (ConnectionError, OSError):
            await queue.put((loop.time(), _EOF))  # a reset from that side: end the link

    async def _deliver(self, link: _Link, queue: asyncio.Queue[tuple[float, bytes]],
                       sink: asyncio.StreamWriter, *, to_client: bool) -> None:
        assert self._flowing is not None
        loop = asyncio.get_running_loop()
        try:
            while True:
                due, data = await queue.get()
                if not self._flowing.is_set():
                    self._held += 1
                    try:
                        await self._flowing.wait()
                    finally:
                        self._held -= 1
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                if not data:
                    # One side closed: close the link (after what it sent was delivered, as
                    # TCP delivers a closed socket's unsent bytes).
                    self._links.discard(link)
                    for writer in (link.client, link.server):
                        writer.close()
                    return
                if to_client and link.armed:
                    self._links.discard(link)
                    self._resets += 1
                    link.reset()  # cancels this task too
                    return
                sink.write(data)
                await sink.drain()
        except (ConnectionError, OSError):
            if link in self._links:
                self._links.discard(link)
                link.reset()
