"""The real releases CI judges, read from ci/releases.toml (their one list) into `Pin` rows.

    python ci/release_list.py    the default of ci/fetch-releases.sh: the fetch spec of every
                                 scripts row of the bullmq package, one a line

Only the standard library, so that ci/fetch-releases.sh can run it without the suite installed.
ci/releases.py imports it (`PINS`) to judge the rows.
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

RELEASES = Path(__file__).resolve().with_name("releases.toml")

OLDER = "older"  # `Pin.judge`: must be identified as older than supported, not run
IDENTIFIED = "identified"  # `Pin.judge`: judged at the start of the range identify names


@dataclass(frozen=True)
class Pin:
    """One pinned release to judge: `judge` is an npm bullmq version, OLDER or IDENTIFIED;
    `expect` the expectations file (under ci/expectations/) of a client's known bugs, or
    several joined by " + ";
    `candidate` the `--candidate` of a crate's SDK or port row (its bundled adapter)."""

    kind: Literal["scripts", "client", "sdk", "port"]
    registry: Literal["npm", "pypi", "crates"]
    package: str
    version: str
    judge: str
    expect: str | None = None
    candidate: str | None = None

    @property
    def expect_files(self) -> tuple[str, ...]:
        """The expectations files `expect` names (none without it)."""
        return tuple(part.strip() for part in (self.expect or "").split("+") if part.strip())

    @property
    def fetch(self) -> str:
        """The ci/fetch-releases.sh spec of a scripts row (or pip requirement of a client)."""
        if self.registry == "npm":
            return f"npm:{self.version}"
        if self.registry == "crates":
            return f"crates:{self.package}=={self.version}"
        return f"pypi:{self.version}" if self.package == "bullmq" else \
            f"pypi:{self.package}=={self.version}"

    @property
    def slug(self) -> str:
        """Directory and row id: `npm-5.0.0`, `pypi-lithaxor-bullmq-python-2.27.0`, with the
        kind in front for a client, an SDK or a port (`client-pypi-3.4.3`,
        `sdk-crates-bullmq-official-1.4.4`)."""
        name = self.fetch.replace(":", "-").replace("==", "-")
        return name if self.kind == "scripts" else f"{self.kind}-{name}"

    @property
    def name(self) -> str:
        """The row's label on the page."""
        return f"{self.registry} {self.package} {self.version}"


class ReleaseListError(ValueError):
    """ci/releases.toml does not hold the list this module reads (one line says where)."""


_FIELDS = {"kind", "package", "version", "judge", "expect", "candidate"}
_KINDS = {"pypi": ("scripts", "client"), "crates": ("scripts", "sdk", "port")}


def _row(registry: str, number: int, entry: Any) -> Pin:
    where = f"{registry} row {number}"
    if not isinstance(entry, dict):
        raise ReleaseListError(f"{where}: not a table")
    unknown = set(entry) - _FIELDS
    missing = {"kind", "package", "version", "judge"} - set(entry)
    if unknown or missing:
        raise ReleaseListError(f"{where}: unknown {sorted(unknown)}, missing {sorted(missing)}")
    if not all(isinstance(value, str) for value in entry.values()):
        raise ReleaseListError(f"{where}: every value must be a string")
    if entry["kind"] not in _KINDS[registry]:
        raise ReleaseListError(f"{where}: kind {entry['kind']!r} is not one of "
                               f"{', '.join(_KINDS[registry])}")
    adapted = entry["kind"] in ("sdk", "port")
    if adapted != ("candidate" in entry):
        raise ReleaseListError(f"{where}: an sdk or port row names its candidate, and only "
                               "those do")
    return Pin(entry["kind"], cast(Literal["pypi", "crates"], registry), entry["package"],
               entry["version"], entry["judge"], entry.get("expect"), entry.get("candidate"))


def load(path: Path = RELEASES) -> tuple[Pin, ...]:
    """Every row of the list: the npm scripts rows (4.x ones OLDER, the others judged at their
    own version), then the PyPI rows and the crates rows in file order. ReleaseListError when
    it is malformed."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ReleaseListError(f"{path}: {exc}") from None
    if set(data) != {"npm", *_KINDS}:
        raise ReleaseListError(f"{path}: holds {sorted(data)}, not exactly npm, "
                               f"{' and '.join(_KINDS)}")
    npm = data["npm"]
    if not isinstance(npm, list) or not all(isinstance(v, str) for v in npm):
        raise ReleaseListError(f"{path}: npm must be a list of version strings")
    for registry in _KINDS:
        if not isinstance(data[registry], list):
            raise ReleaseListError(f"{path}: {registry} must be a list of tables")
    try:
        rows = (*(Pin("scripts", "npm", "bullmq", v, OLDER if v.startswith("4.") else v)
                  for v in npm),
                *(_row(registry, number, entry)
                  for registry in _KINDS for number, entry in enumerate(data[registry], 1)))
    except ReleaseListError as exc:
        raise ReleaseListError(f"{path}: {exc}") from None
    return rows


def main() -> int:
    """Print the default fetch specs of ci/fetch-releases.sh; 2 with one line when the list is
    malformed."""
    try:
        pins = load()
    except ReleaseListError as exc:
        print(f"ci/release_list.py: {exc}", file=sys.stderr)
        return 2
    for pin in pins:
        if pin.kind == "scripts" and pin.package == "bullmq":
            print(pin.fetch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
