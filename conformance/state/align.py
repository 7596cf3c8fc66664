"""Where two sequences differ, in n log n time and without recursion (for the state diffs of
`conformance.state.compare`: a 1000-entry events stream or a 4096-job band that differs everywhere
must cost no more to show than one that matches).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable, Sequence
from contextlib import suppress
from typing import Any

#: One difference of two sequences: (expected index, actual index), None on the side without.
Step = tuple[int | None, int | None]


def _once(items: Sequence[Any], lo: int, hi: int) -> dict[Hashable, int | None]:
    """Item (a list as a tuple) -> its index in items[lo:hi], or None when it occurs more than
    once. An unhashable item is left out: it never anchors."""
    seen: dict[Hashable, int | None] = {}
    for index in range(lo, hi):
        key = tuple(items[index]) if isinstance(items[index], list) else items[index]
        with suppress(TypeError):
            seen[key] = None if key in seen else index
    return seen


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of `pairs` (sorted by first index) whose second index increases:
    patience sorting, n log n, iterative."""
    tails: list[int] = []  # tails[k]: the pair ending the best run of length k + 1 so far
    tail_js: list[int] = []
    back = [-1] * len(pairs)
    for p, (_, j) in enumerate(pairs):
        k = bisect_left(tail_js, j)
        back[p] = tails[k - 1] if k else -1
        tails[k:k + 1], tail_js[k:k + 1] = [p], [j]  # replace, or append when k == len
    run, p = [], tails[-1] if tails else -1
    while p >= 0:
        run.append(pairs[p])
        p = back[p]
    return run[::-1]


def _by_position(expected: Sequence[Any], actual: Sequence[Any], i: int, end_i: int, j: int,
                 end_j: int) -> list[Step]:
    common = min(end_i - i, end_j - j)
    steps: list[Step] = [(i + k, j + k) for k in range(common) if expected[i + k] != actual[j + k]]
    steps += [(k, None) for k in range(i + common, end_i)]
    return steps + [(None, k) for k in range(j + common, end_j)]


def sequence_differences(expected: Sequence[Any], actual: Sequence[Any]) -> list[Step]:
    """Where two sequences differ, in order: n log n at worst, no recursion.

    The common head and tail are skipped. The rest is anchored on equal items found exactly
    once on each side (the longest run of them in the same order on both), and the items
    between two anchors are paired by position: (i, j) where they differ, (i, None) for an
    expected item left over, (None, j) for an actual one. When pairing the whole rest by
    position gives fewer differences (a reversed list), that is the answer instead.
    """
    lo, end_e, end_a = 0, len(expected), len(actual)
    while lo < end_e and lo < end_a and expected[lo] == actual[lo]:
        lo += 1
    while end_e > lo and end_a > lo and expected[end_e - 1] == actual[end_a - 1]:
        end_e, end_a = end_e - 1, end_a - 1
    in_actual = _once(actual, lo, end_a)
    pairs = [(i, j) for key, i in _once(expected, lo, end_e).items()
             if i is not None and (j := in_actual.get(key)) is not None
             and expected[i] == actual[j]]
    anchored: list[Step] = []
    i, j = lo, lo
    for next_i, next_j in [*_increasing(pairs), (end_e, end_a)]:
        anchored += _by_position(expected, actual, i, next_i, j, next_j)
        i, j = next_i + 1, next_j + 1
    plain = _by_position(expected, actual, lo, end_e, lo, end_a)
    return plain if len(plain) < len(anchored) else anchored
