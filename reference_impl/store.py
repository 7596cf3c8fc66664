"""An in-memory stand-in for the Redis keys of one queue, addressed by key suffix.

Values keep the types Redis gives them. Hash fields whose content is JSON are wrapped in
`JsonText`, so that vectors compare them as parsed JSON rather than as bytes (encoders differ in
spacing and key order, RESEARCH.md §7.1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TypeVar

Score = int | Fraction


@dataclass(frozen=True)
class JsonText:
    """A hash value that holds JSON; compared by its parsed value.

    With `exact=False` only the keys of `value` are pinned down: clients add their own defaults
    to the stored job opts (Python writes `"delay":0` and `"attempts":0`, Node `"attempts":0`),
    which the protocol does not fix.
    """

    value: Any
    exact: bool = True


HashValue = str | JsonText


def hash_text(value: HashValue) -> str:
    """A hash value as a script returns it: JSON as compact text (cjson's, for the maps of at
    most one key that vectors store; with more, cjson's key order is not fixed)."""
    if isinstance(value, JsonText):
        return json.dumps(value.value, separators=(",", ":"), ensure_ascii=False)
    return value


@dataclass
class Str:
    """A Redis string, with a PX expiry in ms when one was set."""

    value: str
    pttl: int | None = None


@dataclass
class List:
    """A Redis list; `items[0]` is the left end (LRANGE order)."""

    items: list[str] = field(default_factory=list)


@dataclass
class ZSet:
    """A Redis sorted set; iteration order is (score, member bytes) like ZRANGE."""

    scores: dict[str, Score] = field(default_factory=dict)

    def ordered(self) -> list[tuple[str, Score]]:
        """Members with scores in ZRANGE order."""
        return sorted(self.scores.items(), key=lambda kv: (kv[1], kv[0].encode()))


@dataclass
class Hash:
    """A Redis hash."""

    fields: dict[str, HashValue] = field(default_factory=dict)


@dataclass
class Stream:
    """A Redis stream: entries as flat field/value lists (entry ids come from the Redis clock)."""

    entries: list[list[str]] = field(default_factory=list)


@dataclass
class Set:
    """A Redis set (`stalled`): members without order."""

    members: set[str] = field(default_factory=set)


Value = Str | List | ZSet | Hash | Stream | Set
#: The kinds a key springs into existence as, empty, when first written (not strings).
Container = TypeVar("Container", List, ZSet, Hash, Stream, Set)


class WrongType(Exception):
    """The model tried to use a key as the wrong type (a bug in the model or a vector)."""


class Store:
    """Keys of one queue by suffix. Empty containers vanish, as in Redis."""

    def __init__(self) -> None:
        self.keys: dict[str, Value] = {}

    def _get(self, suffix: str, kind: type[Container]) -> Container:
        value = self.keys.get(suffix)
        if value is None:
            value = kind()
            self.keys[suffix] = value
        elif not isinstance(value, kind):
            raise WrongType(f"{suffix} is {type(value).__name__}, not {kind.__name__}")
        return value

    def _prune(self, suffix: str) -> None:
        value = self.keys.get(suffix)
        empty = (
            (isinstance(value, List) and not value.items)
            or (isinstance(value, ZSet) and not value.scores)
            or (isinstance(value, Hash) and not value.fields)
            or (isinstance(value, Set) and not value.members)
        )
        if empty:
            del self.keys[suffix]

    def exists(self, suffix: str) -> bool:
        """EXISTS."""
        return suffix in self.keys

    def delete(self, suffix: str) -> None:
        """DEL."""
        self.keys.pop(suffix, None)

    # strings
    def get(self, suffix: str) -> str | None:
        """GET."""
        value = self.keys.get(suffix)
        if value is None:
            return None
        if not isinstance(value, Str):
            raise WrongType(suffix)
        return value.value

    def set(self, suffix: str, value: str, pttl: int | None = None) -> None:
        """SET [PX]."""
        self.keys[suffix] = Str(value, pttl)

    def incr(self, suffix: str) -> int:
        """INCR."""
        current = int(self.get(suffix) or 0) + 1
        old = self.keys.get(suffix)
        self.keys[suffix] = Str(str(current), old.pttl if isinstance(old, Str) else None)
        return current

    def pttl(self, suffix: str) -> int:
        """PTTL as the model knows it: the PX last set (time does not pass in the model), -1
        for a key without expiry, -2 for a missing key. Only strings carry expiries here."""
        value = self.keys.get(suffix)
        if value is None:
            return -2
        if isinstance(value, Str) and value.pttl is not None:
            return value.pttl
        return -1

    def pexpire(self, suffix: str, ms: int) -> None:
        """PEXPIRE on a string key (a no-op on a missing key)."""
        value = self.keys.get(suffix)
        if value is None:
            return
        if not isinstance(value, Str):
            raise WrongType(f"{suffix}: the model keeps expiries on strings only")
        value.pttl = ms

    # lists
    def lpush(self, suffix: str, item: str) -> None:
        """LPUSH."""
        self._get(suffix, List).items.insert(0, item)

    def rpush(self, suffix: str, item: str) -> None:
        """RPUSH."""
        self._get(suffix, List).items.append(item)

    def lpop(self, suffix: str) -> str | None:
        """LPOP."""
        if suffix not in self.keys:
            return None
        item = self._get(suffix, List).items.pop(0)
        self._prune(suffix)
        return item

    def rpop(self, suffix: str) -> str | None:
        """RPOP."""
        if suffix not in self.keys:
            return None
        item = self._get(suffix, List).items.pop()
        self._prune(suffix)
        return item

    def lrem_last(self, suffix: str, item: str) -> bool:
        """LREM key -1 item: remove the right-most occurrence."""
        if suffix not in self.keys:
            return False
        items = self._get(suffix, List).items
        for i in range(len(items) - 1, -1, -1):
            if items[i] == item:
                del items[i]
                self._prune(suffix)
                return True
        return False

    def lrem(self, suffix: str, count: int, item: str) -> int:
        """LREM key count item: count > 0 from the left, < 0 from the right, 0 all."""
        value = self.keys.get(suffix)
        if value is None:
            return 0
        items = self._get(suffix, List).items
        order = range(len(items) - 1, -1, -1) if count < 0 else range(len(items))
        hits = [i for i in order if items[i] == item]
        if count:
            hits = hits[:abs(count)]
        for i in sorted(hits, reverse=True):
            del items[i]
        self._prune(suffix)
        return len(hits)

    def ltrim(self, suffix: str, start: int, stop: int) -> None:
        """LTRIM with Redis's index rules (negative indexes count from the right)."""
        if suffix not in self.keys:
            return
        items = self._get(suffix, List).items
        size = len(items)
        first = max(start + size if start < 0 else start, 0)
        last = min(stop + size if stop < 0 else stop, size - 1)
        items[:] = items[first:last + 1] if first <= last else []
        self._prune(suffix)

    def llen(self, suffix: str) -> int:
        """LLEN."""
        value = self.keys.get(suffix)
        return len(value.items) if isinstance(value, List) else 0

    # sorted sets
    def zadd(self, suffix: str, score: Score, member: str) -> None:
        """ZADD."""
        self._get(suffix, ZSet).scores[member] = score

    def zrem(self, suffix: str, member: str) -> bool:
        """ZREM of one member."""
        if suffix not in self.keys:
            return False
        removed = self._get(suffix, ZSet).scores.pop(member, None) is not None
        self._prune(suffix)
        return removed

    def zrange(self, suffix: str) -> list[tuple[str, Score]]:
        """ZRANGE 0 -1 WITHSCORES."""
        if suffix not in self.keys:
            return []
        return self._get(suffix, ZSet).ordered()

    def zscores(self, suffix: str) -> list[Score]:
        """All scores of a zset."""
        return [s for _, s in self.zrange(suffix)]

    def zscore(self, suffix: str, member: str) -> Score | None:
        """ZSCORE."""
        if suffix not in self.keys:
            return None
        return self._get(suffix, ZSet).scores.get(member)

    def zcard(self, suffix: str) -> int:
        """ZCARD."""
        value = self.keys.get(suffix)
        return len(value.scores) if isinstance(value, ZSet) else 0

    def zpopmin(self, suffix: str) -> str | None:
        """ZPOPMIN: the lowest member, removed."""
        ordered = self.zrange(suffix)
        if not ordered:
            return None
        member = ordered[0][0]
        self.zrem(suffix, member)
        return member

    # hashes
    def hget(self, suffix: str, name: str) -> HashValue | None:
        """HGET."""
        value = self.keys.get(suffix)
        if value is None:
            return None
        if not isinstance(value, Hash):
            raise WrongType(suffix)
        return value.fields.get(name)

    def hgetall(self, suffix: str) -> dict[str, HashValue]:
        """HGETALL (a copy)."""
        value = self.keys.get(suffix)
        if value is None:
            return {}
        if not isinstance(value, Hash):
            raise WrongType(suffix)
        return dict(value.fields)

    def hset(self, suffix: str, name: str, value: HashValue) -> None:
        """HSET of one field."""
        self._get(suffix, Hash).fields[name] = value

    def hdel(self, suffix: str, name: str) -> None:
        """HDEL of one field."""
        if suffix in self.keys:
            self._get(suffix, Hash).fields.pop(name, None)
            self._prune(suffix)

    def lrange(self, suffix: str) -> list[str]:
        """LRANGE 0 -1."""
        value = self.keys.get(suffix)
        if value is None:
            return []
        if not isinstance(value, List):
            raise WrongType(suffix)
        return list(value.items)

    def rename(self, source: str, target: str) -> None:
        """RENAME."""
        self.keys[target] = self.keys.pop(source)

    def ltrim_left(self, suffix: str, count: int) -> None:
        """LTRIM key count -1: drop the first `count` items."""
        if suffix in self.keys:
            del self._get(suffix, List).items[:count]
            self._prune(suffix)

    def hincrby(self, suffix: str, name: str, by: int) -> int:
        """HINCRBY."""
        current = self.hget(suffix, name)
        new = int(current if isinstance(current, str) else 0) + by
        self.hset(suffix, name, str(new))
        return new

    # streams
    def xadd(self, suffix: str, *fields: str) -> None:
        """XADD * with the given field/value list."""
        self._get(suffix, Stream).entries.append(list(fields))

    # sets
    def sadd(self, suffix: str, member: str) -> bool:
        """SADD of one member; True when it was new."""
        members = self._get(suffix, Set).members
        added = member not in members
        members.add(member)
        return added

    def srem(self, suffix: str, member: str) -> bool:
        """SREM of one member; True when it was there."""
        value = self.keys.get(suffix)
        if value is None:
            return False
        if not isinstance(value, Set):
            raise WrongType(f"{suffix} is {type(value).__name__}, not Set")
        removed = member in value.members
        value.members.discard(member)
        self._prune(suffix)
        return removed

    def sismember(self, suffix: str, member: str) -> bool:
        """SISMEMBER."""
        value = self.keys.get(suffix)
        return isinstance(value, Set) and member in value.members

    def smembers(self, suffix: str) -> list[str]:
        """SMEMBERS, in the order Redis 7.0 gives for an intset (ascending integers).

        Other sets come back in hash order, which no vector may depend on: a set of more than
        one non-integer member raises."""
        value = self.keys.get(suffix)
        if value is None:
            return []
        members = self._get(suffix, Set).members
        if all(_intset_member(m) for m in members):
            return sorted(members, key=int)
        if len(members) > 1:
            raise NotImplementedError("the order of a non-integer set's members is not fixed")
        return sorted(members)

    def scard(self, suffix: str) -> int:
        """SCARD."""
        value = self.keys.get(suffix)
        return len(value.members) if isinstance(value, Set) else 0


def _intset_member(member: str) -> bool:
    """Whether Redis stores `member` as an integer (canonical decimal text of an int64)."""
    try:
        number = int(member)
    except ValueError:
        return False
    return str(number) == member and -2**63 <= number < 2**63
