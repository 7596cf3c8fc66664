"""docs/SPEC.md, docs/VECTORS.md and the notes as data: the spec is what the vectors render to,
every vector it cites exists at the line it links, every area has a worked example that is a
real vector, and the fixed list of bug types is the schema's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.core.resources import vectors_dir
from conformance.reports.spec import RenderedArea, key_pattern, prose, render_spec
from reference_impl.cases import BUG_TYPES, Flag
from reference_impl.generate import RULES_VERSION, SCHEMA_VERSION, render_documents
from tests.cli_helpers import cli

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "docs" / "SPEC.md"
VECTORS_DOC = ROOT / "docs" / "VECTORS.md"
LINK = re.compile(r"\[([^\]]+)\]\(\.\./vectors/([a-z0-9-]+)\.yaml#L(\d+)\)")


@pytest.fixture(scope="module")
def documents() -> list[tuple[Any, dict[str, Any], str]]:
    return render_documents()


@pytest.fixture(scope="module")
def files() -> dict[str, dict[str, Any]]:
    """Each bundled YAML file's test ids -> (line of its `- id:`, test)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(vectors_dir().glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        lines = {m.group(1): text.count("\n", 0, m.start()) + 1
                 for m in re.finditer(r"^- id: (\S+)$", text, re.MULTILINE)}
        tests = {t["id"]: t for t in yaml.load(text, Loader=yaml.CSafeLoader)["tests"]}
        out[path.stem] = {i: (lines[i], tests[i]) for i in tests}
    return out


def citation_problems(spec: str, files: dict[str, dict[str, Any]]) -> list[str]:
    """Every cited id that is not in the file it links, or not at the line it links."""
    problems = []
    for label, stem, line in LINK.findall(spec):
        found = files.get(stem, {}).get(label)
        if found is None:
            problems.append(f"{label}: no such vector in vectors/{stem}.yaml")
        elif found[0] != int(line):
            problems.append(f"{label}: linked at line {line}, is at line {found[0]}")
    return problems


def sections(spec: str) -> dict[str, str]:
    parts = re.split(r"^## ", spec, flags=re.MULTILINE)
    return {p.split("\n", 1)[0]: p for p in parts[1:]}


def test_spec_is_the_rendering_of_the_vectors(documents: list[Any]) -> None:
    assert SPEC.read_text(encoding="utf-8") == render_spec(
        RenderedArea(a, d, y) for a, d, y in documents)


def test_every_cited_vector_exists_at_its_line(files: dict[str, dict[str, Any]]) -> None:
    spec = SPEC.read_text(encoding="utf-8")
    cited = LINK.findall(spec)
    assert len({label for label, _, _ in cited}) > 800  # nearly every vector is cited
    assert citation_problems(spec, files) == []


def test_citation_check_catches_a_wrong_id_and_a_wrong_line(
        files: dict[str, dict[str, Any]]) -> None:
    spec = SPEC.read_text(encoding="utf-8")
    label, stem, line = LINK.findall(spec)[0]
    wrong_id = spec.replace(f"[{label}](../vectors/{stem}.yaml#L{line})",
                            f"[{label}-nope](../vectors/{stem}.yaml#L{line})", 1)
    wrong_line = spec.replace(f"[{label}](../vectors/{stem}.yaml#L{line})",
                              f"[{label}](../vectors/{stem}.yaml#L{int(line) + 1})", 1)
    assert citation_problems(wrong_id, files) == [
        f"{label}-nope: no such vector in vectors/{stem}.yaml"]
    assert len(citation_problems(wrong_line, files)) == 1


