"""Hostile vector input: values past what the protocol carries, numbers too big to read, and
nesting deep enough to crash a recursive parser. Each is a VectorError (exit 2) naming the file,
the line and the vector, never a crash or a traceback.

The ranges are stated here from the protocol, as docs/ADAPTERS.md gives them, not read from the
schema: times and ARGV delays at most 2^52 (so that F = time + delay stays exact in a double),
the add opts at most 10^14 (cjson keeps 14 significant digits), what a double holds exactly
(2^53 - 1) for ARGV priorities and PX values, -11 (the lowest ErrorCode) to 2^32 - 1 (the
longest list) for integer results. Each bound is tested from both sides: the value at the bound
loads, one past it is rejected. The nesting limit is the documented 64 levels.
"""

from __future__ import annotations

from pathlib import Path
from string import Template

import pytest

from conformance.core.errors import UsageError, VectorError
from conformance.core.resources import CACHE_ENV
from conformance.vectors import expectations, load_file, looks_like_vector_file
from tests.fault_helpers import assert_both_commands_refuse

ROOT = Path(__file__).resolve().parents[1]
VECTOR_ID = "bounds/all-fields"
#: The documented maximum nesting of mappings and sequences.
MAX_DEPTH = 64
#: Collections around the value of `data` in TEMPLATE: the file, `tests`, the test, `when`, the op.
DATA_DEPTH = 5

TEMPLATE = Template("""\
schema_version: 3
protocol: bullmq
area: bounds
description: Every bounded field of a vector, once.
generator: {source: tests/test_hostile_vectors.py, version: 0.1.0}
rules_version: 1
notes:
  edge: {bug_type: boundary, description: A value at the edge of its range.}
number_of_tests: $number_of_tests
tests:
- id: bounds/all-fields
  description: Each bounded field holds the value the test sets.
  since: 5.0.0
  flags: [edge]
  needs: ['redis>=$version']
  given:
    lock:
      string: {value: tok, pttl: $given_pttl}
    delayed:
      zset: {a: $given_score}
  when:
  - op: add
    name: a
    timestamp: $timestamp
    data: $data
    opts: {delay: $opts_delay, priority: $opts_priority}
  - {op: moveToActive, now: $fetch_now, token: tok, lockDuration: $lock_duration}
  - {op: changeDelay, jobId: a, delay: $change_delay, now: $change_now}
  - {op: changePriority, jobId: a, priority: $change_priority}
  - {op: moveToDelayed, jobId: a, now: $retry_now, delay: $retry_delay}
  - {op: pause}
  expect:
    returns: ['1', {job: null, ttl: $ttl, next: $next}, 0, 0, 0, $code]
    keys: {}
""")
DEFAULTS = {
    "number_of_tests": 1, "version": "7.0", "given_pttl": 30000, "given_score": 6963200020480000,
    "timestamp": 1700000000000, "data": "{n: a}", "opts_delay": 5000, "opts_priority": 0,
    "fetch_now": 1700000005000, "lock_duration": 30000, "change_delay": 1000,
    "change_now": 1700000000000, "change_priority": 1, "retry_now": 1700000005000,
    "retry_delay": 1000, "ttl": 0, "next": 0, "code": 0,
}
T52 = 2**52  # times and ARGV delays
OPTS = 10**14  # add opts delay and priority
SAFE = 2**53 - 1  # a double's exact integers: ARGV priority, lockDuration, pttl, ttl
# (placeholder, json pointer, lowest valid, highest valid)
BOUNDS = [
    ("timestamp", "tests/0/when/0/timestamp", 0, T52),
    ("opts_delay", "tests/0/when/0/opts/delay", 0, OPTS),
    ("opts_priority", "tests/0/when/0/opts/priority", 0, OPTS),
    ("fetch_now", "tests/0/when/1/now", 0, T52),
    ("lock_duration", "tests/0/when/1/lockDuration", 1, SAFE),
    ("change_delay", "tests/0/when/2/delay", 0, T52),
    ("change_now", "tests/0/when/2/now", 0, T52),
    ("change_priority", "tests/0/when/3/priority", 0, SAFE),
    ("retry_now", "tests/0/when/4/now", 0, T52),
    ("retry_delay", "tests/0/when/4/delay", 0, T52),
    ("given_pttl", "tests/0/given/lock/string/pttl", 1, SAFE),
    ("given_score", "tests/0/given/delayed/zset/a", -2**53, 2**53),
    ("ttl", "tests/0/expect/returns/1/ttl", 0, SAFE),
    ("next", "tests/0/expect/returns/1/next", 0, 2**53),
    ("code", "tests/0/expect/returns/5", -11, 2**32 - 1),
]


def _line_of(placeholder: str) -> int:
    """The 1-based line of TEMPLATE that holds `$placeholder`."""
    rows = [i for i, row in enumerate(TEMPLATE.template.splitlines(), 1)
            if f"${placeholder}" in row]
    assert len(rows) == 1, placeholder
    return rows[0]


