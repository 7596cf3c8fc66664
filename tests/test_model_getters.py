"""The getters' model (`reference_impl.getters`), against values worked out by hand from the
6.x scripts (getCounts-1, getCountsPerPriority-2, getStateV2-8, getRanges-1, getJobs-1,
paginate-1, isFinished-3, isJobInList-1, isMaxed-2, getMetrics-2) and Redis's LRANGE and
ZRANGE index rules."""

from __future__ import annotations

import pytest

from reference_impl import versions
from reference_impl.getter_ops import (
    GetCounts,
    GetCountsPerPriority,
    GetJobs,
    GetMetrics,
    GetRanges,
    GetState,
    IsFinished,
    IsJobInList,
    IsMaxed,
    Paginate,
)
from reference_impl.getters import canonical_page, redis_slice
from reference_impl.model import QueueModel
from reference_impl.store import JsonText

T = 1_700_000_000_000
FIVE = ["e", "d", "c", "b", "a"]


def _model(**lists: list[str]) -> QueueModel:
    model = QueueModel(protocol=versions.CURRENT)
    for name, items in lists.items():
        for item in items:
            model.store.rpush(name, item)
    return model


@pytest.mark.parametrize(("start", "stop", "expected"), [
    (0, -1, FIVE), (1, 2, ["d", "c"]), (-2, -1, ["b", "a"]),
    (-9, 0, ["e"]),            # a start before the head reads as 0
    (3, 99, ["b", "a"]),       # a stop past the tail reads as the tail
    (4, 1, []), (5, 9, []),    # start after stop, start past the tail
    (0, -9, []),               # a stop before the head
])
def test_redis_slice(start: int, stop: int, expected: list[str]) -> None:
    assert redis_slice(FIVE, start, stop) == expected


def test_counts_read_lists_and_sets_and_drop_the_legacy_marker() -> None:
    model = _model(wait=["2", "1", f"0:{T}"], active=["3"])
    model.store.zadd("completed", T, "4")
    model.store.zadd("completed", T + 1, "5")
    # wait: 3 items, the last a marker: popped, 2 counted. "x" is no state: ZCARD 0.
    assert model.apply(GetCounts(("wait", "active", "completed", "x"))) == [2, 1, 2, 0]
    assert model.store.lrange("wait") == ["2", "1"]


def test_a_marker_alone_counts_zero_and_stays() -> None:
    model = _model(paused=[f"0:{T}"])
    assert model.apply(GetCounts(("paused",))) == [0]
    assert model.store.lrange("paused") == [f"0:{T}"]


def test_the_cutoff_counts_jobs_due_before_it() -> None:
    model = _model()
    # Scores: due * 4096 + 12 low bits. Cutoff T+2: bound (T+2)*4096 - 1.
    model.store.zadd("delayed", (T + 1) * 4096 + 4095, "in")   # due T+1, last slot: counted
    model.store.zadd("delayed", (T + 2) * 4096, "at")          # due at the cutoff: not
    assert model.apply(GetCounts(("delayed",), cutoff=T + 2)) == [1]
    assert model.apply(GetCounts(("delayed",))) == [2]


def test_priority_bands() -> None:
    model = _model(wait=["w"])
    band = 4_294_967_296
    for member, score in (("a", band), ("b", 2 * band - 1), ("c", 2 * band), ("d", 7 * band + 5)):
        model.store.zadd("prioritized", score, member)
    assert model.apply(GetCountsPerPriority((0, 1, 2, 7, 3))) == [1, 2, 1, 1, 0]


def test_state_order() -> None:
    model = _model(active=["both"], wait=["w"], paused=["p"])
    model.store.zadd("delayed", T, "both")
    model.store.zadd("waiting-children", T, "w")
    # delayed is checked before active; wait before waiting-children; paused is "waiting".
    assert [model.apply(GetState(job)) for job in ("both", "w", "p", "none")] == \
        ["delayed", "waiting", "waiting", "unknown"]
    assert model.apply(GetState("both", legacy=True)) == "delayed"


