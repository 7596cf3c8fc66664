"""Compare a Redis snapshot with a vector's expectation and describe every difference.

The rules (also stated in every vector file header): the expected key set is complete; zsets
are compared in order with exact scores; stream entry ids are ignored; `pttl: N` means an expiry
in (0, N]; `{json: X}` hash values are compared parsed.

A diff takes n log n time at worst, with no recursion that grows with the input, so a candidate
that gets every entry of a 1000-entry stream wrong fails about as fast as a correct one passes.
Each key shows its first `MAX_DIFFERENCES` differences, then one line counts the rest. Values of
any shape (None, bytes, nested lists, integers too long to print) are rendered, long ones cut
around their first difference. Negative op returns are named from BullMQ's error codes.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from itertools import chain, islice, zip_longest
from typing import Any

from conformance.state.align import Step, sequence_differences
from reference_impl.form import score_from_form
from reference_impl.model import ERROR_CODES
from reference_impl.scores import BAND, TIER
from reference_impl.worker_ops import result_matches

#: Differences shown per key (and for the op returns); one more line counts the rest.
MAX_DIFFERENCES = 10
#: Characters shown of one value; a longer one is cut around where it first differs.
MAX_VALUE_CHARS = 160
#: Lines of key differences after which the remaining differing keys are only counted.
MAX_KEY_LINES = 200


def _show(value: Any) -> str:
    """A value as `repr` quotes it, or its type when `repr` refuses (an integer of more digits
    than `sys.get_int_max_str_digits()`, or nesting deeper than the recursion limit)."""
    try:
        return repr(value)
    except (ValueError, RecursionError):
        size = f" of {value.bit_length()} bits" if isinstance(value, int) else ""
        return f"<{type(value).__name__}{size}, too long to print>"


def _ident(value: Any) -> str:
    """A string as it is, anything else quoted: to match and sort by."""
    return value if isinstance(value, str) else _show(value)


def _entry_text(entry: Any) -> str:
    """A stream entry's fields joined by spaces; a field that is not one plain word, quoted."""
    if not isinstance(entry, list | tuple):
        return _show(entry)
    return " ".join(f if isinstance(f, str) and f.isprintable() and f and " " not in f
                    else _show(f) for f in entry)


def _cut(text: str, start: int = 0) -> str:
    end = start + MAX_VALUE_CHARS
    return f"{'...' if start else ''}{text[start:end]}{'...' if end < len(text) else ''}"


