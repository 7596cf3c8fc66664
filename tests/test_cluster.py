"""Redis Cluster and capabilities: one hash slot per queue under tagged profiles, the untagged
profile refused in words, `needs:` skips, and the whole suite through a real 3-master cluster."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from conformance.core.queues import QueueRef
from conformance.core.resources import vectors_dir
from conformance.run.verdict import judge
from conformance.servers import ServerInfo, capabilities, provision
from conformance.state.snapshot import Snapshot
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.keys import BULLMQ, ECHOMQ, custom_profile
from tests.cli_helpers import cli
from tests.fault_helpers import cluster_binary

VECTORS_DIR = vectors_dir()


def _server(version: str, engine: str = "redis") -> ServerInfo:
    return ServerInfo("local", engine, version, "redis://127.0.0.1:1/0", True, "",
                      redis_version=version if engine == "redis" else "7.2.4")


# --- slots and needs, no server ---------------------------------------------------------------


def test_untagged_profile_is_not_cluster_safe_and_says_why() -> None:
    reason = capabilities.not_cluster_safe(BULLMQ)
    assert reason is not None
    assert "not cluster-safe" in reason and "CROSSSLOT" in reason and "--profile echomq" in reason
    # The slots it names are Redis Cluster's CRC16 slots of those keys.
    assert f"bull:q:wait -> slot {capabilities.slot_of('bull:q:wait')}" in reason
    assert capabilities.slot_of("bull:q:wait") != capabilities.slot_of("bull:q:meta")
    assert capabilities.not_cluster_safe(custom_profile("bull")) is not None


def test_tagged_profiles_keep_every_key_in_one_slot() -> None:
    for profile in (ECHOMQ, custom_profile("{bull}"), custom_profile("{bull}", hash_tag=True)):
        assert capabilities.not_cluster_safe(profile) is None, profile
        assert len(set(capabilities.profile_slots(profile).values())) == 1
    # Only the first {...} is hashed: a braced job id stays in the queue's slot.
    assert capabilities.slot_of("emq:{q}:{other}-7") == capabilities.slot_of("emq:{q}:wait")
    assert capabilities.slot_of("{other}-7") != capabilities.slot_of("emq:{q}:wait")


def test_unmet_needs_are_reasons() -> None:
    redis70, valkey = _server("7.0.15"), _server("8.0.1", "valkey")
    assert capabilities.unmet(("hash-tag",), ECHOMQ, redis70) is None
    assert "needs hash-tag" in str(capabilities.unmet(("hash-tag",), BULLMQ, redis70))
    assert capabilities.unmet(("redis>=7.0",), BULLMQ, redis70) is None
    assert capabilities.unmet(("redis>=7.0.15",), BULLMQ, redis70) is None
    missing = capabilities.unmet(("redis>=7.2",), BULLMQ, redis70)
    assert missing == "needs redis>=7.2: the server is redis 7.0.15 (Redis 7.0.15)"
    # Valkey counts by the Redis version it is compatible with (7.2.4), not by its own (8.0.1).
    assert capabilities.unmet(("redis>=7.2",), BULLMQ, valkey) is None
    assert capabilities.unmet(("redis>=8",), BULLMQ, valkey) is not None
    assert "does not know" in str(capabilities.unmet(("teleport",), BULLMQ, redis70))


def test_keys_outside_the_queue_slot_fail_a_one_slot_vector() -> None:
    queue = QueueRef(ECHOMQ, "bmqc-test-000001", versions.CURRENT)
    vector = Vector("cluster/x", "d", (), {}, (), (), {}, None, None, Path("x.yaml"), 1,
                    ("hash-tag",), True)
    stray = "emq:bmqc-test-000001:wait"  # the tag forgotten: another slot
    snap = Snapshot({}, (stray,), (stray,))
    diff = judge(vector, [], snap, queue)
    assert any(stray in line and "CROSSSLOT" in line for line in diff), diff
    inside = Snapshot({"wait": {"list": ["1"]}}, (), ())
    slot_lines = [d for d in judge(vector, [], inside, queue) if "CROSSSLOT" in d]
    assert slot_lines == []


def test_a_missing_capability_skips_with_the_reason(tmp_path: Path, redis_url: str) -> None:
    directory = tmp_path / "vectors"
    directory.mkdir()
    shutil.copy(VECTORS_DIR / "schema.json", directory / "schema.json")
    doc = yaml.safe_load((VECTORS_DIR / "next-wake.yaml").read_text())
    doc["tests"][0]["needs"] = ["redis>=99.0"]
    first = doc["tests"][0]["id"]
    (directory / "next-wake.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    report = tmp_path / "r.json"
    proc = cli("run", "-q", "--redis", redis_url, "--vectors", str(directory), "--examples", "0",
               "--report-json", str(report))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    results = {r["id"]: r for r in json.loads(report.read_text())["results"]}
    assert results[first]["outcome"] == "skipped"
    # "the server is redis 7.0.15 (Redis 7.0.15)", or valkey 8.1.8 (Redis 7.2.4)
    assert re.fullmatch(r"needs redis>=99\.0: the server is (redis|valkey) [\d.]+ \(Redis [\d.]+\)",
                        results[first]["message"]), results[first]["message"]
    assert ".until-" not in first  # a vector the default protocol (6.7.0) runs
    others = {i: r for i, r in results.items() if i != first}
    assert all(r["outcome"] == "passed" for i, r in others.items() if ".until-" not in i)
    # The older protocol ranges are skipped for their range, not for a capability.
    assert all(r["outcome"] == "skipped" and "not the protocol judged (6.7.0)" in r["message"]
               for i, r in others.items() if ".until-" in i)


def test_cluster_refusals_are_usage_errors_in_words() -> None:
    proc = cli("run", "--redis", "cluster")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "not cluster-safe" in proc.stderr
    proc = cli("run", "--redis", "cluster", "--profile", "echomq", "--candidate", "bullmq-py")
    assert proc.returncode == 2 and "cannot run on Redis Cluster" in proc.stderr
    proc = cli("run", "--prefix", "a:b")
    assert proc.returncode == 2 and "--prefix" in proc.stderr
    proc = cli("mutants", "--redis", "cluster")
    assert proc.returncode == 2 and "supported by `run` only" in proc.stderr


# --- a real cluster -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[ServerInfo]:
    # redis-cli or valkey-cli, beside the binary, creates the cluster.
    with provision(f"cluster:{cluster_binary()}") as info:
        yield info


@pytest.mark.slow
def test_every_vector_through_a_cluster_client(cluster: ServerInfo, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    proc = cli("run", "-q", "--redis", f"url:{cluster.url}", "--profile", "echomq",
               "--examples", "5", "--report-json", str(report))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "a cluster node" in proc.stdout
    doc = json.loads(report.read_text())
    assert doc["redis"]["cluster"] is True
    assert doc["totals"]["failed"] == doc["totals"]["errored"] == 0
    passed = {r["id"] for r in doc["results"] if r["outcome"] == "passed"}
    assert {"cluster/braced-job-id", "cluster/lock-and-retry", "properties/state-machine"} <= passed
    assert len(passed) > 250


def test_a_cluster_url_with_the_untagged_profile_is_refused(cluster: ServerInfo) -> None:
    proc = cli("run", "-q", "--redis", f"url:{cluster.url}", "-k", "band-bump")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr
    assert "not cluster-safe" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_cluster_nodes_are_stopped(tmp_path: Path) -> None:
    with provision(f"cluster:{cluster_binary()}") as info:
        assert info.cluster and info.kind == "cluster" and info.owned
        ports = [int(p) for p in info.detail.rsplit("ports ", 1)[1].split(", ")]
        assert len(ports) == 3
    import socket

    for port in ports:
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", port)) != 0, port
