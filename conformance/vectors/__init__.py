"""Loading and validating vector files.

A vector file is JSON-compatible YAML validated by `vectors/schema.json`. YAML that JSON cannot
mirror is an error: duplicate keys, anchors and aliases, non-string keys, dates, sets, binary,
.nan and .inf (and, against the schema, a float where an integer is due). Loading keeps the line
of every test and header field so that errors point into the file: `file:line: id: message`.

Parsing and schema validation take about 2 s for the bundled 1.2 MB of vectors, in every run and
in every xdist worker. A file that passed is therefore cached, parsed, under a key that hashes
its bytes, the schema, this module, `yaml_strict` and the parser versions (see `cache_dir`); any
change to one of them misses the cache. Files that fail are never cached, and consistency checks
always run.
"""

from __future__ import annotations

import gc
import hashlib
import marshal
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from conformance.core.errors import VectorError
from conformance.core.resources import cache_dir, schema_path
from conformance.vectors.refs import refs_in
from reference_impl import keys, versions
from reference_impl.keys import QUEUE2_REF, QUEUE_REF, QUEUE_REFS
from reference_impl.ops import QUEUE_FIELD, Op, op_from_dict

#: Top-level keys that make a YAML file a vector file (block style, at the start of a line).
_HEADER_KEYS = frozenset({"schema_version", "area", "tests"})
_HEADER_KEY = re.compile(r"""^(["']?)(schema_version|area|tests)\1[ \t]*:""", re.MULTILINE)
_HEADER_WORD = re.compile(r"\b(schema_version|area|tests)\b")


def looks_like_vector_file(path: Path) -> bool:
    """True when `path` has a vector file's header (top-level `schema_version`, `area` and
    `tests`), so that other YAML files in a port's repository are left alone. A file that
    cannot be read as UTF-8 text is not a vector file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if {match.group(2) for match in _HEADER_KEY.finditer(text)} >= _HEADER_KEYS:
        return True
    if not text.lstrip().startswith("{"):
        return False
    import yaml

    from conformance.vectors.yaml_strict import too_deep

    if too_deep(text) is not None:
        # Too deep to parse safely: a vector file when it names the header keys, so that
        # loading it reports the nesting; any other file is left alone.
        return set(_HEADER_WORD.findall(text)) >= _HEADER_KEYS
    try:  # a flow-style (JSON-like) document
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and data.keys() >= _HEADER_KEYS


@dataclass(frozen=True)
class Vector:
    """One test: seeded state, ops with explicit clocks, and the expected outcome."""

    id: str
    description: str
    flags: tuple[str, ...]
    given: Mapping[str, Any]
    when: tuple[Op, ...]
    returns: tuple[Any, ...]
    keys: Mapping[str, Any]
    key_names: tuple[str, ...] | None
    profile: str | None
    path: Path
    line: int
    needs: tuple[str, ...] = ()
    one_slot: bool = False
    #: The npm bullmq versions the fact holds for.
    span: versions.Range = versions.ALWAYS
    #: Whether the vector names its queue as `<q>` (`conformance.run.binding.bound`).
    queue_refs: bool = False
    #: How many queues the vector runs in: 2 for a flow across queues, whose second queue it
    #: names `<q2>` (its keys `<q2>:<suffix>`).
    queues: int = 1
    #: The queue of each op (0: the first, 1: the second), when any runs on the second; else
    #: empty (every op on the first).
    on: tuple[int, ...] = ()

    @property
    def area(self) -> str:
        """The area this vector belongs to (the part of the id before '/')."""
        return self.id.split("/", 1)[0]

    @property
    def older(self) -> bool:
        """Whether the vector states its fact as an older range did (`<id>.until-<version>`),
        rather than as the newest range does: the current protocol, or, for an op a later
        release removed, the releases up to that one."""
        return ".until-" in self.id

    @property
    def where(self) -> str:
        """`file:line` of the vector."""
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class VectorFile:
    """A parsed vector file."""

    path: Path
    area: str
    header: Mapping[str, Any]
    vectors: tuple[Vector, ...]


@cache
def _cache_salt() -> bytes:
    # By file and by installed version, not by import: yaml and jsonschema are imported only
    # when a file is parsed (a cold cache), not on every run.
    here = Path(__file__)
    parts = [schema_path("vector-file").read_bytes(),
             (here.parent.parent / "core" / "schemas.py").read_bytes(), here.read_bytes(),
             here.with_name("yaml_strict.py").read_bytes(),
             # The refs stored with each file: what they are, and how they are found.
             here.with_name("refs.py").read_bytes(), Path(keys.__file__).read_bytes(),
             _version("PyYAML").encode(), _version("jsonschema").encode()]
    return b"\0".join(hashlib.sha256(part).digest() for part in parts)


def _version(distribution: str) -> str:
    from importlib.metadata import version

    return version(distribution)


def _parse_and_validate(path: Path
                        ) -> tuple[Any, list[int], dict[str, int], list[list[str]]]:
    """The file's data, the line of each test and of each header key, and the queue refs
    (`QUEUE_REFS`) each test's values hold: from the cache when this exact file passed
    before."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise VectorError(f"cannot read vector file: {exc.strerror}", str(path)) from None
    directory = cache_dir()
    entry = None
    if directory is not None:
        entry = directory / (hashlib.sha256(_cache_salt() + raw).hexdigest() + ".marshal")
        try:
            data, lines, header_lines, refs = marshal.loads(entry.read_bytes())
            os.utime(entry)  # recently used: kept by prune_cache
            return data, lines, header_lines, refs
        except (OSError, EOFError, ValueError, TypeError):
            pass  # not cached yet, or unreadable: parse it
    from conformance.vectors.yaml_strict import compose

    text, data, lines, header_lines = compose(path, raw)
    _check_schema(path, text, data)
    # Found once, with the parse: a walk of every value (4096-job bands) on every run cost a
    # tenth of a warm run's loading.
    refs = [sorted(refs_in([test["given"], test["when"], test["expect"]]))
            for test in data["tests"]]
    if entry is not None:
        _store(entry, (data, lines, header_lines, refs))
        prune_cache(entry.parent)
    return data, lines, header_lines, refs


