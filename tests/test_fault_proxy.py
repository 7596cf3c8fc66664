"""The loopback fault proxy of the network-fault tests (`tests/fault_proxy.py`), against a real
redis-server: it forwards, adds the latency it is given (and no more), resets connections so
that redis-py sees a ConnectionError, storms, blackholes, and stays within its bounds."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.fault_helpers import ServerProcess, wait_until
from tests.fault_proxy import FaultProxy

#: How long a test waits for what the proxy or the server does next.
WAIT_S = 5.0


@pytest.fixture(scope="module")
def target() -> Iterator[ServerProcess]:
    """A redis-server of this module's own (the tests count its clients)."""
    with ServerProcess() as proc:
        yield proc


@pytest.fixture
def proxy(target: ServerProcess) -> Iterator[FaultProxy]:
    with FaultProxy(target.port) as running:
        yield running


def through(proxy: FaultProxy, **kwargs: Any) -> redis.Redis:
    """A client through the proxy that never retries (a fault must reach the test)."""
    options: dict[str, Any] = {"retry": Retry(NoBackoff(), 0), "socket_timeout": 5,
                               "decode_responses": True, **kwargs}
    return redis.Redis(port=proxy.port, **options)


def ping_ms(client: redis.Redis, count: int = 9) -> float:
    """The median round trip of `count` PINGs on one connection, in milliseconds."""
    client.ping()  # connect (and say HELLO) first
    times = []
    for _ in range(count):
        start = time.perf_counter()
        client.ping()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def test_it_forwards_both_ways_on_loopback_only(proxy: FaultProxy) -> None:
    client = through(proxy)
    assert client.set("proxy-test:k", "v") and client.get("proxy-test:k") == "v"
    client.delete("proxy-test:k")
    assert proxy.url == f"redis://127.0.0.1:{proxy.port}/0"
    assert proxy.accepted == 1 and proxy.open_connections() == 1
    client.close()


def test_latency_is_added_each_way_and_is_a_pipe_not_a_queue(proxy: FaultProxy) -> None:
    client = through(proxy)
    assert ping_ms(client) < 15  # no latency: loopback
    proxy.latency = 0.020
    assert 40 <= ping_ms(client) < 70  # 20 ms there, 20 ms back
    # 200 pipelined PINGs are in flight together: they cost one round trip, not 200.
    pipe = client.pipeline(transaction=False)
    for _ in range(200):
        pipe.ping()
    start = time.perf_counter()
    assert all(pipe.execute())
    assert time.perf_counter() - start < 0.2
    proxy.latency = 0.0
    assert ping_ms(client) < 15
    with pytest.raises(ValueError):
        proxy.latency = -1
    client.close()


def blpop_in_flight(client: redis.Redis, seconds: float = 5) -> list[BaseException | None]:
    """Start `BLPOP` of a key that never fills on `client`, in a thread; the list gets what
    it raised (None: it returned). Returns once the server has it blocked."""
    outcome: list[BaseException | None] = []

    def block() -> None:
        try:
            client.blpop(["proxy-test:never"], timeout=seconds)
            outcome.append(None)
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    threading.Thread(target=block, daemon=True).start()
    return outcome


def blocked_clients(direct: redis.Redis) -> int:
    return int(direct.info("clients")["blocked_clients"])


def test_a_reset_is_a_connection_error_to_redis_py_and_the_server_drops_the_client(
        proxy: FaultProxy, target: ServerProcess) -> None:
    direct = target.client()
    before = len(direct.client_list())
    client = through(proxy, socket_timeout=10)
    outcome = blpop_in_flight(client)
    wait_until(lambda: blocked_clients(direct) == 1, None, "the BLPOP to block", WAIT_S)
    assert proxy.reset_all() == 1
    wait_until(outcome.__len__, None, "the BLPOP to end", WAIT_S)
    assert isinstance(outcome[0], redis.ConnectionError), outcome
    assert "reset" in str(outcome[0]).lower()  # an RST, not a clean close
    assert proxy.resets == 1 and proxy.open_connections() == 0
    # The server side was reset too: its client is gone, not left blocked.
    wait_until(lambda: len(direct.client_list()) == before and blocked_clients(direct) == 0,
               None, "the server to drop the client", WAIT_S)
    assert client.ping()  # a new connection goes through
    client.close()
    direct.close()


def test_an_idle_pooled_connection_that_was_reset_is_made_again_by_redis_py(
        proxy: FaultProxy) -> None:
    # Why the network tests reset connections while commands are in flight: redis-py checks
    # a pooled connection as it hands it out and quietly connects again when it was reset.
    client = through(proxy)
    client.ping()
    assert proxy.reset_all() == 1
    assert client.ping() and proxy.accepted == 2
    client.close()


