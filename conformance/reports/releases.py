"""`bullmq-conformance report --releases OUT RELEASES_JSON`: the page of real releases.

`ci/releases.sh` runs `identify` and `run` on a pinned spread of real BullMQ releases (npm and
PyPI scripts directories, the Python clients and their forks, the Node client) and writes
`releases.json`; this module defines that document (`Releases`, `Release`), reads and checks
it, and renders one static page from it: a row per release, with the protocol range `identify`
named, a cell per vector area (passed/applicable, coloured), and the vectors it fails.

The page is self-contained and has no script: the failing ids unfold in `<details>`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jsonschema

from conformance.core.errors import UsageError
from conformance.core.outcomes import Tally
from conformance.reports.markup import area_cell, document, e

RELEASES_VERSION = 1

_SPAN = {"type": "object", "required": ["since", "until"],
         "properties": {"since": {"type": "string"}, "until": {"type": ["string", "null"]}}}
_IDS = {"type": "array", "items": {"type": "string"}}
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["releases_version", "suite_version", "redis", "areas", "rows"],
    "properties": {
        "releases_version": {"const": RELEASES_VERSION},
        "suite_version": {"type": "string"},
        "redis": {"type": "string"},
        "areas": _IDS,
        "rows": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "slug", "kind", "registry", "package", "version", "protocol",
                         "identify", "areas", "failed", "errored", "known", "problems"],
            "properties": {
                "name": {"type": "string"},
                "slug": {"type": "string", "pattern": "^[a-z0-9][a-z0-9.-]*$"},
                "kind": {"enum": ["scripts", "client", "sdk", "port"]},
                "registry": {"enum": ["npm", "pypi", "crates"]},
                "package": {"type": "string"}, "version": {"type": "string"},
                "protocol": {"type": ["string", "null"]},
                "identify": {"type": "object",
                             "required": ["protocol", "closest", "older_than_supported"],
                             "properties": {"protocol": {"oneOf": [{"type": "null"}, _SPAN]},
                                            "closest": {"oneOf": [{"type": "null"}, _SPAN]},
                                            "older_than_supported": {"type": "boolean"}}},
                "areas": {"type": "object", "additionalProperties": {
                    "type": "object", "additionalProperties": {"type": "integer", "minimum": 0},
                    "propertyNames": {"enum": list(Tally().as_dict())}}},
                "failed": _IDS, "errored": _IDS,
                "known": {"type": ["string", "null"]},
                "problems": _IDS,
                "scripts": {"oneOf": [{"type": "null"}, {
                    "type": "object", "required": ["covered", "uncovered"],
                    "additionalProperties": False,
                    "properties": {"covered": _IDS, "uncovered": _IDS}}]},
            },
        }},
    },
}


def range_text(identified: Mapping[str, Any]) -> str:
    """The protocol range of an `identify --json` result in words: `6.3.7 on`,
    `5.1.10 up to 5.5.4` (the end excluded), `older than supported`, or
    `none fits (closest 5.28.0 up to 6.0.0)`."""

    def span(found: Mapping[str, Any]) -> str:
        until = found["until"]
        return f"{found['since']} on" if until is None else f"{found['since']} up to {until}"

    if identified["older_than_supported"]:
        return "older than supported"
    if identified["protocol"] is not None:
        return span(identified["protocol"])
    closest = identified.get("closest")
    return f"none fits (closest {span(closest)})" if closest else "none fits"


@dataclass(frozen=True)
class ScriptsCovered:
    """Which of a scripts directory's queue scripts the vectors call, by name."""

    covered: tuple[str, ...]
    uncovered: tuple[str, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ScriptsCovered | None:
        """From a row's `scripts` (None: not a scripts row, or an older document)."""
        return None if data is None else cls(tuple(data["covered"]), tuple(data["uncovered"]))

    def as_dict(self) -> dict[str, list[str]]:
        """As a row holds it."""
        return {"covered": list(self.covered), "uncovered": list(self.uncovered)}

    def text(self) -> str:
        """`41 of 50`."""
        return f"{len(self.covered)} of {len(self.covered) + len(self.uncovered)}"


@dataclass(frozen=True)
class Release:
    """One row: a release's scripts directory or client, and what the suite found.

    `protocol` is the npm bullmq version it was judged under (None: not run, as for a release
    older than supported); `identify` is `identify --json`'s result; `areas` the run's tally per
    area; `known` the reason of a known bug its failures are expected for; `problems` what the
    CI gate found wrong with it (none on a good run); `scripts`, for a scripts directory,
    which of its queue scripts the vectors call and which they do not, by name.
    """

    name: str
    slug: str
    kind: Literal["scripts", "client", "sdk", "port"]
    registry: Literal["npm", "pypi", "crates"]
    package: str
    version: str
    protocol: str | None
    identify: Mapping[str, Any]
    areas: Mapping[str, Tally]
    failed: tuple[str, ...] = ()
    errored: tuple[str, ...] = ()
    known: str | None = None
    problems: tuple[str, ...] = ()
    scripts: ScriptsCovered | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Release:
        """A row of a checked `releases.json` document."""
        return cls(data["name"], data["slug"], data["kind"], data["registry"], data["package"],
                   data["version"], data["protocol"], data["identify"],
                   {area: Tally(**counts) for area, counts in data["areas"].items()},
                   tuple(data["failed"]), tuple(data["errored"]), data["known"],
                   tuple(data["problems"]), ScriptsCovered.from_dict(data.get("scripts")))

    def as_dict(self) -> dict[str, Any]:
        """The row as `releases.json` holds it."""
        return {"name": self.name, "slug": self.slug, "kind": self.kind,
                "registry": self.registry, "package": self.package, "version": self.version,
                "protocol": self.protocol, "identify": dict(self.identify),
                "areas": {area: tally.as_dict() for area, tally in self.areas.items()},
                "failed": list(self.failed), "errored": list(self.errored),
                "known": self.known, "problems": list(self.problems),
                "scripts": None if self.scripts is None else self.scripts.as_dict()}

    @property
    def range(self) -> str:
        """The identified protocol range in words (`range_text`)."""
        return range_text(self.identify)


@dataclass(frozen=True)
class Releases:
    """The `releases.json` document: every row, the areas (columns) in order, and what ran."""

    suite_version: str
    redis: str
    areas: tuple[str, ...]
    rows: tuple[Release, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """The document, as written to `releases.json`."""
        return {"releases_version": RELEASES_VERSION, "suite_version": self.suite_version,
                "redis": self.redis, "areas": list(self.areas),
                "rows": [row.as_dict() for row in self.rows]}


def load_releases(path: Path) -> Releases:
    """Read and check a `releases.json`; UsageError (one line) when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        cause = getattr(exc, "strerror", None) or "not UTF-8 text"
        raise UsageError(f"{path}: cannot read it ({cause})") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not JSON ({exc.msg} at line {exc.lineno} column "
                         f"{exc.colno})") from None
    except RecursionError:
        raise UsageError(f"{path}: not a releases document (nested too deeply)") from None
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(_SCHEMA).iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
        raise UsageError(f"{path}: not a releases document (version {RELEASES_VERSION}, "
                         f"as ci/releases.sh writes): at {where}: {message}")
    slugs = Counter(row["slug"] for row in data["rows"])
    twice = sorted(slug for slug, count in slugs.items() if count > 1)
    if twice:
        raise UsageError(f"{path}: row slug {twice[0]!r} is used more than once")
    return Releases(data["suite_version"], data["redis"], tuple(data["areas"]),
                    tuple(Release.from_dict(row) for row in data["rows"]))


def _by_area(ids: Sequence[str]) -> str:
    """`change-priority 24, pause 1`: how many ids per area, most first."""
    counts = Counter(vector_id.split("/", 1)[0] for vector_id in ids)
    return ", ".join(f"{area} {count}" for area, count in counts.most_common())


def _bugs(row: Release) -> str:
    parts = []
    for word, ids in (("failed", row.failed), ("errored", row.errored)):
        if ids:
            items = "".join(f"<li>{e(i)}</li>" for i in ids)
            parts.append(f"<details><summary>{len(ids)} {word}: {e(_by_area(ids))}</summary>"
                         f"<ul>{items}</ul></details>")
    if row.known:
        parts.append(f'<p class="known">known bug: {e(row.known)}</p>')
    parts += [f'<p class="problem">CI: {e(problem)}</p>' for problem in row.problems]
    return "".join(parts) or '<span class="none">none</span>'


def _judged(row: Release) -> str:
    if row.protocol is None:
        return '<span class="none">not run</span>'
    return e(row.protocol)


def _row(row: Release, areas: Sequence[str]) -> str:
    cells = []
    for area in areas:
        tally = row.areas.get(area)
        if tally is None:
            cells.append(area_cell(None, f"{area}: not run"))
            continue
        tip = (f"{area}: {tally.passed} passed, {tally.failed} failed, {tally.errored} errored, "
               f"{tally.skipped} skipped (not in the range of {row.protocol})")
        cells.append(area_cell(tally, tip, compact=True))
    span = row.identify["protocol"] or row.identify.get("closest")
    tip = (f"npm bullmq {span['since']} up to {span['until'] or 'now'} (the end excluded)"
           if span else "")
    state = "bad" if row.failed or row.errored or row.problems else "good"
    if row.scripts is None:
        covered = '<td class="none">-</td>'
    else:
        left = ", ".join(row.scripts.uncovered) or "none"
        covered = (f'<td class="scripts" title="{e("not called by any vector: " + left)}">'
                   f"{e(row.scripts.text())}</td>")
    return (f'<tr id="r-{e(row.slug)}" class="release {state}">'
            f'<th scope="row"><span class="cand">{e(row.name)}</span></th>'
            f"<td>{e(row.kind)}</td><td>{_judged(row)}</td>"
            f'<td class="range" title="{e(tip)}">{e(row.range)}</td>{covered}'
            + "".join(cells) + f'<td class="bugs">{_bugs(row)}</td></tr>')


def render_releases(releases: Releases) -> str:
    """The releases page, as a self-contained HTML document."""
    heads = "".join(f'<th scope="col" class="area"><span>{e(area)}</span></th>'
                    for area in releases.areas)
    rows = "".join(_row(row, releases.areas) for row in releases.rows)
    body = (
        "<h1>bullmq-conformance: real BullMQ releases</h1>"
        '<p class="legend">One row per release: its protocol range as <code>identify</code> '
        "names it (npm bullmq versions, the end excluded), for a scripts directory how many "
        "of its queue scripts (the relay's aside) the vectors call, then each vector area "
        "under the version it is judged at: passed / applicable, "
        '<span class="good">green</span> every one passed, <span class="bad">red</span> one '
        'failed or errored, <span class="none">grey</span> none applies or not run. '
        f"{len(releases.rows)} releases · suite {e(releases.suite_version)} · redis "
        f"{e(releases.redis)}</p>"
        '<div class="wrap"><table id="releases"><thead><tr><th scope="col">release</th>'
        '<th scope="col">kind</th><th scope="col">judged under</th>'
        f'<th scope="col">protocol range</th><th scope="col">scripts covered</th>{heads}'
        '<th scope="col">bugs found</th></tr>'
        f"</thead><tbody>{rows}</tbody></table></div>")
    return document("bullmq-conformance: real releases", body)


def main(args: argparse.Namespace) -> int:
    """`report --releases OUT RELEASES_JSON`: check the document and write the page."""
    if len(args.reports) != 1:
        raise UsageError(f"--releases takes one releases.json (ci/releases.sh writes it), "
                         f"not {len(args.reports)} files")
    releases = load_releases(args.reports[0])
    out = args.releases
    try:
        out.write_text(render_releases(releases), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--releases {out}: cannot write it ({exc.strerror or exc})") from None
    sys.stdout.write(f"wrote {out}: {len(releases.rows)} release(s), "
                     f"{len(releases.areas)} areas\n")
    return 0