#: Cache entries unused this long are deleted when a new one is written.
CACHE_MAX_AGE_S = 30 * 24 * 3600


def prune_cache(directory: Path, max_age_s: float = CACHE_MAX_AGE_S,
                now: float | None = None) -> int:
    """Delete cache entries (and stale temporary files) not used for `max_age_s`; return
    how many. Every regeneration of the vectors leaves new entries, so without this the
    cache would only grow."""
    limit = (time.time() if now is None else now) - max_age_s
    removed = 0
    for pattern in ("*.marshal", "*.tmp"):
        for old in directory.glob(pattern):
            try:
                if old.stat().st_mtime < limit:
                    old.unlink()
                    removed += 1
            except OSError:
                continue  # another process pruned or replaced it first
    return removed


def _store(entry: Path, value: Any) -> None:
    # Write-then-rename, so a concurrent reader (another xdist worker) never sees half a file;
    # a cache that cannot be written (or data marshal cannot hold) only costs speed.
    try:
        payload = marshal.dumps(value)
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, entry)
    except (OSError, ValueError):
        return


# A test's first line as the generator writes it; only used to name the vector around a syntax
# error, when there is no parsed document to ask.

def _check_schema(path: Path, text: str, data: Any) -> None:
    from conformance.core import schemas

    found = schemas.problem(schemas.vector_file(), data)
    if found is None:
        return
    loc = list(found.path)
    vector_id = None
    if len(loc) >= 2 and loc[0] == "tests" and isinstance(loc[1], int):
        test = data["tests"][loc[1]]
        if isinstance(test, dict) and isinstance(test.get("id"), str):
            vector_id = test["id"]
    line = _schema_error_line(text, loc, found.error)
    where = f"{path}:{line}" if line else str(path)
    raise VectorError(f"schema violation {found}", where, vector_id)