def test_a_reset_storm_resets_again_and_again_then_ends(
        proxy: FaultProxy, target: ServerProcess) -> None:
    direct = target.client()
    client = through(proxy, socket_timeout=5)
    client.ping()
    storm = proxy.reset_storm(every=0.1, duration=1.0, when="now")
    errors = 0
    while not storm.done():
        outcome = blpop_in_flight(client, seconds=1)
        wait_until(outcome.__len__, None, "the BLPOP to end", WAIT_S)
        errors += isinstance(outcome[0], redis.ConnectionError)
    assert storm.result() >= 3 and errors >= 3, (storm.result(), errors)
    assert client.ping()  # the storm is over
    wait_until(lambda: blocked_clients(direct) == 0, None, "no blocked client", WAIT_S)
    client.close()
    direct.close()


def test_a_reset_at_the_next_reply_lands_after_the_command_ran(
        proxy: FaultProxy, target: ServerProcess) -> None:
    client = through(proxy)
    client.ping()
    assert proxy.reset_all(when="next_reply") == 1
    assert proxy.resets == 0  # armed, not reset yet
    with pytest.raises(redis.ConnectionError) as caught:
        client.set("proxy-test:ran", "yes")
    assert "reset" in str(caught.value).lower()
    direct = target.client()
    assert direct.get("proxy-test:ran") == "yes"  # the server ran it; the reply was lost
    direct.delete("proxy-test:ran")
    assert proxy.resets == 1 and client.ping()  # a new connection is not armed
    direct.close()
    client.close()


def test_a_storm_at_next_replies_loses_a_reply_of_each_connection_it_finds(
        proxy: FaultProxy) -> None:
    client = through(proxy)
    client.ping()
    storm = proxy.reset_storm(every=0.05, duration=0.6)
    errors = 0
    while not storm.done():
        try:
            client.ping()
        except redis.ConnectionError:
            errors += 1
        time.sleep(0.01)  # a pace: the storm arms the connection made since
    assert errors >= 3 and proxy.resets == errors, (errors, proxy.resets)
    assert client.ping()
    client.close()


def test_a_blackhole_holds_the_bytes_then_resumes(proxy: FaultProxy) -> None:
    client = through(proxy, socket_timeout=10)
    client.ping()
    held = proxy.blackhole(1.0)
    start = time.perf_counter()
    assert client.ping()  # sent into the hole, answered when it ends
    elapsed = time.perf_counter() - start
    assert 0.9 <= elapsed < 3, elapsed
    held.result(5)
    # A new connection during a blackhole is accepted but answered by nothing.
    proxy.blackhole(0.5)
    quick = through(proxy, socket_timeout=0.2)
    with pytest.raises(redis.TimeoutError):
        quick.ping()
    quick.close()
    client.close()


def test_a_blackhole_that_ends_in_a_reset(proxy: FaultProxy) -> None:
    client = through(proxy, socket_timeout=10)
    client.ping()
    ended = proxy.blackhole(0.5, then="reset")
    with pytest.raises(redis.ConnectionError):
        client.ping()
    ended.result(5)
    assert client.ping()
    client.close()


def test_a_client_that_leaves_during_a_blackhole_still_has_its_bytes_delivered(
        proxy: FaultProxy, target: ServerProcess) -> None:
    # As TCP delivers a closed socket's unsent bytes once the path is back.
    sock = socket.create_connection(("127.0.0.1", proxy.port))
    sock.sendall(b"PING\r\n")
    assert sock.recv(64) == b"+PONG\r\n"
    ended = proxy.blackhole(0.5)
    sock.sendall(b"SET proxy-test:late delivered\r\n")
    sock.close()
    ended.result(5)
    direct = target.client()
    wait_until(lambda: direct.get("proxy-test:late") == "delivered", None,
               "the late SET to be delivered", WAIT_S)
    direct.delete("proxy-test:late")
    direct.close()


def test_connections_past_the_bound_are_reset(target: ServerProcess) -> None:
    with FaultProxy(target.port, max_connections=2) as proxy:
        first, second, third = (through(proxy) for _ in range(3))
        assert first.ping() and second.ping()
        with pytest.raises(redis.ConnectionError):
            third.ping()
        for client in (first, second, third):
            client.close()


def test_a_server_that_is_down_is_a_connection_error() -> None:
    down = ServerProcess()  # a free port, never started
    with FaultProxy(down.port) as proxy, pytest.raises(redis.ConnectionError):
        through(proxy).ping()
    down.stop()


def test_stop_closes_the_port_and_ends_the_thread(target: ServerProcess) -> None:
    before = {thread.ident for thread in threading.enumerate()}
    proxy = FaultProxy(target.port).start()
    client = through(proxy)
    client.ping()
    port = proxy.port
    proxy.stop()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    assert {thread.ident for thread in threading.enumerate()} <= before
    with pytest.raises(redis.ConnectionError):
        client.ping()
    client.close()
    proxy.stop()  # twice is harmless
