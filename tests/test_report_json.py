"""The versioned JSON report of `run --report-json`: both real runs exit as documented, their
reports match the report schema (a valid 2020-12 schema), carry the run's info and every
outcome, and the schema rejects what is not a report."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from report_helpers import CLICKED, EXAMPLES, OUTCOMES, SCHEMA, SEED, SKIP_ID, XFAIL_ID, Runs

from conformance.core.resources import lua_dir


def test_runs_exit_as_documented(runs: Runs) -> None:
    assert runs.passing.returncode == 0, runs.passing.stdout[-3000:] + runs.passing.stderr
    assert runs.failing.returncode == 1, runs.failing.stdout[-3000:] + runs.failing.stderr


def test_schema_is_valid_2020_12() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(SCHEMA)


def test_real_reports_match_the_schema(runs: Runs) -> None:
    validator = Draft202012Validator(SCHEMA)
    for document in runs.documents():
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
        assert errors == []


def test_reports_carry_the_run_info(runs: Runs, redis_server: Any) -> None:
    passing, failing = runs.documents()
    for document in (passing, failing):
        assert document["report_version"] == 3
        assert document["suite_version"] == "0.1.0"
        assert document["protocol"] == "6.7.0"  # the default --protocol
        assert (document["seed"], document["examples"]) == (SEED, EXAMPLES)
        assert document["profile"] == "bullmq"
        assert document["redis"]["kind"] == "url"
        assert document["redis"]["engine"] == redis_server.engine
        assert document["redis"]["version"] == redis_server.version
        outcomes = [r["outcome"] for r in document["results"]]
        assert {o: document["totals"][o] for o in OUTCOMES} == {o: outcomes.count(o)
                                                                for o in OUTCOMES}
    assert passing["candidate"] == "reference"
    assert failing["candidate"].startswith("scripts:") and failing["candidate"].endswith("lua")
    scripts = len(list(lua_dir().glob("*-[0-9]*.lua")))
    # changeDelay-4.lua removed
    assert f"({scripts - 1}/{scripts} scripts)" in failing["candidate_version"]


def test_results_carry_the_protocol_and_the_range(runs: Runs) -> None:
    """Report version 2: each vector's result names the version it was judged at and the
    range of npm bullmq versions that judgement stands for; `properties` shards have neither."""
    for document in runs.documents():
        results = {r["id"]: r for r in document["results"]}
        vectors = [r for r in results.values() if r["area"] != "properties"]
        shards = [r for r in results.values() if r["area"] == "properties"]
        assert vectors and shards
        assert all(r["protocol"] == "6.7.0" for r in vectors)
        assert all("protocol" not in r and "range" not in r for r in shards)
        # The band bump came with npm bullmq 5.8.6; 5.1.10 moved the delayed marker.
        assert results["band-bump/4097-saturates"]["range"] == {"since": "5.8.6", "until": None}
        assert results["band-bump/4097-saturates.until-5.8.6"]["range"] == {
            "since": "5.1.10", "until": "5.8.6"}
        assert results["band-bump/4097-saturates.until-5.1.10"]["range"] == {
            "since": "5.0.0", "until": "5.1.10"}
        older = [r for r in vectors if r["range"]["until"] is not None]
        assert older and all(r["outcome"] == "skipped" and r["message"].endswith(
            "not the protocol judged (6.7.0)") for r in older)


def test_failing_report_has_every_outcome_and_the_diffs(runs: Runs) -> None:
    results = {r["id"]: r for r in runs.documents()[1]["results"]}
    assert {r["outcome"] for r in results.values()} == set(OUTCOMES)
    clicked = results[CLICKED]
    assert clicked["outcome"] == "failed"
    assert clicked["message"].splitlines()[0] == "2 difference(s) in Redis state"
    assert "member '1': expected score 6963200020480000 (F=1700000005000 +0), actual " \
           "3481600010240000 (F=850000002500 +0)" in clicked["message"]
    assert results[XFAIL_ID]["outcome"] == "xfailed"
    assert results[SKIP_ID]["outcome"] == "skipped"
    assert 'no "year" delays <yet>' in results[SKIP_ID]["message"]
    errored = [r for r in results.values() if r["outcome"] == "errored"]
    assert errored and all("missing script changeDelay-4.lua" in r["message"] for r in errored)


def test_version_1_reports_still_match_the_schema(runs: Runs) -> None:
    """A report from before protocol versions: no protocol, no per-result protocol or range."""
    document = copy.deepcopy(runs.documents()[1])
    document["report_version"] = 1
    del document["protocol"]
    document["totals"] = {o: document["totals"][o] for o in OUTCOMES}
    for result in document["results"]:
        for added in ("protocol", "range", "skip", "skipped_ops"):
            result.pop(added, None)
    assert list(Draft202012Validator(SCHEMA).iter_errors(document)) == []


@pytest.mark.parametrize(
    ("breaks", "where"),
    [
        (lambda d: d.pop("report_version"), "report_version"),
        (lambda d: d.update(report_version=4), "report_version"),
        (lambda d: d["totals"].pop("judged"), "judged"),
        (lambda d: d["results"][0].update(skip="lazy"), "skip"),
        (lambda d: d.update(protocol="6.7"), "protocol"),
        (lambda d: d["results"][0].update(range={"since": "6.7.0"}), "until"),
        (lambda d: d.pop("seed"), "seed"),
        (lambda d: d.update(examples=-1), "examples"),
        (lambda d: d["results"][0].update(outcome="crashed"), "outcome"),
        (lambda d: d["results"][0].pop("message"), "message"),
        (lambda d: d["totals"].pop("xfailed"), "xfailed"),
        (lambda d: d["redis"].update(kind="ftp"), "kind"),
        (lambda d: d.update(extra=1), "extra"),
    ],
    ids=["no-version", "version-4", "no-judged-total", "unknown-skip-kind", "bad-protocol",
         "range-without-until", "no-seed",
         "negative-examples", "unknown-outcome", "no-message", "no-xfailed-total", "unknown-kind",
         "unknown-field"],
)
def test_schema_rejects_what_is_not_a_report(runs: Runs, breaks: Any, where: str) -> None:
    document = copy.deepcopy(runs.documents()[1])
    breaks(document)
    errors = list(Draft202012Validator(SCHEMA).iter_errors(document))
    assert errors and any(where in e.message or where in e.absolute_path for e in errors)
