"""The shape of diffs: capped per key with a count of the rest, aligned without recursion, any
value rendered, and BullMQ error codes named in return diffs."""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.state.align import sequence_differences
from conformance.state.compare import (
    MAX_DIFFERENCES,
    MAX_KEY_LINES,
    MAX_VALUE_CHARS,
    compare_keys,
    compare_returns,
)
from reference_impl.model import ERROR_CODES
from reference_impl.scores import BAND

PROTOCOL = Path(__file__).resolve().parents[1] / "docs" / "RESEARCH.md"


def _details(diff: list[str]) -> list[str]:
    """The per-difference lines of a one-key diff (after the key and count headers)."""
    return [line for line in diff[2:] if not line.lstrip().startswith("...")]


@pytest.fixture
def low_recursion_limit() -> Iterator[None]:
    """A recursion limit only 100 frames above the test's own depth."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(context=0)) + 100)
    yield
    sys.setrecursionlimit(previous)


def test_a_stream_differing_in_every_entry_shows_the_first_ones_and_counts_the_rest() -> None:
    expected = [["event", "waiting", "jobId", f"d{i}", "prev", "delayed"] for i in range(1000)]
    actual = [entry[:4] for entry in expected]
    diff = compare_keys({"events": {"stream": expected}}, {"events": {"stream": actual}})
    assert diff[0] == "events: stream differs"
    assert diff[1].startswith("  1000 entry difference(s)")
    details = _details(diff)
    assert len(details) == 2 * MAX_DIFFERENCES  # an expected and an actual line per entry
    assert details[:2] == ["    [0] expected   event waiting jobId d0 prev delayed",
                           "    [0] actual     event waiting jobId d0"]
    assert "jobId d9 " in details[-2] and details[-2].startswith("    [9] expected")
    assert diff[-1] == f"    ... and {1000 - MAX_DIFFERENCES} more differences in events"


def test_a_10000_item_list_differing_throughout_is_capped() -> None:
    expected = [str(i) for i in range(10_000)]
    actual = [f"x{i}" for i in range(10_000)]
    diff = compare_keys({"wait": {"list": expected}}, {"wait": {"list": actual}})
    assert diff[1].startswith("  10000 item difference(s)")
    assert len(_details(diff)) == 2 * MAX_DIFFERENCES
    assert diff[2].endswith("expected   '0'") and diff[3].endswith("actual     'x0'")
    assert diff[-1] == f"    ... and {10_000 - MAX_DIFFERENCES} more differences in wait"


@pytest.mark.usefixtures("low_recursion_limit")
def test_100k_entries_diff_without_recursion() -> None:
    expected = [["event", "added", "jobId", str(i)] for i in range(100_000)]
    # every third entry gone, and every entry left loses its last field
    actual = [entry[:3] for i, entry in enumerate(expected) if i % 3]
    assert len(sequence_differences(expected, actual)) == 100_000
    diff = compare_keys({"events": {"stream": expected}}, {"events": {"stream": actual}})
    assert diff[1].startswith("  100000 entry difference(s)")
    assert diff[-1].endswith(f"{100_000 - MAX_DIFFERENCES} more differences in events")
    reversed_list = compare_keys({"wait": {"list": [str(i) for i in range(100_000)]}},
                                 {"wait": {"list": [str(i) for i in reversed(range(100_000))]}})
    assert reversed_list[1].startswith("  100000 item difference(s)")
    assert len(reversed_list) == 2 + 2 * MAX_DIFFERENCES + 1


def test_items_missing_or_added_in_the_middle_are_aligned() -> None:
    expected = [f"e{i}" for i in range(1000)]
    actual = [*expected[:300], "new", *expected[300:700], *expected[701:]]
    assert sequence_differences(expected, actual) == [(None, 300), (700, None)]
    diff = compare_keys({"wait": {"list": expected}}, {"wait": {"list": actual}})
    assert diff[1:] == ["  2 item difference(s) (LRANGE index, left to right):",
                        "    [300] unexpected 'new'",
                        "    [700] missing    'e700'"]


def test_a_missing_event_after_every_job_is_reported_once_per_job() -> None:
    expected = [x for i in range(500) for x in (["event", "added", "jobId", str(i)],
                                                ["event", "waiting", "jobId", str(i)])]
    actual = [e for e in expected if e[1] == "added"]
    steps = sequence_differences(expected, actual)
    assert steps == [(i, None) for i in range(1, 1000, 2)]


def test_a_band_whose_every_score_differs_is_capped() -> None:
    floor = 1_700_000_005_000 * BAND
    expected = {f"s{i}": floor + i for i in range(4096)}
    actual = [[f"s{i}", str(floor + i + 1)] for i in range(4096)]
    diff = compare_keys({"delayed": {"zset": expected}}, {"delayed": {"zset": actual}})
    assert diff[1] == "  4096 member difference(s) (ZRANGE order, exact scores):"
    assert len(_details(diff)) == MAX_DIFFERENCES
    assert diff[2] == (f"    member 's0': expected score {floor} (F=1700000005000 +0), "
                       f"actual {floor + 1} (F=1700000005000 +1)")
    assert diff[-1] == f"    ... and {4096 - MAX_DIFFERENCES} more differences in delayed"


def test_hash_fields_are_capped() -> None:
    expected = {f"f{i:03}": "a" for i in range(50)}
    diff = compare_keys({"1": {"hash": expected}}, {"1": {"hash": {}}})
    assert len(diff) == 1 + MAX_DIFFERENCES + 1  # the key, the fields shown, the count
    assert diff[1] == "  field 'f000' missing (expected 'a')"
    assert diff[-1] == f"    ... and {50 - MAX_DIFFERENCES} more differences in 1"


def test_many_differing_keys_are_counted_past_the_line_limit() -> None:
    keys = 100
    expected = {f"k{i:03}": {"list": [str(j) for j in range(20)]} for i in range(keys)}
    actual: dict[str, dict[str, Any]] = {k: {"list": []} for k in expected}
    diff = compare_keys(expected, actual)
    shown = sum(1 for line in diff if line.endswith(": list differs"))
    assert len(diff) <= MAX_KEY_LINES + 2 * MAX_DIFFERENCES + 4
    assert diff[-1] == f"... and {keys - shown} more keys differ"


def test_long_values_are_cut_around_their_first_difference() -> None:
    want, got = "a" * 5000 + "X" + "b" * 5000, "a" * 5000 + "Y" + "b" * 5000
    diff = compare_keys({"l": {"list": [want]}}, {"l": {"list": [got]}})
    assert "X" in diff[2] and "Y" in diff[3]
    assert all(len(line) < MAX_VALUE_CHARS + 40 for line in diff)
    hash_diff = compare_keys({"1": {"hash": {"data": want}}}, {"1": {"hash": {"data": got}}})
    assert "X" in hash_diff[1] and "Y" in hash_diff[1]


HUGE = 10 ** 5000  # more digits than repr() prints by default

ODD_VALUES: list[object] = [None, b"bytes", HUGE, [[1, [2, [3]]], None], {"a": [1]}, 1.5, True,
                            "", "tab\there", "line\nbreak"]


@pytest.mark.parametrize("value", ODD_VALUES, ids=[f"{type(v).__name__}-{i}"
                                                    for i, v in enumerate(ODD_VALUES)])
def test_values_of_any_shape_give_a_diff_not_a_crash(value: object) -> None:
    cases: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"l": {"list": ["1"]}}, {"l": {"list": ["1", value]}}),
        ({"l": {"list": [value]}}, {"l": {"list": ["x"]}}),
        ({"s": {"stream": [["event", "x"]]}}, {"s": {"stream": [["event", value]]}}),
        ({"s": {"stream": [["event", "x"]]}}, {"s": {"stream": [value]}}),
        ({"z": {"zset": {"1": 5}}}, {"z": {"zset": [["1", value]]}}),
        ({"z": {"zset": {"1": 5}}}, {"z": {"zset": [[value, "5"]]}}),
        ({"z": {"zset": {"1": 5}}}, {"z": {"zset": [value]}}),
        ({"h": {"hash": {"f": "v"}}}, {"h": {"hash": {"f": value}}}),
        ({"h": {"hash": {"f": "v"}}}, {"h": {"hash": value}}),
        ({"t": {"string": "1"}}, {"t": {"string": value}}),
        ({"t": {"string": {"value": "1", "pttl": 5}}}, {"t": {"string": {"value": "1",
                                                                        "pttl": value}}}),
        ({"x": {"list": ["1"]}}, {"x": value}),
        ({}, {"y": {"list": value}}),
    ]
    for expected, actual in cases:
        diff = compare_keys(expected, actual)
        assert diff, (expected, actual)
        assert all(isinstance(line, str) for line in diff)
    returns = compare_returns([0], [value], ["promote"])
    assert len(returns) == 1 and returns[0].startswith("return of op 1 (promote): expected 0")


def test_a_huge_integer_is_named_not_printed() -> None:
    diff = compare_returns([0], [HUGE], ["promote"])
    assert f"{HUGE.bit_length()} bits" in diff[0]


def test_returns_of_unequal_length_are_reported() -> None:
    assert compare_returns([0, 0], [0], ["promote", "promote"]) == [
        "return of op 2 (promote): expected 0, actual none"]


def test_return_diffs_are_capped() -> None:
    diff = compare_returns([0] * 50, [1] * 50, ["promote"] * 50)
    assert len(diff) == MAX_DIFFERENCES + 1
    assert diff[-1] == f"    ... and {50 - MAX_DIFFERENCES} more differences in returns"


def _protocol_codes() -> dict[int, str]:
    """The code -> Node name table of RESEARCH.md §7.4."""
    text = PROTOCOL.read_text(encoding="utf-8")
    section = text.split("### 7.4 Error codes", 1)[1].split("\n#", 1)[0]
    return {int(code): name for code, name in re.findall(r"\| (-\d+) \| (\w+) ", section)}


def test_error_code_table_matches_the_protocol() -> None:
    assert _protocol_codes() == {code: name for code, (name, _) in ERROR_CODES.items()}


@pytest.mark.parametrize(("code", "name"), sorted(_protocol_codes().items()))
def test_error_codes_are_named_in_return_diffs(code: int, name: str) -> None:
    diff = compare_returns([0], [code], ["promote"])
    assert diff[0].startswith(f"return of op 1 (promote): expected 0, actual {code} ({name}: ")
    expected_side = compare_returns([code], [0], ["changeDelay"])
    assert expected_side[0].startswith(f"return of op 1 (changeDelay): expected {code} ({name}")
    assert expected_side[0].endswith(", actual 0")


def test_only_integer_codes_are_named() -> None:
    diff = compare_returns([0, 0, 0, 0], ["-1", -12, True, 1], ["a", "b", "c", "d"])
    assert diff == ["return of op 1 (a): expected 0, actual '-1'",
                    "return of op 2 (b): expected 0, actual -12",
                    "return of op 3 (c): expected 0, actual True",
                    "return of op 4 (d): expected 0, actual 1"]
