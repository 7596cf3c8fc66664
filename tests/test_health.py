"""`conformance.servers.health`: what the probe calls a server fault, on real servers."""

from __future__ import annotations

import redis

from conformance.servers import health
from reference_impl.keys import PROFILES
from tests.fault_helpers import ServerProcess


def test_a_healthy_server_has_no_problem(server: ServerProcess) -> None:
    client = server.client()
    key = health.probe_key(PROFILES["bullmq"], "r1")
    assert health.problem(client, key, health.identity(client, False)) is None
    assert client.exists(key) == 0, "the probe deletes its key"


def test_the_probe_key_is_a_queue_of_the_run_under_the_profile() -> None:
    assert health.probe_key(PROFILES["bullmq"], "ab12") == "bull:bmqc-ab12-probe:probe"
    assert health.probe_key(PROFILES["echomq"], "ab12") == "emq:{bmqc-ab12-probe}:probe"


class _FlushedBetween(redis.Redis):
    """A connection after whose EVAL another client flushes the script cache."""

    def eval(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
        reply = super().eval(*args, **kwargs)  # type: ignore[arg-type]
        redis.Redis(port=self.connection_pool.connection_kwargs["port"]).script_flush()
        return reply


def test_a_script_flush_between_the_probes_eval_and_evalsha_is_no_fault(
        server: ServerProcess) -> None:
    """Someone else's SCRIPT FLUSH is no fault of the server: EVALSHA's NOSCRIPT after it is
    the right answer (the run loads its scripts again), not a refused probe."""
    client = _FlushedBetween(port=server.port, decode_responses=True)
    key = health.probe_key(PROFILES["bullmq"], "r2")
    assert health.problem(client, key, health.identity(client, False)) is None
    assert client.exists(key) == 0


def test_a_restart_is_told_by_the_run_id(server: ServerProcess) -> None:
    since = health.identity(server.client(), False)
    server.kill()
    server.start()
    fault = health.problem(server.client(), "bull:x:probe", since)
    assert fault is not None and "restarted" in fault


def test_a_dropped_connection_is_told_by_the_client_id(server: ServerProcess) -> None:
    client = server.client()
    since = health.identity(client, False)
    server.client().client_kill_filter(_id=str(since.client_id))
    fault = health.problem(client, "bull:x:probe", since)
    assert fault is not None and "dropped" in fault


def test_another_live_connection_is_no_drop(server: ServerProcess) -> None:
    """A new id while the old connection still lives (a second pooled connection) proves
    nothing."""
    client, other = server.client(), server.client()
    other_id = int(other.client_id())
    since = health.Identity(health.identity(client, False).run_id, other_id)
    assert health.problem(client, "bull:x:probe", since) is None


def test_a_user_allowed_only_the_profile_keys_passes(server: ServerProcess) -> None:
    server.client().acl_setuser("scoped", enabled=True, passwords=["+pw"], keys=["bull:*"],
                                commands=["+@all"])
    scoped = redis.Redis(port=server.port, username="scoped", password="pw")
    key = health.probe_key(PROFILES["bullmq"], "r2")
    assert health.problem(scoped, key, health.identity(scoped, False)) is None


def test_server_states_by_reply() -> None:
    def state(exc: Exception) -> str:
        return health.server_state(exc) or "(none)"

    assert state(redis.exceptions.ReadOnlyError("You can't write")).startswith(
        "the server is a read-only replica")
    assert state(redis.exceptions.OutOfMemoryError("command not allowed")).startswith(
        "the server is out of memory")
    assert state(redis.exceptions.NoPermissionError("no permissions")).startswith(
        "the Redis user lacks a permission")
    busy = health.server_state(redis.ResponseError("BUSY Redis is busy running a script."))
    assert busy is not None and health.is_busy(busy)
    # A script's own error is the candidate's, not the server's.
    assert health.server_state(redis.ResponseError("user_script:1: planted failure")) is None
    assert health.server_state(redis.ResponseError("ERR wrong number of arguments")) is None
