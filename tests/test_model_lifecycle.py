"""The model's lifecycle ops (moveToDelayed, pause, resume) against hand-computed facts."""

from __future__ import annotations

from reference_impl.form import form_to_store
from reference_impl.model import QueueModel
from reference_impl.ops import Add, MoveToActive, MoveToDelayed, Pause, Resume

T = 1700000000000


def fetched_job() -> QueueModel:
    model = QueueModel()
    model.apply(Add("a", T))
    model.apply(MoveToActive(T, "tok"))
    return model


def test_retry_scores_from_now_and_counts_the_attempt() -> None:
    model = fetched_job()
    assert model.apply(MoveToDelayed("1", T + 100, 1000)) == 0
    s = model.store
    assert s.zrange("delayed") == [("1", 6963200004505600)]  # (T+100+1000)*4096
    assert s.hget("1", "atm") == "1"
    assert s.hget("1", "delay") == "1000"
    assert not s.exists("1:lock") and not s.exists("active")
    assert s.keys["events"].entries[-1] == [  # type: ignore[union-attr]
        "event", "delayed", "jobId", "1", "delay", "1700000001100"]
    assert s.zrange("marker") == [("0", 0), ("1", 1700000001100)]  # head / 4096


def test_skip_attempt_and_band_bump() -> None:
    model = fetched_job()
    model.apply(Add("b", T, opts={"delay": 1100}))  # F = T+1100, score (T+1100)*4096
    assert model.apply(MoveToDelayed("1", T + 100, 1000, skip_attempt=True)) == 0
    assert model.store.zrange("delayed") == [("2", 6963200004505600), ("1", 6963200004505601)]
    assert model.store.hget("1", "atm") is None


def test_lock_codes() -> None:
    model = fetched_job()
    assert model.apply(MoveToDelayed("1", T, 1000, token="other")) == -6
    assert model.store.get("1:lock") == "tok"  # untouched
    assert model.apply(MoveToDelayed("404", T, 1000)) == -1
    unlocked = QueueModel()
    unlocked.apply(Add("a", T))
    unlocked.apply(MoveToActive(T, "0"))  # token "0": no lock written
    assert unlocked.apply(MoveToDelayed("1", T, 1000)) == -2
    assert unlocked.apply(MoveToDelayed("1", T, 1000, token="0")) == 0


def test_not_active_deletes_the_lock_first() -> None:
    model = QueueModel()
    model.apply(Add("a", T))
    model.store.set("1:lock", "tok", pttl=30000)
    assert model.apply(MoveToDelayed("1", T, 1000)) == -3
    assert not model.store.exists("1:lock")
    assert model.store.lrange("wait") == ["1"]


def test_pause_and_resume_markers() -> None:
    model = QueueModel()
    model.apply(Add("w", T))
    model.apply(Add("d", T, opts={"delay": 5000}))
    assert model.apply(Pause()) == 0
    assert model.store.hget("meta", "paused") == "1"
    assert not model.store.exists("marker")
    assert model.store.lrange("wait") == ["1"]  # jobs stay in wait (6.x)
    assert model.apply(Resume()) == 0
    assert model.store.hget("meta", "paused") is None
    assert model.store.zrange("marker") == [("0", 0)]  # "1" is not restored with jobs ready
    events = [e[1] for e in model.store.keys["events"].entries]  # type: ignore[union-attr]
    assert events[-2:] == ["paused", "resumed"]


def test_resume_migrates_legacy_paused_list() -> None:
    model = QueueModel(form_to_store({"paused": {"list": ["3", "2"]},
                                      "wait": {"list": ["1"]}}))
    assert model.apply(Resume()) == 0
    assert model.store.lrange("wait") == ["1", "3", "2"]  # RPUSH after wait's own jobs
    assert not model.store.exists("paused")
    renamed = QueueModel(form_to_store({"paused": {"list": ["3", "2"]}}))
    renamed.apply(Resume())
    assert renamed.store.lrange("wait") == ["3", "2"]  # RENAME keeps the order
    assert renamed.store.zrange("marker") == [("0", 0)]