def _write(tmp_path: Path, **values: object) -> Path:
    path = tmp_path.resolve() / "bounds.yaml"
    path.write_text(TEMPLATE.substitute({**DEFAULTS, **values}), encoding="utf-8")
    return path


def _rejection(path: Path) -> str:
    with pytest.raises(VectorError) as caught:
        load_file(path)
    message = str(caught.value)
    assert "\n" not in message, message
    return message


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "off")


def test_the_template_loads_as_written(tmp_path: Path) -> None:
    assert [v.id for v in load_file(_write(tmp_path)).vectors] == [VECTOR_ID]


@pytest.mark.parametrize(("name", "pointer", "low", "high"), BOUNDS, ids=[b[0] for b in BOUNDS])
def test_each_bound_is_inclusive_and_one_past_it_is_refused(tmp_path: Path, name: str,
                                                            pointer: str, low: int,
                                                            high: int) -> None:
    for edge in (low, high):
        load_file(_write(tmp_path, **{name: edge}))
    head = f"{tmp_path.resolve() / 'bounds.yaml'}:{_line_of(name)}: {VECTOR_ID}: "
    for past, words in ((high + 1, f"is greater than the maximum of {high}"),
                        (low - 1, f"is less than the minimum of {low}")):
        message = _rejection(_write(tmp_path, **{name: past}))
        assert message.startswith(f"{head}schema violation at {pointer}: "), message
        if name != "code":  # one of three result shapes: jsonschema words that differently
            assert message.endswith(f"{past} {words}"), message
        assert str(past) in message, message


@pytest.mark.parametrize("name", ["priority", "delay", "lockDuration"])
def test_2pow70_is_refused_where_it_used_to_crash(tmp_path: Path, name: str) -> None:
    placeholder = {"priority": "opts_priority", "delay": "opts_delay",
                   "lockDuration": "lock_duration"}[name]
    message = _rejection(_write(tmp_path, **{placeholder: 2**70}))
    assert f":{_line_of(placeholder)}: {VECTOR_ID}: schema violation at " in message
    assert f"{name}: {2**70} is greater than the maximum of" in message


def test_number_of_tests_is_bounded_before_it_is_counted(tmp_path: Path) -> None:
    line = _line_of("number_of_tests")
    at_bound = _rejection(_write(tmp_path, number_of_tests=SAFE))
    assert f"bounds.yaml:{line}: number_of_tests is {SAFE} but the file has 1 tests" in at_bound
    past = _rejection(_write(tmp_path, number_of_tests=SAFE + 1))
    assert f"bounds.yaml:{line}: schema violation at number_of_tests: {SAFE + 1} is greater" \
        in past


@pytest.mark.parametrize(("score", "ok"), [
    ("'" + "9" * 308 + "'", True),  # below the largest double, about 1.8e308
    ("'" + "1" + "0" * 308 + "'", False),  # 1e308 has 309 digits: past the bound
    ("'-" + "9" * 308 + "'", True),
    ("'0." + "5" * 1074 + "'", True),  # 2^-1074, a double's longest exact expansion
    ("'0." + "5" * 1075 + "'", False),
], ids=["308-digits", "309-digits", "minus-308-digits", "1074-decimals", "1075-decimals"])
def test_score_strings_stay_within_a_double(tmp_path: Path, score: str, ok: bool) -> None:
    path = _write(tmp_path, given_score=score)
    if ok:
        load_file(path)
        return
    message = _rejection(path)
    # The message quotes the whole value, and is cut short before the pattern.
    assert message.startswith(f"{path}:{_line_of('given_score')}: {VECTOR_ID}: schema violation "
                              f"at tests/0/given/delayed/zset/a: {score[:100]}"), message


def test_a_version_part_has_at_most_nine_digits(tmp_path: Path) -> None:
    load_file(_write(tmp_path, version="999999999.0.999999999"))
    message = _rejection(_write(tmp_path, version="7." + "1" * 10))
    assert f":{_line_of('version')}: {VECTOR_ID}: schema violation at tests/0/needs/0: " \
        in message


def test_add_takes_no_other_opts(tmp_path: Path) -> None:
    """Another key would reach the scripts' msgpack and opts JSON unbounded."""
    message = _rejection(_write(tmp_path, opts_priority=f"0, attempts: {2**70}"))
    assert f":{_line_of('opts_priority')}: {VECTOR_ID}: schema violation at " \
           "tests/0/when/0/opts: " in message
    assert "'attempts' was unexpected" in message


@pytest.mark.parametrize("digits", ["9" * 400, "9" * 5000, "0x" + "f" * 300],
                         ids=["400-digits", "5000-digits", "hex-1200-bits"])
