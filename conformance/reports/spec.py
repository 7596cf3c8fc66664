"""`docs/SPEC.md`: the protocol as the vectors check it, rendered from the cases, the model's
vector documents and the script layouts, so that it cannot drift from them.

Every statement cites the vectors that check it, as links to their lines in the YAML files.
`vectors regenerate` writes the page and `vectors check` compares it with a fresh rendering.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.candidates.scripts.args import ARGV, OP_SCRIPTS
from conformance.candidates.scripts.candidate import LAYOUTS
from reference_impl import versions
from reference_impl.cases import BUG_TYPES, Area
from reference_impl.generate import GENERATED_BY, OLDER_FLAG, RULES_VERSION, SCHEMA_VERSION
from reference_impl.getter_ops import GetState
from reference_impl.ops import Add, op_from_dict

#: The page's name under docs/, and how it reaches the vector files from there.
SPEC_NAME = "SPEC.md"
_VECTORS = "../vectors"
#: Longest worked example, in YAML lines: longer first cases give way to a later, shorter one.
_EXAMPLE_LINES = 100
_KEY_TYPES = ("string", "list", "zset", "hash", "stream", "set")
_ID_LINE = re.compile(r"^- id: (\S+)$", re.MULTILINE)
#: Cited vector ids in the page, for readers and for the test that they exist.
CITATION = re.compile(r"\[([a-z0-9-]+/[A-Za-z0-9._:{}-]+)\]\(\.\./vectors/")


@dataclass(frozen=True)
class RenderedArea:
    """One area as the generator rendered it: the case module's Area, its vector document and
    the YAML text written for it."""

    area: Area
    document: Mapping[str, Any]
    yaml_text: str

    def lines(self) -> dict[str, int]:
        """The 1-based line of each test's `- id:` in the YAML file."""
        return {m.group(1): self.yaml_text.count("\n", 0, m.start()) + 1
                for m in _ID_LINE.finditer(self.yaml_text)}


def prose(text: str) -> str:
    """Text for Markdown outside code spans: `*`, `<` and `>` are escaped there (a rule's
    `P*2^32` is no emphasis, a note's `<id>` no HTML tag); code spans stay as written."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("*", "\\*").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _cite(name: str, test_id: str, lines: Mapping[str, int]) -> str:
    return f"[{test_id}]({_VECTORS}/{name}.yaml#L{lines[test_id]})"


def _version_label(span: Mapping[str, Any]) -> str:
    until = span.get("until")
    return f"{span['since']} up to {until}" if until else f"{span['since']} on"


def _fixed_suffixes() -> set[str]:
    names = {s for layout in LAYOUTS.values() for s in layout.keys if "{" not in s}
    targets = ("completed", "failed")  # the `{target}` of moveToFinished's layout
    return names | set(targets) | {f"metrics:{t}" for t in targets} \
        | {f"metrics:{t}:data" for t in targets}


def _job_ids(test: Mapping[str, Any]) -> set[str]:
    ids = {r for r in test["expect"]["returns"] if isinstance(r, str)}
    for step in test["when"]:
        ids |= {v for k, v in step.items() if k in ("jobId", "job") and isinstance(v, str)}
        ids |= {v for v in step.get("jobIds", ()) if isinstance(v, str)}
    for result in test["expect"]["returns"]:
        if isinstance(result, dict) and isinstance(result.get("job"), str):
            ids.add(result["job"])
    return ids


def key_pattern(suffix: str, job_ids: Iterable[str], fixed: set[str]) -> str:
    """A key suffix in general form: fixed names as they are, `<id>` for a job's own keys,
    `de:<deduplication id>` and `repeat:<scheduler id>` for deduplication and job scheduler
    keys."""
    if suffix in fixed:
        return suffix
    if suffix.startswith("de:"):
        return "de:<deduplication id>"
    owners = [j for j in job_ids if suffix == j or suffix.startswith(j + ":")]
    if owners:
        return "<id>" + suffix[len(max(owners, key=len)):]
    if suffix.startswith("repeat:"):
        return "repeat:<scheduler id>"
    return "<id>" + suffix[suffix.find(":"):] if ":" in suffix else "<id>"


def _keys_table(rendered: RenderedArea, current: list[Mapping[str, Any]]) -> list[str]:
    fixed = _fixed_suffixes()
    found: dict[str, tuple[set[str], str]] = {}
    for test in current:
        # A seeded hash outside the fixed names is a job's (a job scheduler's is repeat:<id>).
        ids = _job_ids(test) | {k for k, v in test["given"].items()
                                if "hash" in v and not k.startswith("repeat:")}
        for suffix, value in test["expect"]["keys"].items():
            kind = next(k for k in _KEY_TYPES if k in value)
            name = key_pattern(suffix, ids - fixed, fixed)
            found.setdefault(name, (set(), test["id"]))[0].add(kind)
    lines = rendered.lines()
    rows = ["| key (BASE + ...) | type | first vector expecting it |", "| --- | --- | --- |"]
    area = rendered.area.name
    rows += [f"| `{name}` | {', '.join(sorted(kinds))} | {_cite(area, first, lines)} |"
             for name, (kinds, first) in sorted(found.items())]
    return rows


def _scripts(rendered: RenderedArea, current: list[Mapping[str, Any]]) -> list[str]:
    used: dict[str, list[str]] = {}
    for test in current:
        for step in test["when"]:
            op = op_from_dict(step)
            names = OP_SCRIPTS[step["op"]]
            if isinstance(op, Add):
                names = tuple(n for n in names if n.lower().startswith("add" + op.route()))
            elif isinstance(op, GetState):  # getState on a Redis before 6.0.6 only
                names = ("getState",) if op.legacy else ("getStateV2",)
            for script in names:
                callers = used.setdefault(script, [])
                if test["id"] not in callers:
                    callers.append(test["id"])
    lines = rendered.lines()
    out = []
    for name in sorted(used):
        layout, callers = LAYOUTS[name], used[name]
        keys = ", ".join(f"{i} `{k}`" for i, k in enumerate(layout.keys, 1))
        argv = "; ".join(f"{i} {a}" for i, a in enumerate(ARGV[name], 1))
        out += [f"- **`{layout.file_name}`**, called by {len(callers)} current vectors, first "
                f"{_cite(rendered.area.name, callers[0], lines)}",
                f"  - KEYS: {keys}", f"  - ARGV: {argv}"]
    return out or ["- None: the client computes these before any script runs, and writes "
                   "nothing."]


def newest(tests: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The vectors stating each fact as its newest range does (none of an older range's):
    the current protocol's, and the facts of ops a later release removed, up to that release."""
    return [t for t in tests if OLDER_FLAG not in t["flags"]]


