"""Shared by the QueueModel tests: the worked example's clock T (PROTOCOL.md §9) and readers of
the model's state (its event stream, and the replies of moveToActive)."""

from __future__ import annotations

from reference_impl.model import QueueModel
from reference_impl.store import Stream

T = 1700000000000


def events(model: QueueModel) -> list[list[str]]:
    stream = model.store.keys.get("events")
    assert isinstance(stream, Stream)
    return stream.entries


def none_ready(next_ms: int = 0) -> dict[str, object]:
    return {"job": None, "ttl": 0, "next": next_ms}


def got(job: str) -> dict[str, object]:
    return {"job": job, "ttl": 0, "next": 0}
