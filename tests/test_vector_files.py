"""The bundled vector files: deterministic, schema-valid, distinct, and covering the edges."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from itertools import combinations, pairwise
from typing import Any

import pytest
import yaml

from conformance.core.resources import vectors_dir
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.generate import render_all

VECTORS_DIR = vectors_dir()

REQUIRED_EDGES = [
    "band-bump/2-same-ms", "band-bump/3-same-ms", "band-bump/4096-fills-band",
    "band-bump/4097-saturates", "band-bump/different-timestamps-same-fire",
    "delayed-score/delay-0-goes-to-wait", "delayed-score/change-delay-zero",
    "delayed-score/precision-last-exact-band", "delayed-score/precision-2pow41-bump-lost",
    "promote-range/due-at-now-included", "promote-range/due-at-now-plus-1-excluded",
    "promote-range/exactly-1000-due", "promote-range/1001-due",
    "priority-order/priority-1", "priority-order/priority-2", "priority-order/priority-limit",
    "priority-order/counter-wrap", "priority-order/fifo-in-tier-interleaved",
    "priority-order/plain-before-prioritized", "priority-order/custom-id-prioritized",
    "key-naming/bullmq-standard-add", "key-naming/echomq-standard-add",
    # lifecycle areas
    "reschedule/fixed-backoff-twice", "reschedule/exponential-backoff-3",
    "reschedule/bump-one-in-band", "reschedule/prioritized-retry", "reschedule/lock-mismatch",
    "reschedule/lock-missing", "reschedule/not-active-lock-deleted", "reschedule/missing-job",
    "change-delay/joins-band-of-two", "delayed-score/change-delay-missing-job",
    "delayed-score/change-delay-not-delayed", "change-priority/wait-pc-absent",
    "change-priority/counter-not-reused", "change-priority/lifo-from-wait-no-incr",
    "change-priority/zero-from-wait-lifo-next", "change-priority/hashless-id-minus-1",
    "promote-job/fetched-after-waiting", "promote-job/active-minus-3",
    "pause/fetch-while-paused", "pause/adds-while-paused", "pause/resume-with-waiting",
    "next-wake/earlier-job-lowers-wake", "next-wake/later-job-keeps-wake",
    "next-wake/fractional-after-head-moves", "next-wake/fetch-nothing-returns-next",
]


def test_lifecycle_areas_add_at_least_120_vectors(all_vectors: list[Vector]) -> None:
    lifecycle = {"reschedule", "change-delay", "change-priority", "promote-job", "pause"}
    new_next_wake = {"retry-earlier-lowers-wake", "retry-later-keeps-wake",
                     "retry-bumped-head-fraction", "fetch-next-after-retry",
                     "pause-drops-both-markers", "resume-waiting-writes-only-0",
                     "resume-delayed-only-writes-1", "resume-fractional-head",
                     "promote-head-then-next", "retry-refreshes-stale-wake",
                     "resume-empty-queue-no-marker", "fetch-skips-legacy-marker"}
    new_key_naming = {f"{p}-{op}" for p in ("bullmq", "echomq") for op in ("retry", "pause")}
    count = sum(1 for v in all_vectors
                if v.area in lifecycle
                or (v.area == "next-wake" and v.id.split("/")[1] in new_next_wake)
                or (v.area == "key-naming" and v.id.split("/")[1] in new_key_naming))
    assert count >= 120


def test_regeneration_is_byte_identical_and_matches_disk() -> None:
    first, second = render_all(), render_all()
    assert first == second
    for name, text in first.items():
        assert (VECTORS_DIR / name).read_text(encoding="utf-8") == text, name


def fact_of(vector: Vector) -> str:
    """The id of the fact a vector states at one protocol range (`x/y.until-5.8.6` -> `x/y`)."""
    return vector.id.split(".until-", 1)[0]


def test_at_least_150_vectors_with_unique_ids(all_vectors: list[Vector],
                                              every_vector: list[Vector]) -> None:
    assert len(all_vectors) >= 150  # facts of the current protocol, not their older ranges
    ids = [v.id for v in every_vector]
    assert len(set(ids)) == len(ids)


def test_older_range_ids_name_their_until(every_vector: list[Vector]) -> None:
    """The current range keeps the plain id; an older one is `<id>.until-<its until>`."""
    for vector in every_vector:
        if not vector.older:  # newest: the current range, or up to a release removing its ops
            assert vector.span.until is None or vector.span.until in versions.REMOVALS, vector.id
            assert "older-protocol" not in vector.flags, vector.id
        else:
            assert vector.id == f"{fact_of(vector)}.until-{versions.text(vector.span.until)}"
            assert "older-protocol" in vector.flags, vector.id


def test_the_ranges_of_a_fact_cover_every_supported_version_once(
        every_vector: list[Vector]) -> None:
    """One fact's vectors hold over ranges that meet end to end from the earliest supported
    version on, each cut at a state boundary; two neighbours differ in what they expect (or
    they would be one range)."""
    facts: dict[str, list[Vector]] = defaultdict(list)
    for vector in every_vector:
        facts[fact_of(vector)].append(vector)
    for fact, vectors in facts.items():
        vectors.sort(key=lambda v: v.span.since)
        # a fact starts at the earliest version, or at its scripts' floor (case.since), and
        # holds on, or up to the release that removed its ops
        assert vectors[0].span.since in versions.FLOORS, fact
        assert vectors[-1].span.until is None or vectors[-1].span.until in versions.REMOVALS
        assert not vectors[-1].older, fact
        for older, newer in pairwise(vectors):
            assert older.span.until == newer.span.since, (older.id, newer.id)
            assert newer.span.since in versions.STATE_BOUNDARIES, newer.id
            assert (older.given, older.when) == (newer.given, newer.when), (older.id, newer.id)
            assert (older.returns, older.keys, older.key_names) != (
                newer.returns, newer.keys, newer.key_names), (older.id, newer.id)


def test_required_edges_are_present(all_vectors: list[Vector]) -> None:
    ids = {v.id for v in all_vectors}
    assert [e for e in REQUIRED_EDGES if e not in ids] == []


def test_no_two_vectors_check_the_same_setup(every_vector: list[Vector]) -> None:
    """A near-duplicate (same seed, same ops, same profile, same checks) would pad the count.

    A `cluster` vector may share a setup with another area's: it checks one more fact (every
    key in BASE's slot), which no other vector checks. The ranges of one fact share its setup:
    they are distinct facts as long as no protocol version is in two of them.
    """
    setups: dict[tuple[object, ...], list[Vector]] = defaultdict(list)
    for v in every_vector:
        # `on`: the same ops on other queues (a flow across queues) are another setup
        setups[(json.dumps(v.given, sort_keys=True), repr(v.when), v.on, v.profile,
                v.one_slot)].append(v)
    same = [(a.id, b.id) for vectors in setups.values() for a, b in combinations(vectors, 2)
            if a.span.overlaps(b.span) or fact_of(a) != fact_of(b)]
    assert same == []


def test_descriptions_state_facts(all_vectors: list[Vector], every_vector: list[Vector]) -> None:
    descriptions = [v.description for v in every_vector]
    assert len(set(descriptions)) == len(descriptions)
    assert [d for d in descriptions if re.search(r"\bshould\b", d, re.I)] == []
    newest = [v.description for v in every_vector if not v.older]
    assert all(len(d) <= 100 for d in newest), max(newest, key=len)
    # An older range says what the protocol did before its until, and names the fact's ops.
    for vector in every_vector:
        if vector.older:
            until = re.escape(versions.text(vector.span.until))
            pattern = rf"Before {until}, [^:]+: the ops of {re.escape(fact_of(vector))}\."
            assert re.fullmatch(pattern, vector.description), (vector.id, vector.description)


def test_files_are_json_compatible_yaml_without_anchors_or_tags() -> None:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in sorted(VECTORS_DIR.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        for event in yaml.parse(text, Loader=loader):
            assert not isinstance(event, yaml.AliasEvent), path.name
            assert getattr(event, "anchor", None) is None, path.name
            if isinstance(event, yaml.ScalarEvent):
                assert event.implicit != (False, False), (path.name, event.value)
        data = yaml.load(text, Loader=loader)
        assert json.loads(json.dumps(data)) == data


@pytest.fixture(scope="module")
def documents() -> dict[str, Any]:
    """Each vector file as plain YAML data, by file name (libyaml's safe loader: the pure
    Python one took half a minute a test over the vector files)."""
    return {path.name: yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
            for path in sorted(VECTORS_DIR.glob("*.yaml"))}


def test_unsafe_scores_are_strings(documents: dict[str, Any]) -> None:
    """Scores beyond 2^53 must be strings so that JSON readers keep them exact."""
    for path, data in documents.items():
        for test in data["tests"]:
            for keys in (test["given"], test["expect"]["keys"]):
                for entry in keys.values():
                    for score in entry.get("zset", {}).values():
                        assert isinstance(score, str) or abs(score) <= 2**53, (path, score)


def test_every_flag_has_notes_and_every_note_is_used(documents: dict[str, Any]) -> None:
    for name, data in documents.items():
        used = {flag for test in data["tests"] for flag in test["flags"]}
        assert used == set(data["notes"]), name