def _history(rendered: RenderedArea, tests: list[Mapping[str, Any]]) -> list[str]:
    name, lines = rendered.area.name, rendered.lines()
    current = newest(tests)
    floor = min(versions.parse(t["since"]) for t in current)
    gone = sorted({t["until"] for t in current if "until" in t}, key=versions.parse)
    out = [f"- The newest facts hold from {versions.text(floor)} on"
           + (" (the earliest release they were checked on)" if floor > versions.EARLIEST
              else ", the earliest protocol the vectors cover")
           + (f", up to {' or '.join(gone)}, where their scripts are gone." if gone else ".")]
    by_until: dict[str, list[str]] = {}
    for test in tests:
        if OLDER_FLAG in test["flags"]:
            by_until.setdefault(test["until"], []).append(test["id"])
    for until in sorted(by_until, key=versions.parse):
        ids = by_until[until]
        before = versions.BEFORE[versions.parse(until)]
        out.append(f"- Before {until}, {prose(before)} ({len(ids)} vectors): "
                   + ", ".join(_cite(name, i, lines) for i in ids) + ".")
    return out


def _example(rendered: RenderedArea, current: list[Mapping[str, Any]]) -> list[str]:
    area, lines = rendered.area, rendered.lines()
    ends = [*sorted(lines.values()), rendered.yaml_text.count("\n") + 1]
    text = rendered.yaml_text.splitlines()

    def block(test_id: str) -> list[str]:
        start = lines[test_id]
        end = next(e for e in ends if e > start)
        return text[start - 1:end - 1]

    wanted = f"{area.name}/{area.example}" if area.example else None
    chosen = next((t for t in current if t["id"] == wanted), None) if wanted else next(
        (t for t in current if len(block(t["id"])) <= _EXAMPLE_LINES), current[0])
    if chosen is None:
        raise ValueError(f"{area.name}: example {area.example!r} is not a current vector")
    return [f"{_cite(area.name, chosen['id'], lines)}: {prose(chosen['description'])} Seed "
            "`given` "
            "under BASE, run `when`; each op must return its `expect.returns` entry, and the "
            "keys under BASE must be exactly `expect.keys`.", "", "```yaml",
            *block(chosen["id"]), "```"]


