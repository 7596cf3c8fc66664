"""Start a throwaway 3-master Redis Cluster on loopback ports for conformance.servers.

Three `redis-server --cluster-enabled yes` processes are started as our children (through the
same spawner as `local`), joined with `redis-cli --cluster create`, and polled until every
node reports ``cluster_state:ok``. Stopping shuts down exactly those three processes.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import replace

import redis

from conformance.core.errors import InfrastructureError
from conformance.servers.common import (
    Running,
    control_client,
    free_cluster_port,
    one_line,
    tail_lines,
)
from conformance.servers.local import start_process

MASTERS = 3
_CREATE_TIMEOUT = 30.0
_READY_TIMEOUT = 10.0
# Node-to-node timeout: short, since nothing here fails over.
_NODE_ARGS = ("--cluster-enabled", "yes", "--cluster-node-timeout", "5000")


def cli_for(server_binary: str) -> str:
    """The admin CLI that belongs to `server_binary`: `redis-cli` or `valkey-cli` beside it.

    The CLI next to the server binary is preferred, so that a pip shim earlier on PATH (or
    another installation) is not mixed with the server.
    """
    name = "valkey-cli" if "valkey" in os.path.basename(server_binary) else "redis-cli"
    beside = os.path.join(os.path.dirname(os.path.realpath(server_binary)), name)
    if os.access(beside, os.X_OK):
        return beside
    spelled = os.path.join(os.path.dirname(server_binary), name)
    if os.access(spelled, os.X_OK):
        return spelled
    raise InfrastructureError(f"{name} not found beside {server_binary}: it is needed to create "
                              f"the cluster (Debian: apt-get install redis-tools)")


def start_cluster(server_binary: str) -> Running:
    """Start MASTERS cluster-enabled nodes of `server_binary` and join them into one cluster."""
    cli = cli_for(server_binary)
    nodes: list[Running] = []
    try:
        for _ in range(MASTERS):
            nodes.append(start_process(server_binary, "local", extra_args=_NODE_ARGS,
                                        pick_port=free_cluster_port))
        ports = [_port(node) for node in nodes]
        _create(cli, ports)
        _await_ok(ports)
    except BaseException:
        _stop_all(nodes)
        raise
    first = nodes[0].info
    detail = (f"{MASTERS}-master cluster of {server_binary} on 127.0.0.1 ports "
              f"{', '.join(map(str, ports))}")
    info = replace(first, kind="cluster", detail=detail, cluster=True)
    return Running(info, stop=lambda: _stop_all(nodes))


def _port(node: Running) -> int:
    port = redis.connection.parse_url(node.info.url)["port"]
    assert isinstance(port, int)
    return port


def _create(cli: str, ports: list[int]) -> None:
    argv = [cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
            "--cluster-replicas", "0", "--cluster-yes"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_CREATE_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InfrastructureError(f"{cli} --cluster create failed: {one_line(exc)}") from exc
    if done.returncode != 0:
        output = tail_lines(done.stdout + done.stderr)
        raise InfrastructureError(f"{cli} --cluster create exited {done.returncode}: {output}")


def _await_ok(ports: list[int]) -> None:
    deadline = time.monotonic() + _READY_TIMEOUT
    pending = list(ports)
    while pending:
        client = control_client(pending[0])
        try:
            text = str(client.execute_command("CLUSTER", "INFO"))
            state = dict(line.split(":", 1) for line in text.split() if ":" in line).get(
                "cluster_state")
        except redis.RedisError:
            state = None
        finally:
            client.close()
        if state == "ok":
            pending.pop(0)
            continue
        if time.monotonic() > deadline:
            raise InfrastructureError(
                f"cluster node 127.0.0.1:{pending[0]} did not reach cluster_state:ok within "
                f"{_READY_TIMEOUT:.0f} s")
        time.sleep(0.02)


def _stop_all(nodes: list[Running]) -> None:
    errors: list[str] = []
    for node in nodes:
        try:
            node.stop()
        except InfrastructureError as exc:
            errors.append(str(exc))
    if errors:
        raise InfrastructureError("; ".join(errors))
