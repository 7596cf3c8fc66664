"""QueueModel at older protocol versions: each boundary of reference_impl.versions, on both sides.

Expected values are hand-computed from the notes on each boundary (docs/RESEARCH.md §1.1):
T = 1700000000000, S = 4096, so T*S = 6963200000000000 and (T+5000)*S = 6963200020480000.
Nothing here is derived by calling the model's score functions.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from model_helpers import T, events, got

from reference_impl.model import QueueModel
from reference_impl.ops import (
    Add,
    ChangeDelay,
    ChangePriority,
    MoveToActive,
    MoveToDelayed,
    Pause,
    Resume,
)
from reference_impl.store import Store

F = T + 5000
FS = 6963200020480000  # F * 4096


def at(version: tuple[int, int, int]) -> QueueModel:
    return QueueModel(Store(), version)


class TestDelayedScoreBefore586:
    def test_low_bits_are_the_id_counter(self) -> None:
        model = at((5, 8, 5))
        model.apply(Add("a", T, opts={"delay": 5000}))
        model.apply(Add("b", T, opts={"delay": 5000}))
        assert model.store.zrange("delayed") == [("1", FS + 1), ("2", FS + 2)]

    def test_custom_ids_take_the_counter_too(self) -> None:
        model = at((5, 8, 5))
        model.apply(Add("a", T, opts={"delay": 5000}, job_id="x"))
        assert model.store.zrange("delayed") == [("x", FS + 1)]

    def test_counter_low_bits_wrap_at_4096(self) -> None:
        model = QueueModel(Store(), (5, 8, 5))
        model.store.set("id", "4095")
        model.apply(Add("a", T, opts={"delay": 5000}))  # counter 4096: low bits 0
        assert model.store.zrange("delayed") == [("4096", FS)]

    def test_from_5_8_6_the_band_bump(self) -> None:
        model = at((5, 8, 6))
        model.apply(Add("a", T, opts={"delay": 5000}))
        model.apply(Add("b", T, opts={"delay": 5000}))
        assert model.store.zrange("delayed") == [("1", FS), ("2", FS + 1)]

    def test_event_delay_is_the_fire_time(self) -> None:
        model = at((5, 8, 5))
        model.apply(Add("a", T, opts={"delay": 5000}))
        assert events(model)[-1] == ["event", "delayed", "jobId", "1", "delay", str(F)]

    def test_sweep_bound_inclusive_before_5_8_6(self) -> None:
        # A job scored exactly (now+1)*S: promoted by 5.8.5, not by 5.8.6.
        for version, promoted in (((5, 8, 5), True), ((5, 8, 6), False)):
            model = at(version)
            model.store.zadd("delayed", (T + 1) * 4096, "j")
            model.apply(MoveToActive(T))
            assert (model.store.lrange("active") == ["j"]) is promoted, version
            assert model.store.exists("delayed") is not promoted, version


class TestCallerScoresBefore586:
    def test_change_delay_scores_from_now_plus_the_job_ids_low_bits(self) -> None:
        model = at((5, 8, 5))
        model.apply(Add("a", T, opts={"delay": 5000}))
        assert model.apply(ChangeDelay("1", 1000, T + 10)) == 0
        # (T+10+1000)*4096 + (1 & 0xfff); the event's delay is that score / 4096 as %.17g
        score = (T + 1010) * 4096 + 1
        assert model.store.zrange("delayed") == [("1", score)]
        assert events(model)[-1] == ["event", "delayed", "jobId", "1", "delay",
                                     "1700000001010.0002"]
        assert model.store.hget("1", "delay") == "1000"

    def test_non_numeric_ids_add_nothing(self) -> None:
        model = at((5, 8, 5))
        model.apply(Add("a", T, opts={"delay": 5000}, job_id="abc"))
        model.apply(ChangeDelay("abc", 1000, T))
        assert model.store.zrange("delayed") == [("abc", (T + 1000) * 4096)]

    def test_move_to_delayed_client_score(self) -> None:
        model = at((5, 8, 5))
        model.apply(Add("a", T))
        model.apply(MoveToActive(T))
        assert model.apply(MoveToDelayed("1", T + 5, 1000)) == 0
        assert model.store.zrange("delayed") == [("1", (T + 1005) * 4096 + 1)]


class TestMarkers:
    def test_delayed_marker_rewrote_member_0_before_5_1_10(self) -> None:
        model = at((5, 1, 9))
        model.apply(Add("s", T))
        model.apply(Add("d", T, opts={"delay": 5000}))
        # head score F*S + 2 (counter 2) over S
        assert model.store.zrange("marker") == [("0", Fraction(FS + 2, 4096))]

    def test_member_1_from_5_1_10(self) -> None:
        model = at((5, 1, 10))
        model.apply(Add("s", T))
        model.apply(Add("d", T, opts={"delay": 5000}))
        assert model.store.zrange("marker") == [("0", 0), ("1", Fraction(FS + 2, 4096))]

    def test_paused_delayed_add_writes_no_marker_before_5_8_7(self) -> None:
        for version, marker in (((5, 8, 6), []), ((5, 8, 7), [("1", F)])):
            model = at(version)
            model.store.hset("meta", "paused", "1")
            model.apply(Add("d", T, opts={"delay": 5000}))
            assert model.store.zrange("marker") == marker, version

    def test_activation_marker_from_5_28_0(self) -> None:
        for version, marker in (((5, 26, 2), []), ((5, 28, 0), [("0", 0)])):
            model = at(version)
            model.apply(Add("a", T))
            model.store.delete("marker")
            assert model.apply(MoveToActive(T)) == got("1")
            assert model.store.zrange("marker") == marker, version

    def test_change_delay_3_wrote_no_marker_and_no_events_cap(self) -> None:
        model = at((5, 1, 8))
        model.store.hset("1", "name", "seeded")
        model.store.zadd("delayed", 5, "1")
        assert model.apply(ChangeDelay("1", 1000, T)) == 0
        assert not model.store.exists("marker")
        assert not model.store.exists("meta")


class TestConcurrencyAndPriority:
    def test_concurrency_ignored_before_5_9_0(self) -> None:
        for version, fetched in (((5, 8, 7), got("2")), ((5, 9, 0), None)):
            model = at(version)
            model.store.hset("meta", "concurrency", "1")
            model.apply(Add("a", T))
            model.apply(MoveToActive(T))
            model.apply(Add("b", T))
            reply = model.apply(MoveToActive(T))
            assert (reply == fetched) if fetched else reply["job"] is None, version

    def test_priority_counter_was_signed_32_bit_before_5_8_1(self) -> None:
        for version, score in (((5, 8, 0), 2**32 - 2**31), ((5, 8, 1), 2**32 + 2**31)):
            model = at(version)
            model.store.set("pc", str(2**31 - 1))
            model.apply(Add("p", T, opts={"priority": 1}))  # c = 2^31
            assert model.store.zrange("prioritized") == [("1", score)], version

    def test_change_priority_to_0_stayed_prioritized_before_5_8_3(self) -> None:
        model = at((5, 8, 2))
        model.apply(Add("p", T, opts={"priority": 3}))
        assert model.apply(ChangePriority("1", 0)) == 0
        assert model.store.zrange("prioritized") == [("1", 2)]  # 0*2^32 + c=2
        assert not model.store.exists("wait")
        model = at((5, 8, 3))
        model.apply(Add("p", T, opts={"priority": 3}))
        model.apply(ChangePriority("1", 0))
        assert model.store.lrange("wait") == ["1"]


class TestLocksAndEventsCap:
    @pytest.mark.parametrize(("version", "code"), [((5, 5, 3), -2), ((5, 5, 4), -6)])
    def test_foreign_lock(self, version: tuple[int, int, int], code: int) -> None:
        model = at(version)
        model.apply(Add("a", T))
        model.apply(MoveToActive(T, token="theirs"))
        assert model.apply(MoveToDelayed("1", T, 1000, token="mine")) == code

    def test_move_to_delayed_wrote_no_events_cap_before_5_1_1(self) -> None:
        for version, written in (((5, 1, 0), False), ((5, 1, 1), True)):
            model = at(version)
            model.store.hset("1", "name", "seeded")
            model.store.lpush("active", "1")
            model.apply(MoveToDelayed("1", T, 1000, token="0"))
            assert (model.store.hget("meta", "opts.maxLenEvents") == "10000") is written


class TestPauseBefore600:
    def test_pause_renames_wait_and_adds_go_to_paused(self) -> None:
        model = at((5, 81, 5))
        model.apply(Add("a", T))
        assert model.apply(Pause()) is None
        model.apply(Add("b", T))
        assert not model.store.exists("wait")
        assert model.store.lrange("paused") == ["2", "1"]
        assert not model.store.exists("marker")

    def test_resume_renames_back_and_marks(self) -> None:
        model = at((5, 81, 5))
        model.apply(Add("a", T))
        model.apply(Pause())
        assert model.apply(Resume()) is None
        assert model.store.lrange("wait") == ["1"]
        assert not model.store.exists("paused")
        assert model.store.zrange("marker") == [("0", 0)]

    def test_from_6_0_0_wait_stays(self) -> None:
        model = at((6, 0, 0))
        model.apply(Add("a", T))
        assert model.apply(Pause()) == 0
        model.apply(Add("b", T))
        assert model.store.lrange("wait") == ["2", "1"]
        assert not model.store.exists("paused")