def render_area_section(rendered: RenderedArea) -> list[str]:
    """The section of one area."""
    area, doc, lines = rendered.area, rendered.document, rendered.lines()
    tests = list(doc["tests"])
    current = newest(tests)
    gone = sorted({t["until"] for t in current if "until" in t}, key=versions.parse)
    kind = f"up to {' or '.join(gone)} (their scripts are gone there)" if gone else "current"
    name = area.name
    out = [f"## {name}", "", prose(area.rule or area.description), "",
           f"{prose(area.description)} Vectors: [`vectors/{name}.yaml`]({_VECTORS}/{name}.yaml) "
           f"and [`vectors/json/{name}.json`]({_VECTORS}/json/{name}.json), {len(current)} "
           f"{kind} and {len(tests) - len(current)} for older ranges.", "", "### Facts", ""]
    for flag, note in doc["notes"].items():
        # Older ranges' vectors are cited under Versions; a flag only they carry cites them.
        ids = [t["id"] for t in current if flag in t["flags"]] or \
            [t["id"] for t in tests if flag in t["flags"]]
        out.append(f"- **{flag}** (`{note['bug_type']}`): {prose(note['description'])} "
                   "Checked by " + ", ".join(_cite(name, i, lines) for i in ids) + ".")
    out += ["", "### Keys", "", *_keys_table(rendered, current), "", "### Scripts", "",
            *_scripts(rendered, current), "", "### Versions", "", *_history(rendered, tests), "",
            "### Worked example", "", *_example(rendered, current), "", "### Defect classes",
            ""]
    classes: dict[str, list[str]] = {}
    for flag, note in doc["notes"].items():
        classes.setdefault(note["bug_type"], []).append(flag)
    out += [f"- [`{kind}`](#bug-types): {', '.join(classes[kind])}."
            for kind in BUG_TYPES if kind in classes]
    links = sorted({url for note in doc["notes"].values() for url in note.get("links", ())})
    out += ["", "### Links", ""]
    out += [f"- <{url}>" for url in links] or ["- No upstream issue or release; the facts "
                                               "were read from the scripts and checked on "
                                               "real releases."]
    return [*out, ""]


def render_spec(areas: Iterable[RenderedArea]) -> str:
    """The whole page."""
    areas = list(areas)
    tests = [t for r in areas for t in r.document["tests"]]
    current = sum(1 for t in tests if "until" not in t)
    gone = sum(1 for t in newest(tests) if "until" in t)
    out = ["# The BullMQ protocol, as the vectors check it", "",
           f"<!-- {GENERATED_BY} Do not edit by hand: change the cases or the model and "
           "regenerate. -->", "",
           "BullMQ's protocol is the Redis state its Lua scripts write: key names, sorted-set "
           "scores, lists, hashes and events. This page states it area by area, for authors "
           "of ports. Every statement cites the vectors that check it; each vector passes on "
           "the official BullMQ scripts of the versions it names.", "",
           f"{len(areas)} areas, {len(tests)} vectors: {current} for the current protocol, "
           f"{gone} for 5.x ops gone at 6.0.0 and {len(tests) - current - gone} for older "
           "ranges. Versions are npm `bullmq` versions; "
           f"a fact holds for `[since, until)`. The vector format (schema version "
           f"{SCHEMA_VERSION}) and the matching rules (rules version {RULES_VERSION}) are in "
           "[VECTORS.md](VECTORS.md).", "", "## Conventions", "",
           "- BASE is `bull:<queue>:` (the `bullmq` key profile) or `emq:{<queue>}:` "
           "(`echomq`); every key is BASE + a suffix, and a job's hash is BASE + its id.",
           "- F is a fire time in ms; delayed scores pack it as `F * 0x1000` (0x1000 = 4096).",
           "- Callers pass every time (`now`, `timestamp`); scripts never read the Redis clock "
           "for a score.", "- KEYS and ARGV are listed as BullMQ 6.x sends them; "
           "`{...}` in a KEYS name is filled per call (`{job}` is BASE + the job id).", "",
           "## Bug types", "", "Each fact guards one class of defect (a note's `bug_type`).",
           "", "| bug type | defect | facts |", "| --- | --- | --- |"]
    counts = {k: sum(1 for r in areas for n in r.document["notes"].values()
                     if n["bug_type"] == k) for k in BUG_TYPES}
    out += [f"| `{k}` | {prose(v)} | {counts[k]} |" for k, v in BUG_TYPES.items()]
    out += ["", "## Version boundaries", "", "| from | before it | vectors of the older range |",
            "| --- | --- | --- |"]
    for boundary, before in versions.BEFORE.items():
        older = sum(1 for t in tests if t.get("until") == versions.text(boundary))
        out.append(f"| {versions.text(boundary)} | {prose(before)} | {older} |")
    out += ["", "## Areas", ""]
    out += [f"- [{r.area.name}](#{r.area.name}): {prose(r.area.description)}" for r in areas]
    out.append("")
    for rendered in areas:
        out += render_area_section(rendered)
    return "\n".join(out).rstrip("\n") + "\n"
