"""Render the vector files: each area's cases with the model's expectations, as YAML, and the
same documents as JSON under `json/` for readers without a YAML parser.

This is the vector *generator* (cases in, files out). What the protocol does is in the model
(`reference_impl.model`) and the expected state a run compares against (`reference_impl.expected`);
the runner uses those and the vector files, never this module.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

import reference_impl
from reference_impl import versions
from reference_impl.cases import Area, Case, Flag
from reference_impl.expected import expect_for
from reference_impl.ops import op_to_dict
from reference_impl.versions import Range

SCHEMA_VERSION = 3
#: Every file the generator writes, as globs relative to the vector directory.
GENERATED_GLOBS = ("*.yaml", "json/*.json")
PROTOCOL = "bullmq"
#: The flag every vector of an older protocol range carries.
OLDER_FLAG = "older-protocol"
OLDER_NOTE = Flag(
    "older-protocol",
    "The fact as an older protocol range states it. The same ops hold otherwise from the "
    "range's `until` on; a port that speaks this range passes it under --protocol.",
)

#: The version of the matching rules (docs/VECTORS.md, "Matching rules") the files are
#: written for. A change to how any value is matched bumps it.
RULES_VERSION = 1


def version_ranges(case: Case, since: versions.Version | None = None
                   ) -> list[tuple[Range, dict[str, Any]]]:
    """The model's expectation at every state boundary, merged where it does not change:
    (range, expect) pairs, newest first. Boundaries the case cannot observe disappear here."""
    floor = case.since or since or versions.EARLIEST
    eras = [floor, *(era for era in versions.STATE_BOUNDARIES if era > floor)]
    groups: list[tuple[versions.Version, dict[str, Any]]] = []
    for era in eras:
        expect = expect_for(case.given, case.when, profile=case.profile,
                            one_slot=case.one_slot, protocol=era)
        if not groups or groups[-1][1] != expect:
            groups.append((era, expect))
    out = []
    for i, (since, expect) in enumerate(groups):
        until = groups[i + 1][0] if i + 1 < len(groups) else None
        out.append((Range(since, until), expect))
    return out[::-1]


def _test(area: Area, case: Case, span: Range, expect: dict[str, Any]) -> dict[str, Any]:
    base = f"{area.name}/{case.name}"
    if span.until is None:
        test: dict[str, Any] = {"id": base, "description": case.description,
                                "since": versions.text(span.since)}
        flags = list(case.flags)
    else:
        test = {"id": f"{base}.until-{versions.text(span.until)}",
                "description": f"Before {versions.text(span.until)}, "
                f"{versions.BEFORE[span.until]}: the ops of {base}.",
                "since": versions.text(span.since), "until": versions.text(span.until)}
        flags = [*case.flags, OLDER_FLAG]
    test["flags"] = flags
    if case.profile is not None:
        test["profile"] = case.profile
    if case.needs:
        test["needs"] = list(case.needs)
    test["given"] = dict(case.given)
    test["when"] = [op_to_dict(op) for op in case.when]
    test["expect"] = expect
    return test


def _note(flag: Flag) -> dict[str, Any]:
    note: dict[str, Any] = {"bug_type": flag.bug_type, "description": flag.description}
    if flag.links:
        note["links"] = list(flag.links)
    return note


def render_area(area: Area) -> dict[str, Any]:
    """The full document of one vector file."""
    used = {flag for case in area.cases for flag in case.flags}
    missing = used - set(area.notes)
    if missing:
        raise ValueError(f"{area.name}: flags without notes: {sorted(missing)}")
    tests = [_test(area, case, span, expect)
             for case in area.cases for span, expect in version_ranges(case, area.since)]
    all_notes = dict(area.notes)
    if any(OLDER_FLAG in test["flags"] for test in tests):
        used.add(OLDER_FLAG)
        all_notes[OLDER_FLAG] = OLDER_NOTE
    notes = {name: _note(flag) for name, flag in sorted(all_notes.items()) if name in used}
    return {
        "schema_version": SCHEMA_VERSION,
        "protocol": PROTOCOL,
        "area": area.name,
        "description": area.description,
        "generator": {
            "source": f"reference_impl/cases/{area.name.replace('-', '_')}.py",
            "version": reference_impl.__version__,
        },
        "rules_version": RULES_VERSION,
        "notes": notes,
        "number_of_tests": len(tests),
        "tests": tests,
    }


class _PlainDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """A safe dumper that never writes anchors or aliases (objects shared between `when` and
    `expect` would otherwise become `&id001`/`*id001`)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump(document: dict[str, Any]) -> str:
    """Deterministic YAML text: JSON-compatible, no anchors, leaf collections inline."""
    body = yaml.dump(
        document,
        Dumper=_PlainDumper,
        sort_keys=False,
        default_flow_style=None,
        width=100,
        allow_unicode=True,
    )
    header = (
        "# Generated by `bullmq-conformance vectors regenerate` from reference_impl.\n"
        "# Do not edit by hand: change the cases or the model and regenerate.\n"
    )
    return header + body


def all_areas() -> list[Area]:
    """Every vector area: the `AREA` of each module in `reference_impl.cases`, by file name."""
    import reference_impl.cases as package

    areas = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        area = getattr(module, "AREA", None)
        if isinstance(area, Area):
            areas.append(area)
    return sorted(areas, key=lambda a: a.name)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dump_json(document: dict[str, Any]) -> str:
    """Deterministic JSON text of the same document: one line per header key and one compact
    line per test, so that a changed test is a one-line diff."""
    lines = []
    for key, value in document.items():
        if key == "tests" and value:
            text = "[\n" + ",\n".join(_json(test) for test in value) + "\n]"
        else:
            text = _json(value)
        lines.append(f"{_json(key)}:{text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def render_all(areas: Iterable[Area] | None = None) -> dict[str, str]:
    """Relative path -> text of every generated file: `<area>.yaml` and `json/<area>.json`."""
    files = {}
    for area in areas or all_areas():
        document = render_area(area)
        files[f"{area.name}.yaml"] = dump(document)
        files[f"json/{area.name}.json"] = dump_json(document)
    return files


def write_all(directory: Path) -> list[Path]:
    """Write every generated file under `directory`; returns the paths written."""
    written = []
    for name, text in render_all().items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
