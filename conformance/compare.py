"""Compare a Redis snapshot with a vector's expectation and describe every difference.

The rules (also stated in every vector file header): the expected key set is complete; zsets
are compared in order with exact scores; stream entry ids are ignored; `pttl: N` means an expiry
in (0, N]; `{json: X}` hash values are compared parsed.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from reference_impl.form import kind_of, score_from_form, string_parts
from reference_impl.scores import BAND, TIER


def _exact(raw: Any) -> Fraction | None:
    """The exact value of a score Redis sent (it always parses as a double)."""
    if isinstance(raw, bytes):
        raw = raw.decode()
    try:
        return Fraction(float(raw))
    except (TypeError, ValueError, OverflowError):
        return None


def _show_score(value: Fraction | None, suffix: str) -> str:
    if value is None:
        return "(not a number)"
    if value.denominator != 1:
        return f"{float(value)!r} (= {value.numerator}/{value.denominator})"
    text = str(value.numerator)
    if suffix == "delayed" and value.numerator >= 0:
        fire, pos = divmod(value.numerator, BAND)
        text += f" (F={fire} +{pos})"
    elif suffix == "prioritized" and value.numerator >= 0:
        tier, counter = divmod(value.numerator, TIER)
        text += f" (P={tier} c={counter})"
    return text


#: Most lines of detail shown for one key.
MAX_DETAIL = 12


def _capped(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_DETAIL:
        return lines
    return [*lines[:MAX_DETAIL], f"    ... and {len(lines) - MAX_DETAIL} more"]


def _ndiff(expected: list[str], actual: list[str], indent: str = "    ") -> list[str]:
    lines = []
    for line in difflib.ndiff(expected, actual):
        if line.startswith(("- ", "+ ")):
            lines.append(f"{indent}{'expected' if line[0] == '-' else 'actual  '} {line[2:]}")
    return _capped(lines)


def _parse_json(raw: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(raw)
    except (TypeError, ValueError):
        return False, None


def value_matches(want: Any, got: str) -> bool:
    """Does a hash value match its expectation (a string, or one of the rules)?"""
    if isinstance(want, str):
        return want == got
    if "optional" in want:
        return re.fullmatch(want["optional"], got) is not None
    ok, parsed = _parse_json(got)
    if not ok:
        return False
    if "json" in want:
        return bool(parsed == want["json"])
    expected = want["json_includes"]
    return isinstance(parsed, dict) and all(
        key in parsed and parsed[key] == value for key, value in expected.items())


def is_optional(want: Any) -> bool:
    """A field that may be absent."""
    return isinstance(want, dict) and "optional" in want


def _compare_zset(exp: Mapping[str, Any], act: Sequence[Sequence[Any]],
                  suffix: str) -> list[str]:
    expected = [(str(m), score_from_form(s)) for m, s in exp.items()]
    actual = [(str(m), _exact(s)) for m, s in act]
    if expected == actual:
        return []
    want, got = dict(expected), dict(actual)
    lines = [f"    member {m!r} missing (expected score {_show_score(want[m], suffix)})"
             for m, _ in expected if m not in got]
    lines += [f"    unexpected member {m!r} @ {_show_score(got[m], suffix)}"
              for m, _ in actual if m not in want]
    lines += [f"    member {m!r}: expected score {_show_score(s, suffix)}, "
              f"actual {_show_score(got[m], suffix)}"
              for m, s in expected if m in got and got[m] != s]
    if not lines:
        order_exp = [m for m, _ in expected]
        order_act = [m for m, _ in actual]
        first = next(i for i, (a, b) in enumerate(zip(order_exp, order_act, strict=True))
                     if a != b)
        lines.append(f"    order differs from rank {first}: expected "
                     f"{order_exp[first:first + 5]}, actual {order_act[first:first + 5]}")
    return [f"  {len(lines)} member difference(s) (ZRANGE order, exact scores):",
            *_capped(lines)]


def _compare_hash(exp: Mapping[str, Any], act: Mapping[str, str]) -> list[str]:
    lines = []
    for field in sorted(set(exp) | set(act)):
        if field not in act:
            if not is_optional(exp[field]):
                lines.append(f"  field {field!r} missing (expected {_show_value(exp[field])})")
        elif field not in exp:
            lines.append(f"  unexpected field {field!r} = {act[field]!r}")
        else:
            want = exp[field]
            if not value_matches(want, act[field]):
                lines.append(f"  field {field!r}: expected {_show_value(want)}, "
                             f"actual {act[field]!r}")
    return lines


def _show_value(value: Any) -> str:
    if isinstance(value, dict) and "json" in value:
        return f"JSON {json.dumps(value['json'], sort_keys=True)}"
    if isinstance(value, dict) and "json_includes" in value:
        return f"a JSON object including {json.dumps(value['json_includes'], sort_keys=True)}"
    if isinstance(value, dict) and "optional" in value:
        return f"absent, or matching /{value['optional']}/"
    return repr(value)


def _compare_key(suffix: str, exp: Mapping[str, Any], act: Mapping[str, Any]) -> list[str]:
    kind, actual_kind = kind_of(exp), kind_of(act)
    if actual_kind != kind:
        return [f"  type: expected {kind}, actual {actual_kind}"]
    if kind == "string":
        lines = []
        (want_value, want), (got_value, got) = string_parts(exp[kind]), string_parts(act[kind])
        if want_value != got_value:
            lines.append(f"  value: expected {want_value!r}, actual {got_value!r}")
        if want is None and got is not None:
            lines.append(f"  unexpected expiry: pttl {got} ms")
        elif want is not None and (got is None or not 0 < got <= want):
            lines.append(f"  expiry: expected pttl in (0, {want}] ms, actual "
                         f"{'none' if got is None else got}")
        return lines
    if kind == "list":
        if list(exp[kind]) == list(act[kind]):
            return []
        return ["  items differ (left to right):",
                *_ndiff([str(i) for i in exp[kind]], [str(i) for i in act[kind]])]
    if kind == "zset":
        return _compare_zset(exp[kind], act[kind], suffix)
    if kind == "hash":
        return _compare_hash(exp[kind], act[kind])
    if kind == "stream":
        exp_lines = [" ".join(e) for e in exp[kind]]
        act_lines = [" ".join(e) for e in act[kind]]
        if exp_lines == act_lines:
            return []
        return ["  entries differ (field lists, ids ignored):", *_ndiff(exp_lines, act_lines)]
    return [f"  cannot compare keys of type {kind}"]


def _preview(entry: Mapping[str, Any]) -> str:
    kind = kind_of(entry)
    body = entry[kind]
    if kind == "zset" and isinstance(body, list):  # a snapshot's [member, raw score] pairs
        body = dict(body)
    text = json.dumps(body, default=str)
    return f"{kind} {text if len(text) <= 120 else text[:117] + '...'}"


def _may_be_absent(entry: Mapping[str, Any]) -> bool:
    """A hash whose every field is optional may be missing altogether."""
    fields = entry.get("hash")
    return isinstance(fields, dict) and all(is_optional(v) for v in fields.values())


def compare_keys(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    """Differences between expected and actual keys (by suffix), key by key."""
    lines: list[str] = []
    for suffix in sorted(set(expected) | set(actual)):
        if len(lines) > 200:
            lines.append("... more keys differ")
            break
        if suffix not in actual:
            if not _may_be_absent(expected[suffix]):
                lines.append(f"{suffix}: missing (expected {_preview(expected[suffix])})")
        elif suffix not in expected:
            lines.append(f"{suffix}: unexpected key ({_preview(actual[suffix])})")
        else:
            detail = _compare_key(suffix, expected[suffix], actual[suffix])
            if detail:
                lines.append(f"{suffix}: {kind_of(expected[suffix])} differs")
                lines.extend(detail)
    return lines


def compare_returns(expected: Sequence[Any], actual: Sequence[Any],
                    op_names: Sequence[str]) -> list[str]:
    """Differences between expected and actual op results, op by op."""
    lines = []
    for index, (want, got, name) in enumerate(zip(expected, actual, op_names, strict=True)):
        if want != got:
            lines.append(f"return of op {index + 1} ({name}): expected {want!r}, "
                         f"actual {got!r}")
    return lines


def compare_key_names(expected: Sequence[str], actual: Sequence[str]) -> list[str]:
    """Differences between expected and actual full key names."""
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    lines = [f"key name missing: {k}" for k in missing]
    lines += [f"key name not expected: {k}" for k in extra]
    return lines
