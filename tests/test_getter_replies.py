"""The scripts candidate's reading of getJobs' and paginate's replies: hashes as mappings, and
a reply of another shape (a broken script's) shown as it came, never an exception."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.candidates.scripts.getter_calls import normalized
from reference_impl.getter_ops import GetJobs, Paginate


def test_hash_replies_become_mappings() -> None:
    assert normalized(GetJobs(("wait",)), [[["1", ["name", "a", "data", "{}"]]]]) == \
        [[["1", {"name": "a", "data": "{}"}]]]
    assert normalized(Paginate("p:dependencies", fetch_jobs=True),
                      ["0", 2, ["k2", "k1"], 2, [["name", "b"], []]]) == \
        ["0", 2, ["k1", "k2"], 2, [{}, {"name": "b"}]]


@pytest.mark.parametrize(("op", "reply"), [
    (GetJobs(("wait",)), [[["1", ["name"]]]]),           # an odd field list
    (GetJobs(("wait",)), [[1, 2]]),                       # no [id, fields] pairs
    (GetJobs(("wait",)), None),                           # nil
    (Paginate("p:processed"), ["0", 1, ["a"], 1, [1]]),   # a job that is no list
    (Paginate("p:processed"), 7),                         # a scalar
])
def test_a_reply_of_another_shape_is_shown_as_it_came(op: Any, reply: Any) -> None:
    assert normalized(op, reply) == reply