def _schema_error_line(text: str, loc: list[str | int], err: Any) -> int | None:
    """The line of the value a schema error is about: the key naming it in a mapping, the item
    in a list; for an unexpected or badly named key, that key. None at the top level.

    Only failing files get here, so the text is composed again rather than keeping every
    file's nodes around.
    """
    import yaml

    from conformance.vectors.yaml_strict import Loader

    loader = Loader(text)
    try:
        node = loader.get_single_node()
    finally:
        loader.dispose()
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            entry = next(((k, v) for k, v in node.value if k.value == part), None)
            if entry is None:
                return line
            line, node = entry[0].start_mark.line + 1, entry[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    if not isinstance(node, yaml.MappingNode):
        return line
    culprit = None
    if err.validator == "additionalProperties":
        known = err.schema.get("properties", {})
        culprit = next((k for k, _ in node.value if k.value not in known), None)
    elif "propertyNames" in err.schema_path:
        culprit = next((k for k, _ in node.value if k.value == err.instance), None)
    return culprit.start_mark.line + 1 if culprit is not None else line


def _check_consistency(path: Path, data: dict[str, Any], lines: list[int],
                       header_lines: dict[str, int]) -> None:
    tests = data["tests"]
    if data["number_of_tests"] != len(tests):
        raise VectorError(
            f"number_of_tests is {data['number_of_tests']} but the file has {len(tests)} tests",
            f"{path}:{header_lines['number_of_tests']}",
        )
    if path.stem != data["area"]:
        raise VectorError(f"area {data['area']!r} does not match the file name",
                          f"{path}:{header_lines['area']}")
    seen: dict[str, int] = {}
    notes = data["notes"]
    for index, test in enumerate(tests):
        where = f"{path}:{lines[index]}"
        if not test["id"].startswith(data["area"] + "/"):
            raise VectorError(f"id must start with '{data['area']}/'", where, test["id"])
        if test["id"] in seen:
            raise VectorError(
                f"duplicate id (first at line {seen[test['id']]})", where, test["id"]
            )
        seen[test["id"]] = lines[index]
        for flag in test["flags"]:
            if flag not in notes:
                raise VectorError(f"flag {flag!r} has no entry in notes", where, test["id"])
        expect = test["expect"]
        if len(expect["returns"]) != len(test["when"]):
            raise VectorError("expect.returns needs one entry per op in when", where, test["id"])
        if ("key_names" in expect) != ("profile" in test):
            raise VectorError("key_names and profile go together", where, test["id"])
        if "until" in test and versions.parse(test["since"]) >= versions.parse(test["until"]):
            raise VectorError(f"since {test['since']} is not below until {test['until']}",
                              where, test["id"])


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic GC: parsing builds many small acyclic objects, and collections
    triggered by them take a third of the load time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_file(path: Path) -> VectorFile:
    """Parse, validate and index one vector file. Raises VectorError."""
    with _no_gc():
        data, lines, header_lines, refs = _parse_and_validate(path)
    _check_consistency(path, data, lines, header_lines)
    vectors = []
    for index, test in enumerate(data["tests"]):
        expect = test["expect"]
        vectors.append(
            Vector(
                id=test["id"],
                description=test["description"],
                flags=tuple(test["flags"]),
                given=test["given"],
                when=tuple(op_from_dict(step) for step in test["when"]),
                returns=tuple(expect["returns"]),
                keys=expect["keys"],
                key_names=tuple(expect["key_names"]) if "key_names" in expect else None,
                profile=test.get("profile"),
                path=path,
                line=lines[index],
                needs=tuple(test.get("needs", ())),
                one_slot=bool(expect.get("one_slot", False)),
                span=versions.Range(versions.parse(test["since"]),
                                    versions.parse(test["until"]) if "until" in test
                                    else None),
                queue_refs=bool(refs[index]),
                queues=2 if QUEUE2_REF in refs[index] else 1,
                on=_on(test["when"]),
            )
        )
    header = {k: v for k, v in data.items() if k != "tests"}
    return VectorFile(path, data["area"], header, tuple(vectors))


def _on(steps: list[dict[str, Any]]) -> tuple[int, ...]:
    """`Vector.on` of a vector's `when` steps."""
    on = tuple(QUEUE_REFS.index(step.get(QUEUE_FIELD, QUEUE_REF)) for step in steps)
    return on if any(on) else ()


def vector_files(directory: Path) -> list[Path]:
    """The `*.yaml` vector files of a directory, sorted by name."""
    if not directory.is_dir():
        raise VectorError("vector directory does not exist", str(directory))
    files = sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml"))
    if not files:
        raise VectorError("no *.yaml vector files found", str(directory))
    return files


class IdIndex:
    """The vector ids met so far and the file of each: ids are unique across the files of a
    run, so an id met twice is a VectorError naming both places."""

    def __init__(self) -> None:
        self._files: dict[str, Path] = {}

    def add(self, vector: Vector) -> None:
        """Record `vector`'s id, or raise VectorError when another file (or test) has it."""
        if vector.id in self._files:
            raise VectorError(f"id also used in {self._files[vector.id]}", vector.where,
                              vector.id)
        self._files[vector.id] = vector.path


def load_dir(directory: Path) -> list[VectorFile]:
    """Load every vector file of a directory; ids must be unique across files."""
    loaded = [load_file(p) for p in vector_files(directory)]
    ids = IdIndex()
    for vf in loaded:
        for vector in vf.vectors:
            ids.add(vector)
    return loaded


def iter_vectors(files: list[VectorFile]) -> Iterator[Vector]:
    """All vectors of the given files, in file order."""
    for vf in files:
        yield from vf.vectors