def _cut_pair(want: str, got: str) -> tuple[str, str]:
    """Both texts cut to the same window, which starts a little before their first difference."""
    if len(want) <= MAX_VALUE_CHARS and len(got) <= MAX_VALUE_CHARS:
        return want, got
    same = len(os.path.commonprefix([want, got]))  # noqa: RUF071 (strings, not paths)
    start = max(0, same - MAX_VALUE_CHARS // 4)
    return _cut(want, start), _cut(got, start)


def _capped(diffs: Iterable[list[str]], total: int, name: str) -> list[str]:
    """The lines of the first MAX_DIFFERENCES of `total` differences, then a count of the rest.
    `diffs` is consumed lazily, so only the differences shown are rendered."""
    shown = [line for diff in islice(diffs, MAX_DIFFERENCES) for line in diff]
    if total > MAX_DIFFERENCES:
        shown.append(f"    ... and {total - MAX_DIFFERENCES} more differences in {name}")
    return shown


# --- lists and streams ---

def _sequence_diff(expected: Sequence[Any], actual: Sequence[Any], show: Callable[[Any], str],
                   header: str, name: str) -> list[str]:
    """`N <header>:`, then the first differences as `[index] expected|actual|missing|unexpected
    text`, each index counted on its own side."""
    steps = sequence_differences(expected, actual)
    if not steps:
        return []
    top = max((k for step in steps[:MAX_DIFFERENCES] for k in step if k is not None), default=0)
    width = len(str(top)) + 2

    def line(index: int, label: str, text: str) -> str:
        return f"    {f'[{index}]':>{width}} {label:<10} {text}"

    def render(step: Step) -> list[str]:
        i, j = step
        if i is not None and j is not None:
            want, got = _cut_pair(show(expected[i]), show(actual[j]))
            return [line(i, "expected", want), line(j, "actual", got)]
        if i is not None:
            return [line(i, "missing", _cut(show(expected[i])))]
        assert j is not None  # a step always names at least one side
        return [line(j, "unexpected", _cut(show(actual[j])))]

    return [f"  {len(steps)} {header}:", *_capped(map(render, steps), len(steps), name)]


# --- zsets, hashes, strings ---

def _exact(raw: Any) -> Fraction | None:
    """The exact value of a score Redis sent (it always parses as a double)."""
    if isinstance(raw, bytes):
        raw = raw.decode(errors="replace")
    try:
        return Fraction(float(raw))
    except (TypeError, ValueError, OverflowError):
        return None


def _show_score(value: Fraction | None, suffix: str) -> str:
    if value is None:
        return "(not a number)"
    if value.denominator != 1:
        return f"{float(value)!r} (= {_show(value.numerator)}/{_show(value.denominator)})"
    text = _show(value.numerator)
    if suffix == "delayed" and value.numerator >= 0:
        fire, pos = divmod(value.numerator, BAND)
        text += f" (F={_show(fire)} +{pos})"
    elif suffix == "prioritized" and value.numerator >= 0:
        tier, counter = divmod(value.numerator, TIER)
        text += f" (P={_show(tier)} c={counter})"
    return text


def _pairs(body: Any) -> list[tuple[Any, Any]]:
    """A snapshot zset's [member, raw score] pairs (tolerating any other shape)."""
    if isinstance(body, Mapping):
        return list(body.items())
    return [(e[0], e[1]) if isinstance(e, list | tuple) and len(e) == 2 else (e, None)
            for e in body]


def _same_zset(exp: Mapping[str, Any], act: Any) -> bool:
    """Whether a snapshot zset holds exactly the expected members, in order, with the expected
    scores. Most zsets of a run match: an integer score is compared with the double Redis
    sent as is (Python compares int and float exactly), which spares building Fractions."""
    if type(act) is not list or len(act) != len(exp) or not all(
            type(pair) is list and len(pair) == 2 for pair in act):
        return False  # any other shape: the full comparison words it
    if [pair[0] for pair in act] != list(exp):
        return False
    wants = list(exp.values())
    try:
        if all(type(want) is int for want in wants):
            return [float(pair[1]) for pair in act] == wants
        return [_exact(pair[1]) for pair in act] == [score_from_form(w) for w in wants]
    except (TypeError, ValueError, OverflowError):
        return False


def _compare_zset(exp: Mapping[str, Any], act: Any, suffix: str) -> list[str]:
    if _same_zset(exp, act):
        return []
    expected = [(_ident(m), score_from_form(s)) for m, s in exp.items()]
    actual = [(_ident(m), _exact(s)) for m, s in _pairs(act)]
    if expected == actual:
        return []
    want, got = dict(expected), dict(actual)
    missing = [m for m, _ in expected if m not in got]
    extra = [m for m, _ in actual if m not in want]
    rescored = [m for m, s in expected if m in got and got[m] != s]
    lines: Iterator[str] = chain(
        (f"    member {_cut(_show(m))} missing (expected score {_show_score(want[m], suffix)})"
         for m in missing),
        (f"    unexpected member {_cut(_show(m))} @ {_show_score(got[m], suffix)}"
         for m in extra),
        (f"    member {_cut(_show(m))}: expected score {_show_score(want[m], suffix)}, "
         f"actual {_show_score(got[m], suffix)}" for m in rescored))
    total = len(missing) + len(extra) + len(rescored)
    if not total:
        order_exp, order_act = [m for m, _ in expected], [m for m, _ in actual]
        first = next((i for i, (a, b) in enumerate(zip(order_exp, order_act, strict=False))
                      if a != b), min(len(order_exp), len(order_act)))
        lines = iter([f"    order differs from rank {first}: expected "
                      f"{_cut(_show(order_exp[first:first + 5]))}, actual "
                      f"{_cut(_show(order_act[first:first + 5]))}"])
        total = 1
    return [f"  {total} member difference(s) (ZRANGE order, exact scores):",
            *_capped(([line] for line in lines), total, suffix)]


def value_matches(want: Any, got: Any) -> bool:
    """Does a hash value match its expectation (a string, or one of the rules)?"""
    if not isinstance(got, str):
        return False
    if isinstance(want, str):
        return want == got
    if "optional" in want:
        return re.fullmatch(want["optional"], got) is not None
    try:
        parsed = json.loads(got)
    except (ValueError, RecursionError):
        return False
    if "json" in want:
        return bool(parsed == want["json"])
    expected = want["json_includes"]
    return isinstance(parsed, dict) and all(
        key in parsed and parsed[key] == value for key, value in expected.items())


def is_optional(want: Any) -> bool:
    """A field that may be absent."""
    return isinstance(want, dict) and "optional" in want


def _field_line(field: Any, exp: Mapping[Any, Any], act: Mapping[Any, Any]) -> str | None:
    name = _cut(_show(field))
    if field not in act:
        return None if is_optional(exp[field]) else \
            f"  field {name} missing (expected {_show_value(exp[field])})"
    if field not in exp:
        return f"  unexpected field {name} = {_cut(_show(act[field]))}"
    want, got = exp[field], act[field]
    if value_matches(want, got):
        return None
    if isinstance(want, str):
        shown_want, shown_got = _cut_pair(_show(want), _show(got))
    else:
        shown_want, shown_got = _show_value(want), _cut(_show(got))
    return f"  field {name}: expected {shown_want}, actual {shown_got}"


def _compare_hash(suffix: str, exp: Mapping[Any, Any], act: Any) -> list[str]:
    if not isinstance(act, Mapping):
        return [f"  fields: expected a mapping, actual {_cut(_show(act))}"]
    if exp == act:  # then every expected value is a plain string, and equal
        return []
    fields = sorted(set(exp) | set(act), key=_ident)
    lines = [[line] for f in fields if (line := _field_line(f, exp, act)) is not None]
    return _capped(lines, len(lines), suffix)


def _show_value(value: Any) -> str:
    if isinstance(value, dict) and "optional" in value:
        return f"absent, or matching /{value['optional']}/"
    for rule, text in (("json", "JSON"), ("json_includes", "a JSON object including")):
        if isinstance(value, dict) and rule in value:
            return f"{text} {_cut(json.dumps(value[rule], sort_keys=True))}"
    return _cut(_show(value))


def _string_parts(body: Any) -> tuple[Any, Any]:
    """The value and PX expiry of a string entry (`form.string_parts`, for any shape)."""
    return (body.get("value"), body.get("pttl")) if isinstance(body, Mapping) else (body, None)


def _compare_string(exp: Any, act: Any) -> list[str]:
    lines = []
    (want_value, want), (got_value, got) = _string_parts(exp), _string_parts(act)
    if want_value != got_value:
        shown = _cut_pair(_show(want_value), _show(got_value))
        lines.append(f"  value: expected {shown[0]}, actual {shown[1]}")
    if want is None and got is not None:
        lines.append(f"  unexpected expiry: pttl {_show(got)} ms")
    elif want is not None and not (type(got) is int and 0 < got <= want):
        lines.append(f"  expiry: expected pttl in (0, {want}] ms, actual "
                     f"{'none' if got is None else _show(got)}")
    return lines


def _kind(entry: Any) -> str | None:
    """The type an entry states (its single key), or None for a shape that states none."""
    if type(entry) is dict:  # what snapshots and vectors hold: no ABC check needed
        return next(iter(entry), None)
    return next(iter(entry), None) if isinstance(entry, Mapping) else None


def _compare_key(suffix: str, exp: Mapping[str, Any], act: Mapping[str, Any]) -> list[str]:
    kind, actual_kind = _kind(exp), _kind(act)
    if actual_kind != kind or kind is None:
        return [f"  type: expected {kind}, actual {actual_kind}"]
    want, got = exp[kind], act[kind]
    if kind in ("list", "stream") and not isinstance(got, list | tuple):
        return [f"  {kind}: expected items, actual {_cut(_show(got))}"]
    if kind in ("list", "stream") and want == got:
        return []
    if kind == "list":
        return _sequence_diff(want, got, _show, "item difference(s) (LRANGE index, left to "
                              "right)", suffix)
    if kind == "stream":
        return _sequence_diff(want, got, _entry_text, "entry difference(s) (field lists, ids "
                              "ignored; index from the oldest entry)", suffix)
    if kind == "string":
        return _compare_string(want, got)
    if kind == "zset":
        return _compare_zset(want, got, suffix)
    if kind == "hash":
        return _compare_hash(suffix, want, got)
    if kind == "set":
        return _compare_set(suffix, want, got)
    return [f"  cannot compare keys of type {kind}"]


def _compare_set(suffix: str, want: Any, got: Any) -> list[str]:
    """Sets are compared as member sets: the missing members, then the unexpected ones."""
    if not isinstance(got, list | tuple):
        return [f"  set: expected members, actual {_cut(_show(got))}"]
    expected, actual = set(want), set(got)
    diffs = [[f"    member {_cut(_show(m))} missing"] for m in sorted(expected - actual)]
    diffs += [[f"    unexpected member {_cut(_show(m))}"] for m in sorted(actual - expected)]
    if not diffs:
        return []
    return [f"  {len(diffs)} member difference(s) (as a set, order ignored):",
            *_capped(iter(diffs), len(diffs), suffix)]


# --- whole states, returns, key names ---

def _preview(entry: Any) -> str:
    kind = _kind(entry)
    if kind is None:
        return _cut(_show(entry))
    body = entry[kind]
    if kind == "zset" and isinstance(body, list):  # a snapshot's [member, raw score] pairs
        body = dict(_pairs(body))
    try:
        text = json.dumps(body, default=_show)
    except (TypeError, ValueError, RecursionError):
        text = _show(body)
    return f"{kind} {text if len(text) <= 120 else text[:117] + '...'}"


def _may_be_absent(entry: Any) -> bool:
    """A hash whose every field is optional may be missing altogether."""
    fields = entry.get("hash") if isinstance(entry, Mapping) else None
    return isinstance(fields, dict) and all(is_optional(v) for v in fields.values())


def _key_diffs(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> Iterator[list[str]]:
    for suffix in sorted(set(expected) | set(actual), key=_ident):
        if suffix not in actual:
            if not _may_be_absent(expected[suffix]):
                yield [f"{suffix}: missing (expected {_preview(expected[suffix])})"]
        elif suffix not in expected:
            yield [f"{suffix}: unexpected key ({_preview(actual[suffix])})"]
        elif detail := _compare_key(suffix, expected[suffix], actual[suffix]):
            yield [f"{suffix}: {_kind(expected[suffix])} differs", *detail]


def compare_keys(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    """Differences between expected and actual keys (by suffix), key by key."""
    lines: list[str] = []
    details = _key_diffs(expected, actual)
    for detail in details:
        lines += detail
        if len(lines) > MAX_KEY_LINES:
            break
    if more := sum(1 for _ in details):
        lines.append(f"... and {more} more keys differ")
    return lines


def show_return(value: Any) -> str:
    """An op's return value; a BullMQ error code with its name and meaning."""
    text = _show(value)
    if type(value) is int and value in ERROR_CODES:
        name, meaning = ERROR_CODES[value]
        text += f" ({name}: {meaning})"
    return text


def compare_returns(expected: Sequence[Any], actual: Sequence[Any],
                    op_names: Sequence[str]) -> list[str]:
    """Differences between expected and actual op results, op by op."""
    absent = object()
    diffs = [(i, want, got) for i, (want, got) in enumerate(
        zip_longest(expected, actual, fillvalue=absent))
        if want is absent or got is absent or not result_matches(want, got)]

    def render(diff: tuple[int, Any, Any]) -> list[str]:
        index, want, got = diff
        name = op_names[index] if index < len(op_names) else "?"
        shown = _cut_pair(*("none" if v is absent else show_return(v) for v in (want, got)))
        return [f"return of op {index + 1} ({name}): expected {shown[0]}, actual {shown[1]}"]

    return _capped(map(render, diffs), len(diffs), "returns")


def compare_key_names(expected: Sequence[str], actual: Sequence[str]) -> list[str]:
    """Differences between expected and actual full key names."""
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    lines = [f"key name missing: {k}" for k in missing]
    lines += [f"key name not expected: {k}" for k in extra]
    return lines
