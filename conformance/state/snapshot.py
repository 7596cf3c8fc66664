"""Read every key of one queue from Redis into the vector form (raw, uncompared)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, cast

import msgpack
import redis
from redis.client import NEVER_DECODE
from redis.cluster import RedisCluster

from conformance.core.queues import QueueRef, glob_escape


@dataclass(frozen=True)
class Snapshot:
    """What Redis holds for a queue: keys under BASE by suffix, and stray keys elsewhere.

    Zset scores are kept as the strings Redis sent, so nothing is rounded before comparing.
    """

    keys: dict[str, dict[str, Any]]
    stray: tuple[str, ...]
    names: tuple[str, ...] = ()  # the key names found and not deleted yet, to delete after
    #: On a server the suite started: keys outside every queue of the run, which no one but
    #: the candidate can have written (already deleted when found).
    foreign: tuple[str, ...] = ()


class KeyFinder(Protocol):
    """Lists the keys of a queue (`conformance.state.keytracker` tracks them; the default scans)."""

    def keys_of(self, client: redis.Redis, queue: QueueRef) -> list[str]:
        """Every key name containing the queue name, sorted."""
        ...


def queue_pattern(queue: QueueRef) -> str:
    """The SCAN MATCH pattern of every key whose name contains the (run-unique) queue name."""
    return f"*{glob_escape(queue.name)}*"


def queue_keys(client: redis.Redis, queue: QueueRef) -> list[str]:
    """Every key whose name contains the (run-unique) queue name."""
    return sorted(set(client.scan_iter(match=queue_pattern(queue), count=10_000)))


def take(client: redis.Redis, queue: QueueRef, finder: KeyFinder | None = None, *,
         private: bool = False, delete: bool = False, run_prefix: str = "") -> Snapshot:
    """Snapshot a queue in one round trip, after listing its keys with `finder` (by default a
    SCAN of the keyspace). On a single server the suite started (`private`, as
    `ServerInfo.private`), which holds no one else's keys, the SCAN runs inside the read script:
    one round trip in all; with `delete`, that script also deletes each key it read, and the
    snapshot's `names` is empty (nothing is left to delete). There, with `run_prefix`
    (`bmqc-<run id>-`), the script also finds and deletes every key whose name lacks it: the
    snapshot's `foreign`."""
    if private and finder is None:
        read, foreign = _read_all(client, [], queue_pattern(queue), "1" if delete else "0",
                                  *([run_prefix] if run_prefix else []))
        snap = replace(snapshots(read, [(list(read), queue.base)])[0], foreign=foreign)
        return replace(snap, names=()) if delete else snap
    names = finder.keys_of(client, queue) if finder is not None else queue_keys(client, queue)
    return read_many(client, [(names, queue.base)])[0]


#: Reads keys (the TYPE, then the content of each) and sends them all back as one msgpack blob,
#: `[names, [[type, content...], ...]]`. One call reads a whole batch atomically, and the reply
#: is decoded in C: read key by key, parsing the replies was most of a run's client time. The
#: keys are KEYS; or, when ARGV[1] is a pattern, every key a SCAN MATCH finds, which only a
#: server the suite owns may be asked (a crowded server would be blocked while it scans).
#: ARGV[2] = "1" deletes each key once read. ARGV[3], the run's name prefix, also lists and
#: deletes every key lacking it (`[names, entries, foreign]`): on a server the suite owns,
#: such a key can only be the candidate's write outside its queue.
READ_KEYS = """
local names = KEYS
if ARGV[1] and ARGV[1] ~= '' then
  names = {}
  local seen, cursor = {}, '0'
  repeat
    local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 10000)
    cursor = page[1]
    for _, name in ipairs(page[2]) do
      if not seen[name] then
        seen[name] = true
        names[#names + 1] = name
      end
    end
  until cursor == '0'
end
local out = {}
for i, name in ipairs(names) do
  local kind = redis.call('TYPE', name)['ok']
  if kind == 'string' then
    out[i] = {kind, redis.call('GET', name), redis.call('PTTL', name)}
  elseif kind == 'list' then
    out[i] = {kind, redis.call('LRANGE', name, 0, -1)}
  elseif kind == 'zset' then
    out[i] = {kind, redis.call('ZRANGE', name, 0, -1, 'WITHSCORES')}
  elseif kind == 'hash' then
    out[i] = {kind, redis.call('HGETALL', name)}
  elseif kind == 'stream' then
    out[i] = {kind, redis.call('XRANGE', name, '-', '+')}
  elseif kind == 'set' then
    out[i] = {kind, redis.call('SMEMBERS', name)}
  else
    out[i] = {kind}
  end
  if ARGV[2] == '1' then
    redis.call('UNLINK', name)
  end
end
local foreign = {}
if ARGV[3] then
  local cursor = '0'
  repeat
    local page = redis.call('SCAN', cursor, 'COUNT', 10000)
    cursor = page[1]
    for _, name in ipairs(page[2]) do
      if not string.find(name, ARGV[3], 1, true) then
        foreign[#foreign + 1] = name
      end
    end
  until cursor == '0'
  for _, name in ipairs(foreign) do
    redis.call('UNLINK', name)
  end
end
return cmsgpack.pack({names, out, foreign})
"""
READ_KEYS_SHA = hashlib.sha1(READ_KEYS.encode()).hexdigest()
#: What a `READ_KEYS` call read (`decode_read`): each key's [type, content...], by name.
Read = dict[str, list[Any]]


