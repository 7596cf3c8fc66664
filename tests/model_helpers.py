"""Shared by the QueueModel tests: the worked example's clock T (RESEARCH.md §9) and readers of
the model's state (its event stream, and the replies of moveToActive)."""

from __future__ import annotations

from typing import Any

from reference_impl.model import QueueModel
from reference_impl.store import Stream
from reference_impl.worker_ops import MoveToFinished

T = 1700000000000


def events(model: QueueModel) -> list[list[str]]:
    stream = model.store.keys.get("events")
    assert isinstance(stream, Stream)
    return stream.entries


def none_ready(next_ms: int = 0) -> dict[str, object]:
    return {"job": None, "ttl": 0, "next": next_ms}


def got(job: str) -> dict[str, object]:
    return {"job": job, "ttl": 0, "next": 0}


# --- moveToFinished (test_model_finish*.py) ----------------------------------------------
DONE = ["event", "completed", "jobId", "1", "returnvalue", '"ok"', "prev", "active"]


def active(job_id: str = "1") -> QueueModel:
    """Job `job_id` active with lock tok (PX 30000) and in stalled, as a fetch leaves it."""
    model = QueueModel()
    s = model.store
    s.lpush("active", job_id)
    for name, value in {"name": "a", "timestamp": str(T), "delay": "0", "priority": "0",
                        "processedOn": str(T), "ats": "1"}.items():
        s.hset(job_id, name, value)
    s.set(f"{job_id}:lock", "tok", pttl=30000)
    s.sadd("stalled", job_id)
    return model


def finish(now: int = T, **kwargs: Any) -> MoveToFinished:
    kwargs.setdefault("value", '"ok"')
    kwargs.setdefault("keep_jobs", {"count": -1})
    return MoveToFinished("1", now, **kwargs)


def seed_old(model: QueueModel, target: str = "completed") -> None:
    """Jobs a..e finished at T-50000 .. T-10000, each with a hash, :logs and a stale lock."""
    for i, name in enumerate("abcde"):
        model.store.zadd(target, T - 50000 + 10000 * i, name)
        model.store.hset(name, "name", "old")
        model.store.rpush(f"{name}:logs", "row")
        model.store.set(f"{name}:lock", "stale")
