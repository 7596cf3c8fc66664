"""The malformed-vector corpus: every defect is an exit 2 with one line naming file, line and id.

Each file under `tests/malformed/` (or directory, for defects that need several files) is a
small vector file with exactly one defect. Its leading comments say what is wrong and what is
expected, written by hand from the file::

    # expect: line=21 id=area/test stage=parse contains="a tab character"
    # fix: ("\\tname: a\\n", "    name: a\\n")

`line` and `id` are `none` where the defect has no line or lies outside any vector. `stage` is
where the loader catches it: `parse` (YAML and JSON-compatibility), `schema`, or `consistency`
(after the file was cached; see below). `fix` is the replacement (or list of replacements) in
the body that repairs the defect, or `none`: the repaired file must load, which shows that the
one defect is all that was wrong.
"""

from __future__ import annotations

import ast
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.core.errors import VectorError
from conformance.core.resources import CACHE_ENV, vectors_dir
from conformance.vectors import load_dir
from tests.fault_helpers import assert_both_commands_refuse

VECTORS_DIR = vectors_dir()

CORPUS = Path(__file__).parent / "malformed"
ROOT = Path(__file__).resolve().parents[1]
# The only cases whose defect no local edit can repair.
UNFIXABLE = {"empty-file", "top-level-list"}


@dataclass(frozen=True)
class Case:
    """One malformed corpus entry and what rejecting it must print."""

    name: str
    files: tuple[Path, ...]
    reported: Path
    line: int | None
    vector_id: str | None
    stage: str
    contains: str
    fix: tuple[tuple[bytes, bytes], ...] | None


def _split_header(raw: bytes) -> tuple[bytes, bytes]:
    """The leading comment lines and the rest of a corpus file."""
    lines = raw.splitlines(keepends=True)
    count = next((i for i, row in enumerate(lines) if not row.startswith(b"#")), len(lines))
    return b"".join(lines[:count]), b"".join(lines[count:])


def _directive(header: bytes, name: str) -> str | None:
    prefix = f"# {name}: "
    rows = [row for row in header.decode("ascii").splitlines() if row.startswith(prefix)]
    assert len(rows) <= 1, f"more than one {name!r} directive"
    return rows[0].removeprefix(prefix) if rows else None


def _as_bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


def _fix(text: str) -> tuple[tuple[bytes, bytes], ...] | None:
    if text.startswith("none"):
        return None
    value = ast.literal_eval(text)
    pairs = value if isinstance(value, list) else [value]
    return tuple((_as_bytes(old), _as_bytes(new)) for old, new in pairs)


def _case(entry: Path) -> Case:
    files = tuple(sorted(p for p in entry.iterdir() if p.suffix in (".yaml", ".yml"))) \
        if entry.is_dir() else (entry,)
    described = [(p, _split_header(p.read_bytes())[0]) for p in files]
    reported = [(p, h) for p, h in described if _directive(h, "expect") is not None]
    assert len(reported) == 1, f"{entry}: exactly one file needs an expect line"
    path, header = reported[0]
    fields = dict(item.split("=", 1) for item in shlex.split(_directive(header, "expect") or ""))
    assert set(fields) == {"line", "id", "stage", "contains"}, (entry, fields)
    assert fields["stage"] in ("parse", "schema", "consistency"), entry
    fix = _directive(header, "fix")
    assert fix is not None, f"{path}: no fix directive"
    return Case(
        name=entry.stem if entry.is_file() else entry.name,
        files=files,
        reported=path,
        line=None if fields["line"] == "none" else int(fields["line"]),
        vector_id=None if fields["id"] == "none" else fields["id"],
        stage=fields["stage"],
        contains=fields["contains"],
        fix=_fix(fix),
    )


CASES = [_case(p) for p in sorted(CORPUS.iterdir()) if p.is_dir() or p.suffix == ".yaml"]
_ID_PREFIX = re.compile(r"[a-z0-9-]+/[a-z0-9][a-z0-9.-]*: ")


def test_corpus_has_at_least_30_distinct_defects() -> None:
    assert len(CASES) >= 30
    assert len({c.contains for c in CASES}) == len(CASES), "two cases expect the same message"
    assert {c.name for c in CASES if c.fix is None} == UNFIXABLE
    assert any(len(c.files) > 1 for c in CASES), "no case spans two files"


def _vectors_dir(tmp_path: Path, case: Case, fixed: bool = False) -> Path:
    directory = tmp_path.resolve() / "vectors"
    directory.mkdir()
    shutil.copy(VECTORS_DIR / "schema.json", directory / "schema.json")
    for path in case.files:
        raw = path.read_bytes()
        if fixed and path == case.reported:
            header, body = _split_header(raw)
            for old, new in case.fix or ():
                assert body.count(old) == 1, (path, old)
                body = body.replace(old, new)
            raw = header + body
        (directory / path.name).write_bytes(raw)
    return directory


def _expected_line(case: Case, directory: Path) -> tuple[str, str]:
    """What the one line must start with (file[:line]: [id: ]) and contain."""
    where = str(directory / case.reported.name)
    if case.line is not None:
        where += f":{case.line}"
    head = f"{where}: {case.vector_id}: " if case.vector_id else f"{where}: "
    return head, case.contains.replace("{dir}", str(directory))


def _rejection(directory: Path) -> str:
    with pytest.raises(VectorError) as caught:
        load_dir(directory)
    return str(caught.value)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_file_is_one_line_naming_file_line_and_id(case: Case, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           ) -> None:
    """In process: what `vectors check` and `run` both print after their prefix (the
    subprocess test below holds the two commands to that)."""
    directory = _vectors_dir(tmp_path, case)
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    head, contains = _expected_line(case, directory)
    first = _rejection(directory)
    assert "\n" not in first and first.startswith(head), (first, head)
    message = first.removeprefix(head)
    assert contains in message, first
    if case.vector_id is None:
        assert not _ID_PREFIX.match(message), first
    cached = list(cache.glob("*.marshal")) if cache.exists() else []
    # A file that fails to parse or fails the schema is never cached; consistency is checked
    # on every load, so a file that only fails it was cached, and fails again from the cache.
    assert len(cached) == (len(case.files) if case.stage == "consistency" else 0)
    assert _rejection(directory) == first


SMOKE = ("score-above-2pow53-number", "dup-id-across-files")


@pytest.mark.parametrize("case", [c for c in CASES if c.name in SMOKE], ids=SMOKE)
def test_both_commands_exit_2_with_that_line(case: Case, tmp_path: Path, redis_url: str) -> None:
    """The exit-code path, in new processes: `vectors check` and `run` print the loader's one
    line after their own prefix, and exit 2 before anything runs."""
    directory = _vectors_dir(tmp_path, case)
    head, contains = _expected_line(case, directory)
    assert_both_commands_refuse(directory, redis_url, tmp_path / "cache", head, contains)


@pytest.mark.parametrize("case", [c for c in CASES if c.fix is not None],
                         ids=[c.name for c in CASES if c.fix is not None])
def test_repairing_the_one_defect_makes_the_files_load(case: Case, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "off")
    loaded = load_dir(_vectors_dir(tmp_path, case, fixed=True))
    assert [vf.path.name for vf in loaded] == [p.name for p in case.files]
    assert all(vf.vectors for vf in loaded)
