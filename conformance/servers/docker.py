"""Start Redis in Docker containers (via testcontainers) for conformance.servers."""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import Any, cast

from conformance.core.errors import InfrastructureError
from conformance.servers.common import (
    PortInUse,
    Running,
    ServerInfo,
    await_server,
    engine_of,
    one_line,
    redis_version_of,
    retry_ports,
)

#: Where the Docker client looks for an engine when ``DOCKER_HOST`` is unset (on POSIX).
DEFAULT_SOCKET = "/var/run/docker.sock"


def docker_answers() -> bool:
    """True when a Docker engine (``DOCKER_HOST`` or the default socket) answers within 2 s."""
    if not os.environ.get("DOCKER_HOST") and os.name == "posix" \
            and not os.path.exists(DEFAULT_SOCKET):
        return False  # nothing to ask, and importing the Docker client costs 0.1 s of start-up
    try:
        import docker

        with contextlib.closing(docker.from_env(timeout=2)) as client:
            return bool(client.ping())
    except Exception:
        return False


def start_docker(image: str) -> Running:
    try:
        import docker
        from testcontainers.core.container import DockerContainer
    except ImportError as exc:
        raise InfrastructureError(f"docker support is not installed: {exc}") from exc
    try:
        client = docker.from_env()
    except docker.errors.DockerException as exc:
        raise InfrastructureError(f"no Docker engine answers: {one_line(exc)}") from exc
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        try:
            client.images.pull(image)
        except docker.errors.DockerException as exc:
            reason = one_line(getattr(exc, "explanation", None) or exc)
            raise InfrastructureError(
                f"docker image {image!r} is not available and could not be pulled ({reason}): "
                f"run `docker pull {image}`, or build an image and pass --redis docker:IMAGE "
                f"or set BULLMQ_CONFORMANCE_IMAGE"
            ) from exc
    except docker.errors.DockerException as exc:
        raise InfrastructureError(f"docker: {one_line(exc)}") from exc
    finally:
        client.close()
    what = f"docker container of {image}"
    return retry_ports(what, lambda port: _spawn_container(DockerContainer(image), what, port))


def _spawn_container(container: Any, what: str, port: int) -> Running:
    # syslog-ident is inert while syslog is off, and CONFIG GET proves the server is ours.
    ident = f"bullmq-conformance-{uuid.uuid4().hex}"
    container.with_command(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                            "--save", "", "--appendonly", "no", "--syslog-ident", ident])
    # The Docker bridge may be disabled, so use the host network; network=None stops
    # testcontainers from adding a network of its own, which Docker rejects in host mode.
    container.with_kwargs(network_mode="host", network=None)
    try:
        container.start()
        info = await_server(
            port, alive=lambda: _container_alive(container),
            output=lambda: b"".join(container.get_logs()).decode(errors="replace"),
            marker=("syslog-ident", ident), what=what,
        )
    except BaseException as exc:
        with contextlib.suppress(Exception):
            container.stop()
        if isinstance(exc, InfrastructureError | PortInUse) or not isinstance(exc, Exception):
            raise
        text = one_line(exc)
        if "ryuk" in text.lower():
            text += "; set TESTCONTAINERS_RYUK_DISABLED=true where the Ryuk image cannot be pulled"
        raise InfrastructureError(f"{what} could not start: {text}") from exc

    def stop() -> None:
        try:
            container.stop()  # testcontainers removes the container, forcibly
        except Exception as exc:
            raise InfrastructureError(f"could not remove {what}: {one_line(exc)}") from exc

    engine, version = engine_of(info)
    detail = f"{what}, container {container.get_wrapped_container().short_id}"
    url = f"redis://127.0.0.1:{port}/0"
    info_ = ServerInfo("docker", engine, version, url, True, detail,
                       redis_version=redis_version_of(info))
    return Running(info_, stop)


def _container_alive(container: Any) -> bool:
    container.reload()
    return cast(str, container.status) in ("created", "running")
