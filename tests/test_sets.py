"""The SET type in the state model (`stalled`): the store, the vector form, the comparison, and
the one protocol fact that writes it so far (moveToDelayed's SREM, from 5.5.4)."""

from __future__ import annotations

from model_helpers import T

from conformance.state.compare import compare_keys
from reference_impl.form import form_to_store, store_to_form
from reference_impl.model import QueueModel
from reference_impl.ops import Add, MoveToActive, MoveToDelayed
from reference_impl.store import Set, Store


def test_store_set_vanishes_when_empty() -> None:
    store = Store()
    assert store.sadd("stalled", "1") and not store.sadd("stalled", "1")
    assert store.srem("stalled", "1") and not store.srem("stalled", "1")
    assert not store.exists("stalled")
    assert not store.srem("never", "x")


def test_form_round_trip_sorts_members() -> None:
    store = form_to_store({"stalled": {"set": ["b", "a", "10"]}})
    assert store.keys["stalled"] == Set({"a", "b", "10"})
    assert store_to_form(store) == {"stalled": {"set": ["10", "a", "b"]}}


def test_sets_compare_as_sets() -> None:
    assert compare_keys({"stalled": {"set": ["1", "2"]}}, {"stalled": {"set": ["2", "1"]}}) == []
    lines = compare_keys({"stalled": {"set": ["1", "2"]}}, {"stalled": {"set": ["2", "3"]}})
    text = "\n".join(lines)
    assert "member '1' missing" in text and "unexpected member '3'" in text
    assert "2 member difference(s) (as a set, order ignored)" in text
    wrong_type = compare_keys({"stalled": {"set": ["1"]}}, {"stalled": {"list": ["1"]}})
    assert "  type: expected set, actual list" in wrong_type


def test_move_to_delayed_takes_the_job_out_of_stalled_from_5_5_4() -> None:
    for version, left in (((5, 5, 3), ["1", "2"]), ((5, 5, 4), ["2"]), ((6, 7, 0), ["2"])):
        model = QueueModel(Store(), version)
        model.apply(Add("a", T))
        model.apply(MoveToActive(T))
        model.store.sadd("stalled", "1")
        model.store.sadd("stalled", "2")
        assert model.apply(MoveToDelayed("1", T, 1000)) == 0
        assert sorted(model.store.keys["stalled"].members) == left, version  # type: ignore[union-attr]