def test_an_integer_beyond_a_double_is_a_parse_error(tmp_path: Path, digits: str) -> None:
    """Past 4300 digits Python refuses to read an integer at all (a ValueError, formerly a
    traceback); any integer past ~1.8e308 is beyond what a JSON reader holds."""
    message = _rejection(_write(tmp_path, timestamp=digits))
    assert message.startswith(f"{tmp_path.resolve() / 'bounds.yaml'}:{_line_of('timestamp')}: "
                              f"{VECTOR_ID}: integer {digits[:20]}... "), message
    assert message.endswith(f"({len(digits)} characters) is beyond the range of a JSON number")


# --- nesting ------------------------------------------------------------------------------

def _nested_flow(levels: int, opener: str = "[") -> str:
    if opener == "[":
        return "[" * levels + "]" * levels
    return "{a: " * levels + "1" + "}" * levels


def test_nesting_at_the_limit_loads_and_one_deeper_is_refused(tmp_path: Path) -> None:
    levels = MAX_DEPTH - DATA_DEPTH
    load_file(_write(tmp_path, data=_nested_flow(levels)))
    load_file(_write(tmp_path, data=_nested_flow(levels, "{")))
    message = _rejection(_write(tmp_path, data=_nested_flow(levels + 1)))
    assert message == (f"{tmp_path.resolve() / 'bounds.yaml'}:{_line_of('data')}: {VECTOR_ID}: "
                       f"mappings and sequences nested more than {MAX_DEPTH} deep")


def _deep_block_sequence(levels: int) -> str:
    # `- - - x` on one line: each `- ` opens a sequence inside the last.
    return "\n      " + "- " * levels + "x"


def _deep_block_mapping(levels: int) -> str:
    # One key per line, each indented under the one before.
    return "".join("\n" + " " * (6 + 2 * i) + "k:" for i in range(levels)) + " x"


DEEP = {
    "25000-flow-sequences": (_nested_flow(25000), 0),
    "25000-unclosed-sequences": ("[" * 25000, 0),
    "25000-flow-mappings": (_nested_flow(25000, "{"), 0),
    "25000-block-sequences": (_deep_block_sequence(25000), 1),
    # the n-th key under `data:` opens level DATA_DEPTH + n: level 65 is the 60th key
    "100-block-mappings": (_deep_block_mapping(100), MAX_DEPTH + 1 - DATA_DEPTH),
}


@pytest.mark.parametrize("name", list(DEEP))
def test_deep_nesting_is_a_vector_error_not_a_crash(tmp_path: Path, name: str) -> None:
    data, offset = DEEP[name]
    path = _write(tmp_path, data=data)
    message = _rejection(path)
    assert message == (f"{path}:{_line_of('data') + offset}: {VECTOR_ID}: "
                       f"mappings and sequences nested more than {MAX_DEPTH} deep")
    assert _rejection(path) == message  # never cached


def test_deep_flow_file_is_recognised_without_parsing_it(tmp_path: Path) -> None:
    """Collection parses flow-style YAML files to see whether they are vector files."""
    vector = tmp_path / "deep-vector.yaml"
    vector.write_text("{schema_version: 3, area: deep-vector, tests: " + "[" * 25000 + "\n")
    other = tmp_path / "deep-other.yaml"
    other.write_text("{matrix: " + "[" * 25000 + "\n")
    assert looks_like_vector_file(vector)
    assert not looks_like_vector_file(other)
    assert _rejection(vector) == (f"{vector}:1: mappings and sequences nested more than "
                                  f"{MAX_DEPTH} deep")


@pytest.mark.parametrize(("body", "message"), [
    ('expectations:\n  "x/*":\n    outcome: ' + "[" * 25000 + "\n",
     ":3: mappings and sequences nested more than 64 deep"),
    ('expectations:\n  "x/*":\n    outcome: fail\n    reason: ' + "9" * 5000 + "\n",
     ": invalid YAML: a number too long to read"),
], ids=["25000-sequences", "5000-digit-number"])
def test_hostile_expectations_files_are_usage_errors(tmp_path: Path, body: str,
                                                     message: str) -> None:
    path = tmp_path / "expect.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        expectations.load(path)
    assert str(caught.value) == f"--expect {path}{message}"


def test_expectations_file_not_utf8_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "expect.yaml"
    path.write_bytes(b'expectations:\n  "x/*":\n    reason: caf\xe9\n')
    with pytest.raises(UsageError) as caught:
        expectations.load(path)
    assert str(caught.value) == f"--expect {path}:3: not UTF-8 text"


def test_deep_nesting_exits_2_in_both_commands(tmp_path: Path, redis_url: str) -> None:
    """In new processes, where a stack overflow would be a segfault (exit -11) rather than an
    exception: `vectors check` and `run` print one line naming file and line, and exit 2."""
    directory = tmp_path.resolve() / "vectors"
    directory.mkdir()
    path = _write(tmp_path, data=_nested_flow(25000))
    path = path.rename(directory / "bounds.yaml")
    head = f"{path}:{_line_of('data')}: {VECTOR_ID}: mappings and sequences nested more than"
    assert_both_commands_refuse(directory, redis_url, tmp_path / "cache", head)
