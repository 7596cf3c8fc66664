"""The JSON twins of the vector files (`vectors/json/`): read with the standard library alone,
schema-valid, the same documents as the YAML, byte-stable, and drift-checked by `vectors check`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conformance.core.resources import vectors_dir
from conformance.vectors.yaml_strict import compose
from reference_impl.generate import render_all
from tests.cli_helpers import cli

VECTORS_DIR = vectors_dir()
JSON_DIR = VECTORS_DIR / "json"
JSON_FILES = sorted(JSON_DIR.glob("*.json"))
SMALL = "next-wake"


def assert_same(yaml_value: Any, json_value: Any, where: str = "") -> None:
    """Equal and of the same types all the way down (`==` alone takes 1 for 1.0 and True)."""
    assert type(yaml_value) is type(json_value), (where, yaml_value, json_value)
    if isinstance(yaml_value, dict):
        assert list(yaml_value) == list(json_value), where
        for key, value in yaml_value.items():
            assert_same(value, json_value[key], f"{where}.{key}")
    elif isinstance(yaml_value, list):
        assert len(yaml_value) == len(json_value), where
        for index, (a, b) in enumerate(zip(yaml_value, json_value, strict=True)):
            assert_same(a, b, f"{where}[{index}]")
    else:
        assert yaml_value == json_value, where


def test_every_yaml_file_has_a_json_twin_and_no_other() -> None:
    assert {p.stem for p in JSON_FILES} == {p.stem for p in VECTORS_DIR.glob("*.yaml")}
    assert {p.name for p in JSON_DIR.iterdir()} == {p.name for p in JSON_FILES}


@pytest.mark.parametrize("path", JSON_FILES, ids=[p.stem for p in JSON_FILES])
def test_json_file_loads_with_the_stdlib_and_is_schema_valid(path: Path) -> None:
    with (VECTORS_DIR / "schema.json").open(encoding="utf-8") as handle:
        schema = json.load(handle)
    with path.open(encoding="utf-8") as handle:
        document = json.load(handle)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    errors = [error.message for error in validator_class(schema).iter_errors(document)]
    assert errors == [], (path.name, errors[:3])
    assert document["area"] == path.stem
    assert document["number_of_tests"] == len(document["tests"])


@pytest.mark.parametrize("path", JSON_FILES, ids=[p.stem for p in JSON_FILES])
def test_json_file_is_its_yaml_twin(path: Path) -> None:
    yaml_path = VECTORS_DIR / f"{path.stem}.yaml"
    _, from_yaml, _, _ = compose(yaml_path, yaml_path.read_bytes())
    from_json = json.loads(path.read_bytes())
    assert [t["id"] for t in from_json["tests"]] == [t["id"] for t in from_yaml["tests"]]
    assert_same(from_yaml, from_json, path.stem)


def test_json_regeneration_is_byte_identical() -> None:
    first, second = render_all(), render_all()
    names = sorted(name for name in first if name.startswith("json/"))
    assert names == [f"json/{p.name}" for p in JSON_FILES]
    for name in names:
        assert first[name] == second[name], name
        assert (VECTORS_DIR / name).read_bytes() == first[name].encode("utf-8"), name


def test_vectors_check_fails_on_an_edited_missing_or_extra_json_file(tmp_path: Path) -> None:
    out = tmp_path / "vectors"
    shutil.copytree(VECTORS_DIR, out, ignore=shutil.ignore_patterns("__pycache__"))
    edited, removed, extra = (out / "json" / f"{SMALL}.json", out / "json" / "pause.json",
                              out / "json" / "extra.json")
    edited.write_text(edited.read_text().replace("1700000005000", "1700000005001", 1))
    removed.unlink()
    extra.write_text("{}\n")
    proc = cli("vectors", "check", "--vectors", str(out))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        f"{edited}: differs from a fresh regeneration; run `bullmq-conformance vectors "
        "regenerate`",
        f"{removed}: missing; run `bullmq-conformance vectors regenerate`",
        f"{extra}: not produced by the generator",
    ]
