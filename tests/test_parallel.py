"""Parallel runs (-n, pytest-xdist): the same verdicts as a serial run, one server, and exit 3
with a one-line cause when Redis is not there."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conformance.plugin.hooks import worker_db
from conformance.plugin.items import property_shards
from conformance.servers import ServerInfo
from tests.cli_helpers import cli
from tests.fault_helpers import local_spec


def _verdicts(path: Path) -> list[tuple[str, str]]:
    return sorted((r["id"], r["outcome"]) for r in json.loads(path.read_text())["results"])


@pytest.mark.slow
@pytest.mark.parametrize("redis", ["local", "url"])
def test_parallel_verdicts_equal_serial(tmp_path: Path, redis_url: str, redis: str) -> None:
    spec = redis_url if redis == "url" else local_spec()
    # 30 examples make two properties items, so the area is split across the workers too.
    common = ["run", "-q", "--redis", spec, "--seed", "11", "--examples", "30"]
    serial, parallel = tmp_path / "serial.json", tmp_path / "parallel.json"
    one = cli(*common, "--report-json", str(serial), timeout=600)
    two = cli(*common, "-n", "2", "--report-json", str(parallel), timeout=600)
    assert one.returncode == 0, one.stdout[-2000:] + one.stderr
    assert two.returncode == 0, two.stdout[-2000:] + two.stderr
    assert _verdicts(parallel) == _verdicts(serial)
    ids = {vid for vid, _ in _verdicts(serial)}
    assert {"properties/state-machine-1", "properties/state-machine-2"} <= ids
    assert "bringing up nodes" not in one.stdout
    doc = json.loads(parallel.read_text())
    assert doc["redis"]["kind"] == ("url" if redis == "url" else "local")
    assert doc["totals"]["passed"] > 250


def test_parallel_run_without_redis_is_an_infrastructure_error() -> None:
    proc = cli("run", "-q", "--redis", "url:redis://127.0.0.1:1/0", "-n", "2", "-k", "band-bump")
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == [lines[0]] and "cannot reach Redis at redis://127.0.0.1:1/0" in lines[0]
    assert "Traceback" not in proc.stdout + proc.stderr


def test_worker_databases() -> None:
    owned = ServerInfo("local", "redis", "7.0.15", "redis://127.0.0.1:7/0", True, "")
    users = ServerInfo("url", "redis", "7.0.15", "redis://127.0.0.1:7/4", False, "")
    cluster = ServerInfo("cluster", "redis", "7.0.15", "redis://127.0.0.1:7/0", True, "", True)
    assert [worker_db(owned, i) for i in (0, 1, 14, 15)] == [1, 2, 15, 1]
    assert worker_db(users, 3) is None and worker_db(cluster, 0) is None


def test_property_shards_split_examples_and_seeds() -> None:
    assert property_shards(25, 7) == [("properties/state-machine", 25, 7)]
    assert property_shards(3, 7) == [("properties/state-machine", 3, 7)]
    assert property_shards(60, 7) == [("properties/state-machine-1", 20, 7),
                                      ("properties/state-machine-2", 20, 8),
                                      ("properties/state-machine-3", 20, 9)]
    assert property_shards(26, 0) == [("properties/state-machine-1", 13, 0),
                                      ("properties/state-machine-2", 13, 1)]


@pytest.mark.parametrize("redis", ["local", "url"])
def test_a_note_says_when_n_is_slower_than_a_serial_run(redis_url: str, redis: str) -> None:
    """On a server the suite started a scripts candidate runs in batches, with properties in
    child processes; -n gives both up, so on few cores the header says a serial run is faster.
    On a `url:` server every run is one vector at a time, and -n may pay: no note."""
    spec = local_spec() if redis == "local" else redis_url
    proc = cli("run", "-q", "--redis", spec, "-n", "2", "--examples", "0", "-k",
               "band-bump and 4097")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    notes = [line for line in proc.stdout.splitlines() if line.startswith("note: -n 2 ")]
    if redis == "local" and (os.cpu_count() or 1) <= 4:
        assert notes == [notes[0]] and "a serial run of this candidate" in notes[0], proc.stdout
    else:
        assert notes == [], proc.stdout
