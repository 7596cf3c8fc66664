"""Vector form of queue state (reference_impl.form): score spelling and store round trips.

Decimal expansions are computed by hand: 1/4096 = 0.000244140625 (= 5^12 / 10^12).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.form import (
    form_to_store,
    kind_of,
    score_from_form,
    score_to_form,
    store_to_form,
    string_parts,
)
from reference_impl.model import QueueModel
from reference_impl.ops import Add, ChangeDelay, MoveToActive
from reference_impl.store import Hash, JsonText, List, Store, Str, Stream, ZSet

T = 1700000000000


class TestScoreToForm:
    @pytest.mark.parametrize(
        "score",
        [0, 1, 4294967297, 6963200020480000, 9007199254740991, 9007199254740992,
         -9007199254740992],
    )
    def test_ints_up_to_2_53_stay_int(self, score: int) -> None:
        out = score_to_form(score)
        assert type(out) is int
        assert out == score

    def test_above_2_53_becomes_string(self) -> None:
        assert score_to_form(9007199254740993) == "9007199254740993"  # 2^53 + 1
        assert score_to_form(9007199254745088) == "9007199254745088"  # 2^53 + 4096
        assert score_to_form(-9007199254740993) == "-9007199254740993"

    def test_integral_fraction_is_int(self) -> None:
        out = score_to_form(Fraction(6963200020480000, 4096))  # = 1700000005000
        assert type(out) is int
        assert out == 1700000005000

    def test_fraction_head_plus_one(self) -> None:
        # 6963200020480001/4096 = 1700000005000 + 1/4096 = 1700000005000 + 0.000244140625
        assert score_to_form(Fraction(6963200020480001, 4096)) == "1700000005000.000244140625"

    def test_small_fractions(self) -> None:
        assert score_to_form(Fraction(1, 4096)) == "0.000244140625"
        assert score_to_form(Fraction(3, 4096)) == "0.000732421875"  # 3 * 0.000244140625
        assert score_to_form(Fraction(1, 2)) == "0.5"
        assert score_to_form(Fraction(-1, 4)) == "-0.25"

    def test_band_ceiling_over_4096(self) -> None:
        # 6963200020484095/4096 = 1700000005000 + 4095/4096; 4095/4096 = 1 - 0.000244140625
        assert score_to_form(Fraction(6963200020484095, 4096)) == "1700000005000.999755859375"

    def test_no_finite_decimal(self) -> None:
        with pytest.raises(ValueError):
            score_to_form(Fraction(1, 3))


class TestScoreFromForm:
    def test_int(self) -> None:
        assert score_from_form(6963200020480000) == Fraction(6963200020480000)

    def test_big_int_string(self) -> None:
        assert score_from_form("9007199254740993") == Fraction(9007199254740993)

    def test_decimal_string(self) -> None:
        assert score_from_form("1700000005000.000244140625") == Fraction(6963200020480001, 4096)
        assert score_from_form("0.000244140625") == Fraction(1, 4096)


def sample_store() -> Store:
    store = Store()
    store.keys["id"] = Str("7")
    store.keys["1:lock"] = Str("tok", 30000)
    store.keys["wait"] = List(["4", "3"])
    store.keys["delayed"] = ZSet(
        {"9": 6963200020484095, "f4095": 6963200020484095, "10": 6963200020484095,
         "3": 6963200020480000, "big": 9007199254740993}
    )
    store.keys["marker"] = ZSet({"1": Fraction(6963200020480001, 4096), "0": 0})
    store.keys["3"] = Hash(
        {"name": "a", "delay": "0", "data": JsonText({"n": 3}), "opts": JsonText({"delay": 5})}
    )
    store.keys["events"] = Stream([["event", "added", "jobId", "1", "name", "a"]])
    return store


class TestStoreToForm:
    def test_literal_form(self) -> None:
        form = store_to_form(sample_store())
        assert form == {
            "1:lock": {"string": {"value": "tok", "pttl": 30000}},
            "3": {
                "hash": {
                    "data": {"json": {"n": 3}},
                    "delay": "0",
                    "name": "a",
                    "opts": {"json": {"delay": 5}},
                }
            },
            "delayed": {
                "zset": {
                    "3": 6963200020480000,
                    "10": 6963200020484095,
                    "9": 6963200020484095,
                    "f4095": 6963200020484095,
                    "big": "9007199254740993",
                }
            },
            "events": {"stream": [["event", "added", "jobId", "1", "name", "a"]]},
            "id": {"string": "7"},
            "marker": {"zset": {"0": 0, "1": "1700000005000.000244140625"}},
            "wait": {"list": ["4", "3"]},
        }

    def test_orders(self) -> None:
        form = store_to_form(sample_store())
        assert list(form) == sorted(form)  # keys sorted by suffix
        # zset members in ZRANGE order: score, then member bytes ("10" < "9" < "f4095")
        assert list(form["delayed"]["zset"]) == ["3", "10", "9", "f4095", "big"]
        assert list(form["3"]["hash"]) == ["data", "delay", "name", "opts"]

    def test_worked_example_form(self) -> None:
        model = QueueModel()
        model.apply(Add("normal", T, {"n": 1}))
        model.apply(Add("d", T, {"n": 2}, {"delay": 5000}))
        model.apply(Add("p", T, {"n": 3}, {"priority": 1}))
        form = store_to_form(model.store)
        assert form["id"] == {"string": "3"}
        assert form["pc"] == {"string": "1"}
        assert form["wait"] == {"list": ["1"]}
        assert form["delayed"] == {"zset": {"2": 6963200020480000}}  # (T+5000)*4096
        assert form["prioritized"] == {"zset": {"3": 4294967297}}  # 2^32 + 1
        assert form["marker"] == {"zset": {"0": 0, "1": 1700000005000}}
        assert form["meta"] == {"hash": {"opts.maxLenEvents": "10000"}}
        assert form["2"] == {
            "hash": {
                "data": {"json": {"n": 2}},
                "delay": "5000",
                "name": "d",
                "opts": {"json_includes": {"delay": 5000}},
                "priority": "0",
                "timestamp": "1700000000000",
            }
        }

    def test_fractional_marker_from_model(self) -> None:
        model = QueueModel()
        model.apply(Add("d", T, opts={"delay": 5000}))
        model.apply(ChangeDelay("1", 5000, now=T))  # own band: F*S+1
        assert store_to_form(model.store)["marker"] == {
            "zset": {"1": "1700000005000.000244140625"}
        }


class TestFormToStore:
    def test_types(self) -> None:
        store = form_to_store(
            {
                "1:lock": {"string": {"value": "tok", "pttl": 30000}},
                "id": {"string": "7"},
                "wait": {"list": ["4", "3"]},
                "marker": {"zset": {"0": 0, "1": "1700000005000.000244140625"}},
                "delayed": {"zset": {"x": "9007199254740993"}},
                "3": {"hash": {"delay": "0", "data": {"json": {"n": 3}}}},
                "events": {"stream": [["event", "paused"]]},
            }
        )
        assert store.keys["1:lock"] == Str("tok", 30000)
        assert store.keys["id"] == Str("7", None)
        assert store.keys["wait"] == List(["4", "3"])
        assert store.keys["marker"] == ZSet({"0": 0, "1": Fraction(6963200020480001, 4096)})
        assert store.keys["delayed"] == ZSet({"x": 9007199254740993})
        assert type(store.keys["delayed"].scores["x"]) is int  # type: ignore[union-attr]
        assert store.keys["3"] == Hash({"delay": "0", "data": JsonText({"n": 3})})
        assert store.keys["events"] == Stream([["event", "paused"]])

    def test_unknown_kind(self) -> None:
        with pytest.raises(ValueError):
            form_to_store({"x": {"hll": ["a"]}})

    def test_helpers(self) -> None:
        assert kind_of({"zset": {}}) == "zset"
        assert string_parts("7") == ("7", None)
        assert string_parts({"value": "tok", "pttl": 5}) == ("tok", 5)


class TestRoundTrip:
    def test_sample_store(self) -> None:
        store = sample_store()
        back = form_to_store(store_to_form(store))
        assert back.keys == store.keys
        assert store_to_form(back) == store_to_form(store)

    def test_model_state(self) -> None:
        model = QueueModel()
        model.apply(Add("normal", T, {"n": 1}))
        for name in ("a", "b", "c"):
            model.apply(Add(name, T, {"k": name}, {"delay": 5000}))
        model.apply(Add("p", T, {}, {"priority": 2}))
        model.apply(ChangeDelay("2", 10000, now=T))
        model.apply(MoveToActive(now=T))
        back = form_to_store(store_to_form(model.store))
        assert back.keys == model.store.keys
        # the restored state behaves the same: next fetch takes the prioritized job 5
        assert QueueModel(back).apply(MoveToActive(now=T)) == {"job": "5", "ttl": 0, "next": 0}


@given(k=st.integers(-(2**64), 2**64))
def test_k_over_4096_round_trips(k: int) -> None:
    # §4: marker "1" = head/4096 always has a finite decimal form
    value = Fraction(k, 4096)
    out = score_to_form(value)
    assert score_from_form(out) == value
    if value.denominator == 1 and abs(value) <= 2**53:
        assert type(out) is int
    else:
        assert isinstance(out, str)


@given(n=st.integers(-(2**80), 2**80))
def test_int_round_trips(n: int) -> None:
    out = score_to_form(n)
    assert isinstance(out, int) == (abs(n) <= 2**53)
    assert score_from_form(out) == n