@pytest.mark.parametrize(("start", "end", "asc", "expected"), [
    (1, 2, False, ["d", "c"]),        # LRANGE 1 2
    (1, 2, True, ["c", "b"]),         # LRANGE -3 -2
    (0, 0, True, ["a"]),              # LRANGE -1 -1: the oldest
    (1, -1, True, ["e", "d", "c", "b"]),  # LRANGE 0 -2
    (0, -1, True, FIVE),              # LRANGE 0 -1
])
def test_list_ranges(start: int, end: int, asc: bool, expected: list[str]) -> None:
    model = _model(wait=FIVE)
    assert model.apply(GetRanges(("wait",), start, end, asc)) == [expected]


def test_set_ranges_by_rank() -> None:
    model = _model()
    for n, member in enumerate("abcde"):
        model.store.zadd("failed", T + n, member)
    assert model.apply(GetRanges(("failed", "completed"), 0, 1, asc=True)) == [["a", "b"], []]
    assert model.apply(GetRanges(("failed",), 0, 1)) == [["e", "d"]]


def test_is_finished() -> None:
    model = _model(wait=["w"])
    model.store.zadd("completed", T, "c")
    model.store.hset("c", "returnvalue", JsonText({"ok": 1}))
    model.store.zadd("failed", T, "f")
    model.store.hset("f", "failedReason", "boom")
    model.store.hset("w", "name", "x")
    assert [model.apply(IsFinished(job)) for job in ("c", "f", "w", "gone")] == [1, 2, 0, -1]
    assert model.apply(IsFinished("c", return_value=True)) == [1, '{"ok":1}']
    assert model.apply(IsFinished("f", return_value=True)) == [2, "boom"]
    assert model.apply(IsFinished("w", return_value=True)) == [0]


def test_in_list_and_maxed() -> None:
    model = _model(wait=["1"], active=["2", "3"])
    assert model.apply(IsJobInList("wait", "1")) == 1
    assert model.apply(IsJobInList("active", "1")) is None
    assert model.apply(IsMaxed()) is None           # no concurrency set
    model.store.hset("meta", "concurrency", "2")
    assert model.apply(IsMaxed()) == 1              # 2 active >= 2
    model.store.hset("meta", "concurrency", "3")
    assert model.apply(IsMaxed()) is None


def test_metrics() -> None:
    model = _model(**{"metrics:failed:data": ["4", "0", "1"]})
    model.store.hset("metrics:failed", "count", "9")
    model.store.hset("metrics:failed", "prevTS", str(T))
    assert model.apply(GetMetrics("failed", 1, -1)) == [["9", str(T), None], ["0", "1"], 3]
    assert model.apply(GetMetrics("completed")) == [[None, None, None], [], 0]


def _with_hashes(model: QueueModel, *ids: str) -> QueueModel:
    for job in ids:
        model.store.hset(job, "name", f"n{job}")
    return model


def test_get_jobs_skips_hashless_ids_and_reverses_an_ascending_list() -> None:
    # wait as stored: e d c b a (e newest); hashes for e, c, a only.
    model = _with_hashes(_model(wait=FIVE), "e", "c", "a")
    # Unbounded, descending: LRANGE 0 -1, the hashless d and b skipped.
    assert model.apply(GetJobs(("wait",))) == [
        [["e", {"name": "ne"}], ["c", {"name": "nc"}], ["a", {"name": "na"}]]]
    # Ascending 0..0 with LLEN 5: LRANGE -1 -1 is a, reversed: a. A 0..1 window is LRANGE
    # -2 -1 (b a), reversed a b: b has no hash, so the next read is 2..3, LRANGE -4 -3 (d c),
    # reversed c d: c fills the window.
    assert model.apply(GetJobs(("wait",), 0, 1, asc=True)) == [
        [["a", {"name": "na"}], ["c", {"name": "nc"}]]]