def read_many(client: redis.Redis, groups: Sequence[tuple[Sequence[str], str]]
              ) -> list[Snapshot]:
    """Snapshot several queues, each given as (its key names, its BASE), in one script call
    for all of them (one per hash slot on a cluster)."""
    names = [name for group, _ in groups for name in group]
    if isinstance(client, RedisCluster):  # a script's keys must share a slot
        slots: dict[int, list[str]] = {}
        for name in names:
            slots.setdefault(client.keyslot(name), []).append(name)
        chunks = list(slots.values())
    else:
        chunks = [names] if names else []
    read: Read = {}
    for chunk in chunks:
        read |= _read(client, chunk)
    return snapshots(read, groups)


def _read(client: redis.Redis, keys: list[str], *args: str) -> Read:
    """One `READ_KEYS` call (see `_read_all`), without the foreign keys."""
    return _read_all(client, keys, *args)[0]


def _read_all(client: redis.Redis, keys: list[str], *args: str) -> tuple[Read, tuple[str, ...]]:
    """One `READ_KEYS` call: by its SHA, or with its body after NOSCRIPT (a SCRIPT FLUSH can
    come at any time, even between a reload and the call). What it read, and the foreign
    keys it found (when asked, see `READ_KEYS`)."""
    for command, script in (("EVALSHA", READ_KEYS_SHA), ("EVAL", READ_KEYS)):
        try:
            blob = client.execute_command(command, script, len(keys), *keys, *args,
                                          **{NEVER_DECODE: True})
        except redis.exceptions.NoScriptError:
            continue
        return decode_read_all(cast(bytes, blob))
    raise AssertionError("EVAL never answers NOSCRIPT")


def read_matching(pipe: redis.client.Pipeline, pattern: str, run_prefix: str) -> None:
    """Queue on `pipe` the reading, then deleting, of every key matching the SCAN `pattern`,
    and the listing and deleting of every key lacking `run_prefix` (`READ_KEYS`, which must be
    loaded); `decode_read_all` decodes the reply. Only for a server the suite owns."""
    pipe.execute_command("EVALSHA", READ_KEYS_SHA, 0, pattern, "1", run_prefix,
                         **{NEVER_DECODE: True})


def decode_read(blob: bytes) -> Read:
    """The keys a `READ_KEYS` call read, by name. A value that is not UTF-8 raises
    UnicodeDecodeError, as a decoding client would."""
    return decode_read_all(blob)[0]


def decode_read_all(blob: bytes) -> tuple[Read, tuple[str, ...]]:
    """`decode_read`, and the foreign keys the call found (see `READ_KEYS`)."""
    names, entries, foreign = msgpack.unpackb(blob, raw=False)
    return dict(zip(names, entries, strict=True)), tuple(sorted(foreign))


def merged(first: Snapshot, others: Sequence[tuple[Snapshot, QueueRef]]) -> Snapshot:
    """A vector's snapshot over several queues (a flow across queues): the first queue's keys
    by suffix, each other queue's by full name (as a bound vector names them), and every
    queue's stray, listed and foreign keys."""
    keys = dict(first.keys)
    stray, names, foreign = list(first.stray), list(first.names), list(first.foreign)
    for snap, queue in others:
        keys.update({queue.key(suffix): entry for suffix, entry in snap.keys.items()})
        stray += snap.stray
        names += snap.names
        foreign += snap.foreign
    return Snapshot(keys, tuple(stray), tuple(names), tuple(foreign))


def snapshots(read: Read, groups: Sequence[tuple[Sequence[str], str]]) -> list[Snapshot]:
    """One Snapshot per (key names, BASE) of `groups`, from what `read` holds."""
    return [_decode(read, base, sorted(names)) for names, base in groups]


def _pairs(flat: list[Any]) -> list[list[Any]]:
    items = iter(flat)
    return [[first, second] for first, second in zip(items, items, strict=True)]


def _decode(read: dict[str, list[Any]], base: str, names: Sequence[str]) -> Snapshot:
    keys: dict[str, dict[str, Any]] = {}
    stray: list[str] = []
    for name in names:
        found = read[name]
        kind = found[0]
        # the most frequent types first: a run reads thousands of keys
        if kind == "hash":
            items = iter(found[1])
            entry: dict[str, Any] = {"hash": dict(zip(items, items, strict=True))}
        elif kind == "string":
            value, pttl = found[1], found[2]
            entry = {"string": {"value": value, "pttl": pttl} if pttl >= 0 else value}
        elif kind == "zset":
            entry = {"zset": _pairs(found[1])}
        elif kind == "stream":
            entry = {"stream": [fields for _, fields in found[1]]}
        elif kind == "list":
            entry = {"list": found[1]}
        elif kind == "set":
            entry = {"set": sorted(found[1])}
        elif kind == "none":
            continue  # expired or deleted between listing and reading
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
