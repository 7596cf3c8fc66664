"""Protocol versions end to end: version parsing, the ranges the generator gives each vector,
`run --protocol`, and `identify` on our own scripts, a copy with a 5.x pause, and 4.x files.

The releases themselves (npm bullmq 5.0.0 to 6.7.0, PyPI bullmq 2.0.0 on: ci/releases.toml) are
judged by ci/releases.sh, which fetches them; these tests need no network.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
from pathlib import Path

import pytest

from conformance.checks.mutant_catalog import CATALOG
from conformance.checks.mutants import write_mutant
from conformance.core.outcomes import Outcome
from conformance.core.resources import lua_dir, vectors_dir
from conformance.reports.identify import Judged, identify
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.cases import Case
from reference_impl.generate import version_ranges
from reference_impl.ops import Add, Pause
from reference_impl.versions import Range
from tests.cli_helpers import cli


class TestVersions:
    @pytest.mark.parametrize("text", ["5.8", "5.8.6.1", "v5.8.6", "5.08.6", "", "five", "-1.0.0"])
    def test_not_a_version(self, text: str) -> None:
        with pytest.raises(ValueError, match="is not a version"):
            versions.parse(text)

    def test_round_trip_and_order(self) -> None:
        assert versions.parse("5.8.6") == (5, 8, 6)
        assert versions.text((5, 10, 0)) == "5.10.0"
        assert versions.parse("5.10.0") > versions.parse("5.9.9")  # numeric, not text order

    @pytest.mark.parametrize("text", ["4.18.3", "7.0.0", "0.0.1"])
    def test_outside_the_supported_span(self, text: str) -> None:
        with pytest.raises(ValueError, match=r"outside the supported versions 5\.0\.0 up to"):
            versions.check_supported(text)

    def test_range_is_half_open(self) -> None:
        span = Range((5, 8, 6), (5, 9, 0))
        assert span.holds((5, 8, 6)) and span.holds((5, 8, 99))
        assert not span.holds((5, 9, 0)) and not span.holds((5, 8, 5))
        assert Range((6, 0, 0)).holds((6, 99, 0))
        assert str(span) == "5.8.6 up to 5.9.0" and str(Range((6, 0, 0))) == "6.0.0 on"

    def test_split_cuts_only_inside(self) -> None:
        cuts = ((5, 8, 6), (5, 13, 2))
        assert versions.split(Range((5, 0, 0), (5, 9, 0)), cuts) == [
            Range((5, 0, 0), (5, 8, 6)), Range((5, 8, 6), (5, 9, 0))]
        assert versions.split(Range((5, 8, 6)), cuts) == [
            Range((5, 8, 6), (5, 13, 2)), Range((5, 13, 2))]
        assert versions.split(Range((6, 0, 0)), cuts) == [Range((6, 0, 0))]


class TestGeneratedRanges:
    def test_a_case_no_boundary_touches_has_one_range(self) -> None:
        # A standard add and a fetch-free read: the same state in every supported version.
        case = Case("plain", "A standard add.", (Add("a", 1700000000000),))
        [(span, _)] = version_ranges(case)
        assert span == Range(versions.EARLIEST)

    def test_pause_splits_at_6_0_0_only(self) -> None:
        case = Case("p", "Add then pause.", (Add("a", 1700000000000), Pause()))
        spans = [span for span, _ in version_ranges(case)]
        assert spans == [Range((6, 0, 0)), Range((5, 0, 0), (6, 0, 0))]

    def test_bundled_ranges_are_disjoint_per_case_and_cover_every_boundary(
            self, every_vector: list[Vector]) -> None:
        by_case: dict[str, list[Range]] = {}
        for vector in every_vector:
            by_case.setdefault(vector.id.partition(".until-")[0], []).append(vector.span)
        for case, spans in by_case.items():
            ordered = sorted(spans)
            # from the earliest supported version, or its scripts' floor
            assert ordered[0].since in versions.FLOORS, case
            for older, newer in itertools.pairwise(ordered):
                assert older.until == newer.since, case  # contiguous, no overlap
            # on, or up to the release that removed the case's ops
            assert ordered[-1].until is None or ordered[-1].until in versions.REMOVALS, case
        observed = {span.until for spans in by_case.values() for span in spans} - {None}
        assert observed == set(versions.STATE_BOUNDARIES) - {versions.EARLIEST}

    def test_older_ids_name_their_end(self, every_vector: list[Vector]) -> None:
        for vector in every_vector:
            if vector.older:
                assert vector.id.endswith(f".until-{versions.text(vector.span.until)}")
            else:
                assert vector.span.until is None or vector.span.until in versions.REMOVALS


class TestRunProtocol:
    @pytest.mark.parametrize(("value", "says"), [
        ("5.8", "is not a version"), ("4.18.3", "outside the supported versions"),
        ("7.1.0", "outside the supported versions")])
    def test_bad_protocol_is_exit_2_listing_the_ranges(self, value: str, says: str) -> None:
        proc = cli("run", "--protocol", value)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0]
        assert "5.0.0 up to 5.1.1" in lines[0] and "6.5.1 up to 7.0.0" in lines[0]

    def test_our_6x_scripts_are_not_a_5_8_5_port(self, redis_url: str) -> None:
        proc = cli("run", "-q", "--examples", "0", "--redis", redis_url, "--protocol", "5.8.5",
                   "-k", "band-bump/2-same-ms")
        assert proc.returncode == 1
        assert "band-bump/2-same-ms.until-5.8.6" in proc.stdout
        assert "protocol 5.8.5" in proc.stdout.splitlines()[0]
        assert "1 failed of 1 applicable; 2 not applicable (other protocol ranges)" in proc.stdout


class TestIdentify:
    def identify(self, candidate: str, redis_url: str) -> tuple[int, dict[str, object]]:
        proc = cli("identify", "--json", "--candidate", candidate, "--redis", redis_url)
        return proc.returncode, json.loads(proc.stdout)

    def test_our_scripts_speak_6(self, redis_url: str) -> None:
        code, found = self.identify("reference", redis_url)
        assert code == 0
        assert found["protocol"] == {"since": "6.5.1", "until": None}
        assert found["older_than_supported"] is False
        evidence = found["evidence"]
        assert isinstance(evidence, list)
        assert "flow-add/duplicate-parent-gone.until-6.5.1" in evidence

    def test_a_5x_pause_in_a_6x_port_fits_no_range(self, tmp_path: Path,
                                                   redis_url: str) -> None:
        mutant = next(m for m in CATALOG if m.name == "pause-renames-wait")
        write_mutant(lua_dir(), tmp_path / "lua", mutant)
        code, found = self.identify(f"scripts:{tmp_path / 'lua'}", redis_url)
        assert code == 1 and found["protocol"] is None
        closest = found["closest"]
        # The newest range: 6.7.0's getCounts cutoff is a fact only it passes.
        assert isinstance(closest, dict) and closest["since"] == "6.7.0"
        assert "pause/adds-while-paused" in closest["failed"]

    def test_4x_scripts_are_older_than_supported(self, tmp_path: Path, redis_url: str) -> None:
        old = tmp_path / "v4"
        shutil.copytree(lua_dir(), old)
        (old / "moveToActive-11.lua").rename(old / "moveToActive-10.lua")
        (old / "addStandardJob-9.lua").rename(old / "addStandardJob-6.lua")
        code, found = self.identify(f"scripts:{old}", redis_url)
        assert code == 1 and found["older_than_supported"] is True
        proc = cli("run", "--candidate", f"scripts:{old}", "--redis", redis_url)
        assert proc.returncode == 2 and "older than the earliest supported" in proc.stderr


class TestIdentifyLogic:
    """`identify` on hand-made judgements: two facts that changed at 5.8.6 and 6.0.0."""

    @staticmethod
    def judged(passing: set[str]) -> list[Judged]:
        spans = {"score": Range((5, 8, 6)), "score.until-5.8.6": Range((5, 0, 0), (5, 8, 6)),
                 "pause": Range((6, 0, 0)), "pause.until-6.0.0": Range((5, 0, 0), (6, 0, 0))}
        return [Judged(vid, span, Outcome.PASSED if vid in passing else Outcome.FAILED)
                for vid, span in spans.items()]

    def test_a_5x_port_after_5_8_6(self) -> None:
        found = identify("port", self.judged({"score", "pause.until-6.0.0"}))
        assert found.protocol == Range((5, 8, 6), (6, 0, 0))
        # before 5.8.6 its scores are wrong; from 6.0.0 its pause is
        assert found.before is not None and found.before.failing == ("score.until-5.8.6",)
        assert found.after is not None and found.after.failing == ("pause",)
        assert found.evidence == ("pause", "score.until-5.8.6")

    def test_no_fit_names_the_closest_and_what_fails_there(self) -> None:
        # new scores, but a 5.x pause and also a broken 6.x pause: nothing fits
        found = identify("port", self.judged({"score"}))
        assert found.protocol is None and found.closest is not None
        assert found.closest.failing in (("pause",), ("pause.until-6.0.0",))
        assert found.as_dict()["closest"]["failed"] == list(found.closest.failing)

    def test_the_closest_range_is_the_smallest_share_failing_not_the_fewest(self) -> None:
        # A 6.x port with 2 bugs among 20 vectors only 6.x has: from 6.0.0, 2 of 21 fail;
        # before it, 1 of 2 (its 5.x pause is not a 5.x port's). Fewest failures would name 5.x.
        sixes = {f"worker-{n}": Range((6, 0, 0)) for n in range(20)}
        judged = [*self.judged({"score", "pause"}),
                  *(Judged(vid, span, Outcome.FAILED if vid in ("worker-0", "worker-1")
                           else Outcome.PASSED) for vid, span in sixes.items())]
        found = identify("port", judged)
        assert found.protocol is None and found.closest is not None
        assert found.closest.span.since == (6, 0, 0)
        assert found.closest.failing == ("worker-0", "worker-1")

    def test_no_marker_zset_is_a_hint_not_a_version(self) -> None:
        found = identify("port", self.judged({"score"}), frozenset({"pause", "pause.until-6.0.0"}))
        assert not found.older_than_supported and found.protocol is None
        assert found.closest is not None and "writes no marker zset" in found.reason


RECORDING_ADAPTER = '''\
import json, sys
seen = open(sys.argv[1], "a")
for line in sys.stdin:
    request = json.loads(line)
    if request["type"] == "start":
        reply = {"implementation": {"name": "recorder", "version": "0"}}
    elif request["type"] == "stop":
        reply = {"stopped": True}
    else:
        seen.write(request["op"]["op"] + " " + request.get("bullmq", "-") + "\\n")
        seen.flush()
        reply = {"skipped": True, "reason": "records only"}
    reply["seq"] = request["seq"]
    print(json.dumps(reply), flush=True)
    if request["type"] == "stop":
        break
'''


def test_adapters_are_told_the_version_each_vector_is_judged_at(tmp_path: Path,
                                                                 redis_url: str) -> None:
    adapter, seen = tmp_path / "recorder.py", tmp_path / "seen.txt"
    adapter.write_text(RECORDING_ADAPTER, encoding="utf-8")
    spec = f"command:{sys.executable} {adapter} {seen}"
    cli("run", "--candidate", spec, "--redis", redis_url, "--examples", "0", "--protocol",
        "5.8.5", "-k", "delayed-score/delay-5000")
    assert seen.read_text().splitlines() == ["add 5.8.5"]
    seen.unlink()
    cli("identify", "--candidate", spec, "--redis", redis_url, "--vectors",
        str(one_file_of(tmp_path, "delayed-score/delay-5000")))
    # the current vector from 5.8.6, its two older ranges at their own first versions
    assert sorted(seen.read_text().splitlines()) == ["add 5.0.0", "add 5.1.10", "add 5.8.6"]


def one_file_of(tmp_path: Path, case: str) -> Path:
    """A vector directory holding the delayed-score file cut down to one setup's vectors."""
    import yaml

    source = vectors_dir() / "delayed-score.yaml"
    document = yaml.safe_load(source.read_text(encoding="utf-8"))
    document["tests"] = [t for t in document["tests"] if t["id"].split(".until-")[0] == case]
    document["number_of_tests"] = len(document["tests"])
    directory = tmp_path / "vectors"
    directory.mkdir()
    (directory / "delayed-score.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")
    return directory
