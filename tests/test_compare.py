"""Comparison rules: exact scores, ZRANGE order, pttl windows, JSON hash values, key sets."""

from __future__ import annotations

from conformance.state.compare import compare_key_names, compare_keys, compare_returns


def test_equal_state_has_no_diff() -> None:
    expected = {"delayed": {"zset": {"1": 6963200020480000, "2": 6963200020480001}},
                "marker": {"zset": {"1": "1700000005000.000244140625"}},
                "wait": {"list": ["2", "1"]}}
    actual = {"delayed": {"zset": [["1", "6963200020480000"], ["2", "6963200020480001"]]},
              "marker": {"zset": [["1", "1700000005000.0002"]]},
              "wait": {"list": ["2", "1"]}}
    assert compare_keys(expected, actual) == []


def test_fractional_marker_must_not_be_floored() -> None:
    diff = compare_keys({"marker": {"zset": {"1": "1700000005000.000244140625"}}},
                        {"marker": {"zset": [["1", "1700000005000"]]}})
    assert diff[0] == "marker: zset differs"
    assert "expected score 1700000005000.0002" in diff[2]


def test_scores_are_exact_above_float_printing() -> None:
    diff = compare_keys({"delayed": {"zset": {"a": 6963200020480001}}},
                        {"delayed": {"zset": [["a", "6963200020480002"]]}})
    assert "expected score 6963200020480001 (F=1700000005000 +1)" in "\n".join(diff)
    assert "actual 6963200020480002 (F=1700000005000 +2)" in "\n".join(diff)


def test_tie_order_is_checked() -> None:
    diff = compare_keys({"delayed": {"zset": {"10": 5, "9": 5}}},
                        {"delayed": {"zset": [["9", "5"], ["10", "5"]]}})
    assert any("order differs from rank 0" in line for line in diff)


def test_missing_extra_and_wrong_type_keys() -> None:
    diff = compare_keys({"wait": {"list": ["1"]}, "pc": {"string": "1"}},
                        {"wait": {"zset": [["1", "0"]]}, "priority": {"zset": [["1", "1"]]}})
    assert diff == [
        "pc: missing (expected string \"1\")",
        "priority: unexpected key (zset {\"1\": \"1\"})",
        "wait: list differs",
        "  type: expected list, actual zset",
    ]


def test_pttl_window_and_plain_strings() -> None:
    lock = {"string": {"value": "tok", "pttl": 30000}}
    assert compare_keys({"1:lock": lock}, {"1:lock": {"string": {"value": "tok",
                                                                    "pttl": 29990}}}) == []
    too_long = compare_keys({"1:lock": lock},
                            {"1:lock": {"string": {"value": "tok", "pttl": 60000}}})
    assert "expected pttl in (0, 30000] ms, actual 60000" in "\n".join(too_long)
    no_expiry = compare_keys({"1:lock": lock}, {"1:lock": {"string": "tok"}})
    assert "actual none" in "\n".join(no_expiry)
    unexpected = compare_keys({"id": {"string": "1"}},
                              {"id": {"string": {"value": "1", "pttl": 5}}})
    assert "unexpected expiry: pttl 5 ms" in "\n".join(unexpected)


def test_json_hash_values_compare_parsed() -> None:
    expected = {"1": {"hash": {"opts": {"json": {"delay": 5000, "attempts": 0}},
                               "delay": "5000"}}}
    same = {"1": {"hash": {"opts": '{"attempts":0, "delay":5000}', "delay": "5000"}}}
    assert compare_keys(expected, same) == []
    other = {"1": {"hash": {"opts": '{"delay":5000}', "delay": "5000", "pb": "w1"}}}
    diff = "\n".join(compare_keys(expected, other))
    assert "field 'opts': expected JSON" in diff and "unexpected field 'pb'" in diff


def test_stream_ids_ignored_fields_compared() -> None:
    entry = ["event", "waiting", "jobId", "1"]
    assert compare_keys({"events": {"stream": [entry]}}, {"events": {"stream": [entry]}}) == []
    diff = compare_keys({"events": {"stream": [entry]}},
                        {"events": {"stream": [[*entry, "prev", "delayed"]]}})
    assert diff[-2:] == ["    [0] expected   event waiting jobId 1",
                         "    [0] actual     event waiting jobId 1 prev delayed"]


def test_returns_and_key_names() -> None:
    diff = compare_returns(["1", 0], ["1", -3], ["add", "promote"])
    assert len(diff) == 1
    assert diff[0].startswith("return of op 2 (promote): expected 0, actual -3 (JobNotInState")
    assert compare_key_names(["emq:{q}:wait"], ["emq:q:wait"]) == [
        "key name missing: emq:{q}:wait", "key name not expected: emq:q:wait"]


def test_json_includes_allows_client_defaults() -> None:
    expected = {"1": {"hash": {"opts": {"json_includes": {"delay": 5000}}}}}
    python_client = {"1": {"hash": {"opts": '{"delay": 5000, "attempts": 0}'}}}
    assert compare_keys(expected, python_client) == []
    wrong = {"1": {"hash": {"opts": '{"delay": 0, "attempts": 0}'}}}
    assert "a JSON object including" in "\n".join(compare_keys(expected, wrong))
    not_object = {"1": {"hash": {"opts": "[5000]"}}}
    assert compare_keys(expected, not_object) != []


def test_optional_fields_and_all_optional_hashes() -> None:
    meta = {"meta": {"hash": {"opts.maxLenEvents": {"optional": "10000"},
                              "version": {"optional": "[a-z]+:[0-9.]+"}}}}
    assert compare_keys(meta, {}) == []
    node = {"meta": {"hash": {"opts.maxLenEvents": "10000", "version": "bullmq:6.7.0"}}}
    assert compare_keys(meta, node) == []
    bad = {"meta": {"hash": {"opts.maxLenEvents": "500", "version": "6.7.0"}}}
    diff = "\n".join(compare_keys(meta, bad))
    assert "field 'opts.maxLenEvents': expected absent, or matching /10000/" in diff
    assert "field 'version'" in diff
    required = {"meta": {"hash": {"paused": "1", "version": {"optional": ".*"}}}}
    assert compare_keys(required, {}) != []
