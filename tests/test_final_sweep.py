"""The final sweep of `Run.close` on a server it shares (`--redis url:`): it deletes the keys
under the run's own queue-name prefix and no other (glob characters in the run id included), on
every master of a Redis Cluster, and tolerates a server that is gone.
"""

from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import replace

import pytest
from shared_server_helpers import db_url

from conformance import servers
from conformance.core.queues import QueueNames
from conformance.run.session import Run
from conformance.run.spec import RunOptions
from tests.fault_helpers import cluster_binary

#: The database of the module's server the sweeps run on.
DB_SWEEP = 11


@pytest.mark.parametrize("run_id", [None, "a*b?[c]", "back\\slash"],
                         ids=["random-id", "glob-id", "backslash-id"])
def test_final_sweep_deletes_this_runs_keys_only(own_server: servers.ServerInfo,
                                                 run_id: str | None) -> None:
    """Run.close on a url: server deletes keys under its own queue-name prefix, and no other."""
    client = servers.client_for(own_server, db=DB_SWEEP)
    run = Run(RunOptions(redis=f"url:{db_url(own_server, DB_SWEEP)}"))
    if run_id is not None:
        run.names = QueueNames(run_id)
    prefix = f"bmqc-{run.names.run_id}-"
    other_id = QueueNames().run_id
    ours = [f"bull:{prefix}000001:wait", f"emq:{{{prefix}000002}}:meta", f"{prefix}",
            *(f"bull:{prefix}{n:06d}:{n}" for n in range(2500))]  # more than one UNLINK batch
    theirs = [f"bull:bmqc-{other_id}-000001:wait", f"bull:{run.names.run_id}-000001:wait",
              f"bull:bmqc-{run.names.run_id}0-000001:wait", f"bmqc-{run.names.run_id}",
              "bull:bmqc-axxbyc-000001:wait", "bull:bmqc-back-slash-000001:wait",
              "bull:bmqc-backslash-000001:wait"]
    try:
        run.start()
        assert run.server is not None and not run.server.owned
        pipe = client.pipeline(transaction=False)
        for key in ours:
            pipe.set(key, "ours")
        for key in theirs:
            pipe.set(key, "theirs")
        pipe.execute()
        run.close()
        assert client.exists(*ours) == 0
        assert client.exists(*theirs) == len(theirs)
        assert {client.get(k) for k in theirs} == {"theirs"}
    finally:
        run.close()
        client.unlink(*ours, *theirs)
        client.close()


def test_final_sweep_tolerates_a_dead_server(own_server: servers.ServerInfo) -> None:
    """A server gone before close(): nothing to clean, and close() neither raises nor hangs."""
    run = Run(RunOptions(redis=f"url:{db_url(own_server, DB_SWEEP)}"))
    run.start()
    assert run.server is not None
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    run.server = replace(run.server, url=f"redis://127.0.0.1:{port}/{DB_SWEEP}")
    started = time.perf_counter()
    run.close()
    assert time.perf_counter() - started < 5


def test_final_sweep_covers_every_cluster_node() -> None:
    """On a url: Redis Cluster the sweep reaches the run's keys on every master, in any slot."""
    with contextlib.ExitStack() as stack:
        info = stack.enter_context(servers.provision(f"cluster:{cluster_binary()}"))
        run = Run(RunOptions(profile="echomq", redis=f"url:{info.url}"))
        stack.callback(run.close)
        run.start()
        assert run.server is not None and run.server.cluster and not run.server.owned
        client = servers.client_for(run.server)
        stack.callback(client.close)
        prefix = f"bmqc-{run.names.run_id}-"
        ours = [f"emq:{{{prefix}{n:06d}}}:wait" for n in range(300)]
        theirs = [f"emq:{{bmqc-{QueueNames().run_id}-{n:06d}}}:wait" for n in range(30)]
        stack.callback(lambda: client.unlink(*ours, *theirs))
        for key in [*ours, *theirs]:
            client.set(key, "x")
        masters = {client.get_node_from_key(key).name for key in ours}  # type: ignore[attr-defined]
        assert len(masters) == 3, masters
        run.close()
        assert client.exists(*ours) == 0
        assert client.exists(*theirs) == len(theirs)