def test_get_jobs_backfills_at_most_five_reads_and_never_a_negative_window() -> None:
    model = QueueModel(protocol=versions.CURRENT)
    for rank, job in enumerate(["m1", "m2", "m3", "m4", "m5", "k"]):
        model.store.zadd("failed", T + rank, job)
    _with_hashes(model, "k", "m5")
    # 0..0 ascending: reads ranks 0, 1, 2, 3 (hashless), then 4 (m5, found): 5 reads.
    assert model.apply(GetJobs(("failed",), 0, 0, asc=True)) == [[["m5", {"name": "nm5"}]]]
    model.store.delete("m5")
    # Now rank 4 is hashless too and k at rank 5 would take a sixth read: none found.
    assert model.apply(GetJobs(("failed",), 0, 0, asc=True)) == [[]]
    # -2..-1 ascending: ZRANGE -2 -1 is m5 and k, read once: k only.
    assert model.apply(GetJobs(("failed",), -2, -1, asc=True)) == [[["k", {"name": "nk"}]]]


def test_get_jobs_ascending_past_the_end_reads_nothing() -> None:
    model = _with_hashes(_model(active=["b", "a"]), "a", "b")
    # 2..3 ascending would be LRANGE -4 -3, which Redis clamps to 0 0 (b): the LLEN guard
    # answers nothing instead.
    assert model.apply(GetJobs(("active",), 2, 3, asc=True)) == [[]]


def _processed(model: QueueModel, *children: str) -> None:
    for child in children:
        model.store.hset("p:processed", f"<q>:{child}", f"v{child}")


def test_paginate_takes_the_items_whose_offset_is_in_the_page() -> None:
    model = QueueModel(protocol=versions.CURRENT)
    _processed(model, "a", "b", "c", "d")
    # Page 1..2: offsets 1 and 2 (b, c); at d the offset 3 reaches start + size = 3: stop.
    assert model.apply(Paginate("p:processed", 1, 2)) == [
        "0", 3, [["<q>:b", "vb"], ["<q>:c", "vc"]], 4, []]
    # End -1 is the count, 4: a page of 4 - 1 + 1 = 4 from 1, so b, c, d and offset 4.
    assert model.apply(Paginate("p:processed", 1, -1)) == [
        "0", 4, [["<q>:b", "vb"], ["<q>:c", "vc"], ["<q>:d", "vd"]], 4, []]
    # Offset 3 from an earlier call: a is at offset 3, b at 4; page 4..4 is b, then c at 5
    # stops the scan.
    assert model.apply(Paginate("p:processed", 4, 4, offset=3)) == [
        "0", 5, [["<q>:b", "vb"]], 4, []]
    # A page after the chunk: 3 + 4 = 7 < 9, so the offset moves past the chunk.
    assert model.apply(Paginate("p:processed", 9, 9, offset=3)) == ["0", 7, [], 4, []]


def test_paginate_fetches_each_items_job_and_answers_a_missing_key() -> None:
    model = QueueModel(protocol=versions.CURRENT)
    model.store.sadd("p:dependencies", "<q>:b")
    model.store.sadd("p:dependencies", "<q>:a")
    _with_hashes(model, "a")
    # A set's items in text order (the server's own order is not the protocol's); b has no
    # hash: an empty one.
    assert model.apply(Paginate("p:dependencies", fetch_jobs=True)) == [
        "0", 2, ["<q>:a", "<q>:b"], 2, [{"name": "na"}, {}]]
    assert model.apply(Paginate("p:gone")) == [0, 0, [], 0]


def test_paginate_refuses_a_partial_page_of_a_set() -> None:
    model = QueueModel(protocol=versions.CURRENT)
    for child in ("a", "b", "c"):
        model.store.sadd("p:dependencies", f"<q>:{child}")
    with pytest.raises(NotImplementedError, match="server"):
        model.apply(Paginate("p:dependencies", 0, 0))


def test_a_page_of_another_shape_is_left_as_it_came() -> None:
    # A set's page is put in text order, its jobs beside it; a hash's pairs keep their order.
    assert canonical_page(["0", 2, ["b", "a"], 2, [{"n": "b"}, {}]]) == \
        ["0", 2, ["a", "b"], 2, [{}, {"n": "b"}]]
    assert canonical_page(["0", 2, [["b", "1"], ["a", "2"]], 2, []]) == \
        ["0", 2, [["b", "1"], ["a", "2"]], 2, []]
    # A broken candidate's reply: mixed items, an extra element, a missing key's four.
    for odd in (["0", 2, [1, "a"], 2, []], ["0", 1, ["a"], 1, [], "x"], [0, 0, [], 0]):
        assert canonical_page(odd) == odd
