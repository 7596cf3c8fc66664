"""The legacy repeatable jobs of 5.x: the client's keys (`reference_impl.repeatable_ops`) and
the model of addRepeatableJob-2, updateRepeatableJobMillis-1 and removeRepeatable-2/-3
(`reference_impl.repeatables`), against values worked out by hand from npm bullmq 5.81.5's
repeat.js and scripts (md5 values: RFC 1321's test suite); and the keys against the real 5.81.5
client (`ci/repeat_keys.py`), where Node and its package are installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reference_impl import versions
from reference_impl.model import QueueModel
from reference_impl.repeatable_ops import (
    AddRepeatableJob,
    RemoveRepeatable,
    RepeatOpts,
    UpdateRepeatableJobMillis,
    concat_key,
    legacy_job_id_prefix,
    md5_hex,
    removal_member,
    repeat_key,
)

ROOT = Path(__file__).resolve().parent.parent
T = 1_700_000_000_000
EVERY = RepeatOpts("report", every=60_000)


def test_md5_is_rfc_1321s() -> None:
    assert md5_hex("") == "d41d8cd98f00b204e9800998ecf8427e"
    assert md5_hex("abc") == "900150983cd24fb0d6963f7d28e17f72"


def test_the_concatenated_key_leaves_missing_options_empty() -> None:
    assert concat_key(EVERY) == "report::::60000"
    full = RepeatOpts("report", pattern="0 * * * *", tz="Europe/Paris", end_date=T,
                      custom_id="daily")
    assert concat_key(full) == "report:daily:1700000000000:Europe/Paris:0 * * * *"


def test_the_repeat_key_is_the_md5_or_the_callers_key() -> None:
    assert repeat_key(EVERY) == md5_hex("report::::60000")
    assert repeat_key(RepeatOpts("report", every=60_000, key="nightly")) == "nightly"


def test_the_legacy_iteration_prefix() -> None:
    # md5(name + jobId + md5(concatenated key)), or the caller's key
    inner = md5_hex("report::::60000")
    assert legacy_job_id_prefix(EVERY) == f"repeat:{md5_hex('report' + inner)}:"
    assert legacy_job_id_prefix(RepeatOpts("r", every=1, key="k")) == "repeat:k:"


def test_removal_sends_a_key_with_colons_as_the_concatenated_one() -> None:
    assert removal_member(EVERY) == "report::::60000"
    assert removal_member(RepeatOpts("r", every=1, key="k")) == "r::::1"
    assert removal_member(RepeatOpts("r", every=1, key="a:b:c")) == "a:b:c"


KEY = md5_hex("report::::60000")


def _model(protocol: versions.Version = (5, 81, 5)) -> QueueModel:
    """A queue as of `protocol` (by default the last 5.x release)."""
    return QueueModel(protocol=protocol)


def test_an_add_scores_the_md5_key_and_writes_its_hash() -> None:
    model = _model()
    assert model.apply(AddRepeatableJob("report", T + 60_000, every=60_000)) == KEY
    assert model.store.zrange("repeat") == [(KEY, T + 60_000)]
    assert model.store.hgetall(f"repeat:{KEY}") == {"name": "report", "every": "60000"}


def test_an_add_rescores_a_concatenated_key_the_queue_holds() -> None:
    model = _model()
    model.store.zadd("repeat", T, "report::::60000")
    assert model.apply(AddRepeatableJob("report", T + 60_000, every=60_000)) == \
        "report::::60000"
    assert model.store.zrange("repeat") == [("report::::60000", T + 60_000)]


def test_an_add_at_the_same_fire_time_keeps_its_iteration_from_5_13_2() -> None:
    job = f"repeat:{KEY}:{T + 60_000}"
    for protocol, kept in (((5, 13, 1), False), ((5, 13, 2), True)):
        model = _model(protocol)
        model.store.zadd("repeat", T + 60_000, KEY)
        model.store.zadd("delayed", (T + 60_000) * 0x1000, job)
        model.store.hset(job, "name", "report")
        model.apply(AddRepeatableJob("report", T + 60_000, every=60_000))
        assert model.store.exists(job) is kept, protocol


def test_update_rescores_the_md5_key_first_and_never_adds_one() -> None:
    model = _model()
    assert model.apply(UpdateRepeatableJobMillis("report", T, every=60_000)) == ""
    assert not model.store.exists("repeat")
    model.store.zadd("repeat", 1, "report::::60000")
    model.store.zadd("repeat", 1, KEY)
    assert model.apply(UpdateRepeatableJobMillis("report", T, every=60_000)) == KEY
    assert model.store.zscore("repeat", KEY) == T
    assert model.store.zscore("repeat", "report::::60000") == 1


def test_removal_of_an_md5_key_starts_at_5_10_0_and_its_hash_goes_from_5_10_4() -> None:
    for protocol, answer, hash_left in (((5, 9, 0), 1, True), ((5, 10, 0), 0, True),
                                        ((5, 10, 4), 0, False)):
        model = _model(protocol)
        model.store.zadd("repeat", T, KEY)
        model.store.hset(f"repeat:{KEY}", "name", "report")
        assert model.apply(RemoveRepeatable("report", every=60_000)) == answer, protocol
        assert model.store.exists("repeat") is (answer == 1), protocol
        assert model.store.exists(f"repeat:{KEY}") is hash_left, protocol


def test_the_client_sends_what_npm_bullmq_5_81_5_sends() -> None:
    """ci/repeat_keys.py: the keys of every add and removal of the vectors, as the real client
    computes them (needs Node and `npm ci --prefix ci/node-bullmq-5`)."""
    if shutil.which("node") is None:
        pytest.skip("needs Node (the real npm bullmq 5.81.5 client computes the keys)")
    if not (ROOT / "ci" / "node-bullmq-5" / "node_modules" / "bullmq").is_dir():
        pytest.skip("needs `npm ci --prefix ci/node-bullmq-5` (npm bullmq 5.81.5)")
    done = subprocess.run([sys.executable, str(ROOT / "ci" / "repeat_keys.py")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 of 7 ops send" in done.stdout