def test_every_area_has_a_rule_facts_and_a_worked_example_that_is_a_real_vector(
        documents: list[Any], files: dict[str, dict[str, Any]]) -> None:
    by_name = sections(SPEC.read_text(encoding="utf-8"))
    for area, document, _ in documents:
        section = by_name[area.name]
        assert area.rule and prose(area.rule) in section
        for flag in document["notes"]:
            assert re.search(rf"^- \*\*{re.escape(flag)}\*\* .*Checked by \[", section,
                             re.MULTILINE), (area.name, flag)
        example = section.split("### Worked example\n", 1)[1].split("### ", 1)[0]
        label, stem, _ = LINK.search(example).groups()  # type: ignore[union-attr]
        assert stem == area.name and "older-protocol" not in files[stem][label][1]["flags"]
        block = example.split("```yaml\n", 1)[1].split("```", 1)[0]
        assert yaml.safe_load(block) == [files[stem][label][1]]


def test_vectors_check_fails_on_a_stale_spec(tmp_path: Path) -> None:
    stale = tmp_path / "SPEC.md"
    stale.write_text(SPEC.read_text(encoding="utf-8").replace("## pause\n", "## pause!\n"))
    proc = cli("vectors", "check", "--spec", str(stale))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"{stale}: differs from the spec rendered from the vectors; "
                                   "run `bullmq-conformance vectors regenerate`")


def test_key_patterns_generalize_job_keys() -> None:
    fixed = {"wait", "meta", "metrics:completed"}
    ids = {"1", "repeat:s:1700000000000"}
    assert key_pattern("wait", ids, fixed) == "wait"
    assert key_pattern("1", ids, fixed) == "<id>"
    assert key_pattern("1:lock", ids, fixed) == "<id>:lock"
    assert key_pattern("repeat:s:1700000000000:logs", ids, fixed) == "<id>:logs"
    assert key_pattern("de:abc", ids, fixed) == "de:<deduplication id>"
    assert key_pattern("repeat:s", ids, fixed) == "repeat:<scheduler id>"


def test_prose_escapes_markdown_outside_code_spans_only() -> None:
    assert prose("P*2^32 at de:<id>, `P*2^32 <x>`") == \
        "P\\*2^32 at de:&lt;id&gt;, `P*2^32 <x>`"


def test_bug_types_are_the_schemas_enum_and_all_in_use(documents: list[Any]) -> None:
    schema = json.loads((vectors_dir() / "schema.json").read_text(encoding="utf-8"))
    note = schema["properties"]["notes"]["additionalProperties"]["properties"]
    assert note["bug_type"]["enum"] == list(BUG_TYPES)
    used = {n["bug_type"] for _, d, _ in documents for n in d["notes"].values()}
    assert used == set(BUG_TYPES)
    assert 10 <= len(BUG_TYPES) <= 14
    with pytest.raises(ValueError, match="unknown bug_type 'wrong-score'"):
        Flag("wrong-score", "an ad-hoc class")


def test_links_point_at_bullmq_sources(documents: list[Any]) -> None:
    links = [u for _, d, _ in documents for n in d["notes"].values() for u in n.get("links", ())]
    assert len(links) >= 20
    for url in links:
        assert re.fullmatch(r"https://(github\.com/(taskforcesh/bullmq|bogardt/bullmq-rs)/"
                            r"(issues|pull|releases/tag)/[\w.]+|pypi\.org/project/bullmq/"
                            r"[\d.]+/)", url), url


def test_vectors_doc_states_the_versions_and_a_real_example(
        files: dict[str, dict[str, Any]]) -> None:
    text = VECTORS_DOC.read_text(encoding="utf-8")
    assert f"- Schema version: **{SCHEMA_VERSION}**" in text
    assert f"- Rules version: **{RULES_VERSION}**" in text
    assert f"Rules version **{RULES_VERSION}**." in text
    for kind in BUG_TYPES:
        assert f"`{kind}`" in text
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    [example] = yaml.safe_load(block)
    assert example == files["delayed-score"][example["id"]][1]
    for path in vectors_dir().glob("*.yaml"):
        header = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        assert header["rules_version"] == RULES_VERSION and "rules" not in header
