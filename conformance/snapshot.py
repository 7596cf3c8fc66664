"""Read every key of one queue from Redis into the vector form (raw, uncompared)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import redis

from conformance.candidates.base import QueueRef


@dataclass(frozen=True)
class Snapshot:
    """What Redis holds for a queue: keys under BASE by suffix, and stray keys elsewhere.

    Zset scores are kept as the strings Redis sent, so nothing is rounded before comparing.
    """

    keys: dict[str, dict[str, Any]]
    stray: tuple[str, ...]
    names: tuple[str, ...] = ()  # every key name the scan found, for deleting them afterwards


class KeyFinder(Protocol):
    """Lists the keys of a queue (`conformance.keytracker` tracks them; the default scans)."""

    def keys_of(self, client: redis.Redis, queue: QueueRef) -> list[str]:
        """Every key name containing the queue name, sorted."""
        ...


def glob_escape(text: str) -> str:
    """Escape Redis glob metacharacters so `text` matches literally in SCAN MATCH."""
    return re.sub(r"([\\*?\[\]])", r"\\\1", text)


def queue_keys(client: redis.Redis, queue: QueueRef) -> list[str]:
    """Every key whose name contains the (run-unique) queue name."""
    pattern = f"*{glob_escape(queue.name)}*"
    return sorted(set(client.scan_iter(match=pattern, count=10_000)))


def take(client: redis.Redis, queue: QueueRef, finder: KeyFinder | None = None) -> Snapshot:
    """Snapshot a queue in two round trips (TYPE of every key, then its content), after
    listing its keys with `finder` (by default a SCAN of the keyspace)."""
    names = finder.keys_of(client, queue) if finder is not None else queue_keys(client, queue)
    return read_many(client, [(names, queue.base)])[0]


def read_many(client: redis.Redis, groups: Sequence[tuple[Sequence[str], str]]
              ) -> list[Snapshot]:
    """Snapshot several queues, each given as (its key names, its BASE), in two round trips
    for all of them: TYPE of every key, then its content."""
    ordered = [sorted(names) for names, _ in groups]
    pipe = client.pipeline(transaction=False)
    for names in ordered:
        for name in names:
            pipe.type(name)
    types = iter(pipe.execute())
    pipe = client.pipeline(transaction=False)
    readers: list[list[tuple[str, str]]] = []
    for names in ordered:
        readers.append([])
        for name in names:
            kind = next(types)
            readers[-1].append((name, kind))
            _read_content(pipe, name, kind)
    replies = iter(pipe.execute())
    return [_decode(replies, found, base, names)
            for found, names, (_, base) in zip(readers, ordered, groups, strict=True)]


def _read_content(pipe: Any, name: str, kind: str) -> None:
    if kind == "string":
        pipe.get(name)
        pipe.pttl(name)
    elif kind == "list":
        pipe.lrange(name, 0, -1)
    elif kind == "zset":
        pipe.zrange(name, 0, -1, withscores=True, score_cast_func=_raw_score)
    elif kind == "hash":
        pipe.hgetall(name)
    elif kind == "stream":
        pipe.xrange(name)
    elif kind == "set":
        pipe.smembers(name)


def _decode(replies: Iterator[Any], readers: list[tuple[str, str]], base: str,
            names: Sequence[str]) -> Snapshot:
    keys: dict[str, dict[str, Any]] = {}
    stray: list[str] = []
    for name, kind in readers:
        if kind == "string":
            value, pttl = next(replies), next(replies)
            entry: dict[str, Any] = {"string": value}
            if pttl >= 0:
                entry = {"string": {"value": value, "pttl": pttl}}
        elif kind == "list":
            entry = {"list": next(replies)}
        elif kind == "zset":
            entry = {"zset": [[m, s] for m, s in next(replies)]}
        elif kind == "hash":
            entry = {"hash": next(replies)}
        elif kind == "stream":
            entry = {"stream": [[x for kv in fields.items() for x in kv]
                                for _, fields in next(replies)]}
        elif kind == "set":
            entry = {"set": sorted(next(replies))}
        elif kind == "none":
            continue  # expired or deleted between SCAN and TYPE
        else:
            entry = {kind: None}
        if name.startswith(base):
            keys[name[len(base):]] = entry
        else:
            stray.append(name)
    return Snapshot(keys, tuple(stray), tuple(names))


def delete_queue(client: redis.Redis, queue: QueueRef,
                 names: Sequence[str] | None = None, finder: KeyFinder | None = None) -> int:
    """Remove every key of a queue (ours only: the name is run-unique). Returns the count.

    `names` are the queue's keys when a snapshot just listed them; otherwise `finder` lists
    them (by default a SCAN).
    """
    if names is None:
        names = finder.keys_of(client, queue) if finder is not None else queue_keys(client, queue)
    if names:
        client.unlink(*names)
    return len(names)


#: Names per UNLINK when many keys go at once.
UNLINK_CHUNK = 1000


def unlink_names(client: redis.Redis, names: Sequence[str | bytes]) -> int:
    """UNLINK `names`, UNLINK_CHUNK to a command; the number Redis removed."""
    removed = 0
    for start in range(0, len(names), UNLINK_CHUNK):
        removed += int(client.unlink(*names[start:start + UNLINK_CHUNK]))
    return removed


def _raw_score(raw: bytes | str) -> str:
    """Keep a score exactly as Redis formatted it (redis-py hands the callback bytes)."""
    return raw.decode() if isinstance(raw, bytes) else raw
