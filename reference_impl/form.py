"""The plain-data form of queue state used in vectors (`given` and `expect.keys`).

Each key suffix maps to one of::

    {"string": "7"}                               or {"string": {"value": "tok", "pttl": N}}
                                                  for a string written with PX N
    {"list": ["4", "3", "1"]}                     left to right, as LRANGE 0 -1
    {"zset": {"3": 6963200020480000, ...}}        member -> score, written in ZRANGE order
    {"hash": {"delay": "0", "opts": {"json": {...}}}}
    {"stream": [["event", "added", "jobId", "1", "name", "n"], ...]}   entry ids left out

The single type key names the Redis type of the key.

Scores are ints when they are integers no larger than 2**53 in magnitude, and exact decimal
strings otherwise (a fraction k/4096 always has a finite decimal expansion).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from reference_impl.scores import EXACT_LIMIT
from reference_impl.store import Hash, JsonText, List, Score, Set, Store, Str, Stream, ZSet


def score_to_form(score: Score) -> int | str:
    """An exact score as it is written in a vector."""
    frac = Fraction(score)
    if frac.denominator == 1 and abs(frac.numerator) <= EXACT_LIMIT:
        return frac.numerator
    if frac.denominator == 1:
        return str(frac.numerator)
    with localcontext() as ctx:
        ctx.prec = 200
        text = format(Decimal(frac.numerator) / Decimal(frac.denominator), "f")
    if Fraction(text) != frac:
        raise ValueError(f"score {frac} has no finite decimal form")
    return text


def score_from_form(raw: int | str) -> Fraction:
    """The exact value of a vector score."""
    return Fraction(raw) if isinstance(raw, int) else Fraction(str(raw))


#: The Redis types a vector can state, as the name of an entry's single type key.
KEY_TYPES = ("string", "list", "zset", "hash", "stream", "set")


def kind_of(entry: Mapping[str, Any]) -> str:
    """The Redis type an entry states (its single key)."""
    return next(iter(entry))


def string_parts(body: str | dict[str, Any]) -> tuple[str, int | None]:
    """The value and the PX expiry (or None) of a string entry's content."""
    if isinstance(body, dict):
        return body["value"], body["pttl"]
    return body, None


def store_to_form(store: Store) -> dict[str, dict[str, Any]]:
    """Every key of the store, sorted by suffix."""
    out: dict[str, dict[str, Any]] = {}
    for suffix in sorted(store.keys):
        value = store.keys[suffix]
        match value:
            case Str():
                entry: dict[str, Any] = {"string": value.value}
                if value.pttl is not None:
                    entry = {"string": {"value": value.value, "pttl": value.pttl}}
            case List():
                entry = {"list": list(value.items)}
            case ZSet():
                entry = {"zset": {m: score_to_form(s) for m, s in value.ordered()}}
            case Hash():
                entry = {
                    "hash": {
                        k: _json_form(v) if isinstance(v, JsonText) else v
                        for k, v in sorted(value.fields.items())
                    },
                }
            case Stream():
                entry = {"stream": [list(e) for e in value.entries]}
            case Set():
                entry = {"set": sorted(value.members)}
        out[suffix] = entry
    return out


def _json_form(value: JsonText) -> dict[str, Any]:
    return {"json": value.value} if value.exact else {"json_includes": value.value}


def _json_value(rule: dict[str, Any]) -> JsonText:
    if "json_includes" in rule:
        return JsonText(rule["json_includes"], exact=False)
    return JsonText(rule["json"])


def form_to_store(form: dict[str, dict[str, Any]]) -> Store:
    """Build a store from a `given` block."""
    store = Store()
    for suffix, entry in form.items():
        kind = kind_of(entry)
        body = entry[kind]
        if kind == "string":
            store.keys[suffix] = Str(*string_parts(body))
        elif kind == "list":
            store.keys[suffix] = List(list(body))
        elif kind == "zset":
            scores: dict[str, Score] = {}
            for member, raw in body.items():
                frac = score_from_form(raw)
                scores[member] = frac.numerator if frac.denominator == 1 else frac
            store.keys[suffix] = ZSet(scores)
        elif kind == "hash":
            store.keys[suffix] = Hash(
                {
                    k: _json_value(v) if isinstance(v, dict) else v
                    for k, v in body.items()
                }
            )
        elif kind == "stream":
            store.keys[suffix] = Stream([list(e) for e in body])
        elif kind == "set":
            store.keys[suffix] = Set(set(body))
        else:
            raise ValueError(f"unknown key type {kind!r} for {suffix!r}")
    return store
