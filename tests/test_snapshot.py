"""The snapshot reader (one script call per snapshot): every Redis type in the vector form,
scores exactly as Redis formats them, expiries, undecodable bytes, and the batch's read and
delete of a whole run's keys. Expected forms are written by hand from what the test wrote."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
import redis

from conformance.core.queues import glob_escape
from conformance.servers import ServerInfo, client_for
from conformance.state import snapshot


@pytest.fixture
def client(redis_server: ServerInfo) -> Iterator[redis.Redis]:
    with client_for(redis_server) as connection:
        yield connection


@pytest.fixture
def base(client: redis.Redis) -> Iterator[str]:
    prefix = f"bmqc-snapshot-test-{secrets.token_hex(4)}"
    yield f"{prefix}:q:"
    names = list(client.scan_iter(match=f"{prefix}*"))
    if names:
        client.unlink(*names)


def test_every_type_in_the_vector_form(client: redis.Redis, base: str) -> None:
    client.set(f"{base}id", "7")
    client.set(f"{base}lock", "token", px=30_000)
    client.rpush(f"{base}wait", "3", "2", "1")
    # 2^53 + 1 is no double: Redis keeps 2^53 and sends it as 17 significant digits.
    client.zadd(f"{base}delayed", {"a": 2**53 + 1, "b": 6962212438016000, "c": -1.5,
                                   "d": float("inf")})
    client.hset(f"{base}1", mapping={"name": "n", "data": "{}", "x": "é"})
    client.xadd(f"{base}events", {"event": "added", "jobId": "1"}, id="1-1")
    client.execute_command("XADD", f"{base}events", "2-1", "event", "x", "event", "y")
    client.sadd(f"{base}marks", "b", "a")
    client.set("elsewhere:" + base, "stray")  # holds no BASE
    names = [f"{base}{s}" for s in ("id", "lock", "wait", "delayed", "1", "events", "marks")]
    snap = snapshot.read_many(client, [([*names, "elsewhere:" + base, f"{base}gone"], base)])[0]
    lock = snap.keys.pop("lock")
    assert 0 < lock["string"]["pttl"] <= 30_000 and lock["string"]["value"] == "token"
    assert snap.keys == {
        "id": {"string": "7"},
        "wait": {"list": ["3", "2", "1"]},
        "delayed": {"zset": [["c", "-1.5"], ["b", "6962212438016000"],
                             ["a", "9007199254740992"], ["d", "inf"]]},
        "1": {"hash": {"name": "n", "data": "{}", "x": "é"}},
        # ids dropped; a repeated field stays repeated
        "events": {"stream": [["event", "added", "jobId", "1"], ["event", "x", "event", "y"]]},
        "marks": {"set": ["a", "b"]},
    }
    assert snap.stray == ("elsewhere:" + base,)
    assert f"{base}gone" in snap.names  # listed, then found missing: no entry


def test_bytes_that_are_not_utf8_raise_as_a_decoding_client_would(client: redis.Redis,
                                                                   base: str) -> None:
    client.set(f"{base}raw", b"\xff\xfe")
    with pytest.raises(UnicodeDecodeError):
        snapshot.read_many(client, [([f"{base}raw"], base)])


def test_a_flushed_script_cache_is_reloaded(client: redis.Redis, base: str) -> None:
    client.set(f"{base}id", "1")
    client.script_flush()
    assert snapshot.read_many(client, [([f"{base}id"], base)])[0].keys == {
        "id": {"string": "1"}}


def test_read_matching_reads_and_deletes_only_what_matches(client: redis.Redis,
                                                           base: str) -> None:
    other = base.replace(":q:", ":other:")
    client.rpush(f"{base}wait", "1")
    client.hset(f"{base}1", "k", "v")
    client.set(f"{other}id", "5")
    stray = f"stray:{secrets.token_hex(4)}"  # lacks the run's prefix: on our server, the
    # candidate's (the pattern of the test's other keys holds it)
    client.set(stray, "1")
    client.script_load(snapshot.READ_KEYS)
    pipe = client.pipeline(transaction=False)
    run_prefix = base.split(":q:")[0]
    snapshot.read_matching(pipe, f"{glob_escape(base)}*", run_prefix)
    read, foreign = snapshot.decode_read_all(pipe.execute()[0])
    assert sorted(read) == [f"{base}1", f"{base}wait"]
    assert stray in foreign and not [name for name in foreign if run_prefix in name]
    snap = snapshot.snapshots(read, [(list(read), base)])[0]
    assert snap.keys == {"1": {"hash": {"k": "v"}}, "wait": {"list": ["1"]}}
    assert client.exists(f"{base}wait", f"{base}1", stray) == 0
    assert client.get(f"{other}id") == "5"
