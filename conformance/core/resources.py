"""The suite's package data, found with importlib.resources, and where it may cache files.

Everything the command line reads at run time ships in the wheel under `conformance/bundled/`:

    vectors/        the vector files, their JSON twins in json/, and schema.json (the
                    repository's top-level vectors/)
    lua/            the reference scripts and includes/ (the repository's top-level lua/)
    schemas/        report.schema.json and adapter-protocol.schema.json
    examples/       python_adapter.py, the example adapter of docs/ADAPTERS.md
    node-bullmq/    the adapter that drives the official Node client, with its npm lockfile
    rust-bullmq/    the Rust adapter of the official Rust SDK (Cargo.toml, Cargo.lock, src/)
    rust-ports/     the Rust adapters of the community ports, one folder each, the same way

and the HTML report's `page.css` and `page.js` beside its code in `conformance/reports/`.

A wheel install lists every file with its sha256 in the distribution's RECORD. The first time a
directory is used, its files are checked against that record, so a missing or altered file is
one line that names it and says to reinstall (exit 2), not a traceback or a wrong verdict. An
editable install records no hashes for these files (they are the checkout's); there only their
presence is checked.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from conformance.core.errors import UsageError

DISTRIBUTION = "bullmq-conformance"
_BUNDLED = "conformance.bundled"
# Mapped from the repository's top level by the build, so they are packages of their own.
_SUBPACKAGES = {"vectors": f"{_BUNDLED}.vectors", "lua": f"{_BUNDLED}.lua"}
_SCHEMAS = {
    "vector-file": ("vectors", "schema.json"),
    "report": ("schemas", "report.schema.json"),
    "adapter-protocol": ("schemas", "adapter-protocol.schema.json"),
}
NODE_ADAPTER_FILES = ("adapter.js", "worker-ops.js", "cron-ops.js", "admin-ops.js",
                      "package.json", "package-lock.json")


class PackageDataError(UsageError):
    """A file of the suite's own package data is missing or altered: reinstall the suite."""

    def __init__(self, path: Path | str, problem: str, detail: str = "") -> None:
        why = f" ({detail})" if detail else ""
        super().__init__(f"package data {problem}: {path}{why}; the installation is damaged: "
                         f"reinstall it (pip install --force-reinstall {DISTRIBUTION})")


@cache
def _record() -> tuple[metadata.PackagePath, ...] | None:
    """The hashed RECORD entries of package data (everything under conformance/ but Python
    source) of the wheel install this package was loaded from, or None (an editable install,
    or not installed at all)."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    entries = tuple(entry for entry in dist.files or ()
                    if entry.hash is not None and entry.suffix != ".py"
                    and entry.as_posix().startswith("conformance/"))
    if not entries:
        return None
    import conformance

    # Another copy of the suite may be installed beside the one running (a checkout on
    # PYTHONPATH): its record says nothing about our files.
    installed = Path(str(dist.locate_file("conformance"))).resolve()
    running = [Path(p).resolve() for p in conformance.__path__]
    return entries if installed in running else None


def installed_from_wheel() -> bool:
    """True when the package data is the installed wheel's (not a checkout's)."""
    return _record() is not None


def _digest(entry: metadata.PackagePath, data: bytes) -> str:
    assert entry.hash is not None
    raw = hashlib.new(entry.hash.mode, data).digest()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


@cache
def _verify(prefix: str) -> None:
    """Check every recorded file whose path starts with `prefix` (once per process)."""
    for entry in _record() or ():
        if not entry.as_posix().startswith(prefix):
            continue
        path = Path(str(entry.locate()))
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise PackageDataError(path, "missing") from None
        except OSError as exc:
            raise PackageDataError(path, "unreadable", str(exc.strerror)) from None
        if _digest(entry, data) != entry.hash.value:  # type: ignore[union-attr]
            raise PackageDataError(path, "corrupt", "its sha256 differs from the "
                                                    "installation's RECORD")


def _directory(part: str) -> Path:
    """The bundled directory `part`, verified."""
    _verify(f"conformance/bundled/{part}/")
    expected = f"conformance/bundled/{part}"
    try:
        root = resources.files(_BUNDLED)
        expected = str(root / part)
        ref = resources.files(_SUBPACKAGES[part]) if part in _SUBPACKAGES else root / part
    except ModuleNotFoundError:
        raise PackageDataError(expected, "missing") from None
    # Scripts, adapters and the vector cache need real files (not a zip member).
    if not isinstance(ref, Path) or not ref.is_dir():
        raise PackageDataError(expected, "missing")
    return ref


def _file(part: str, name: str) -> Path:
    path = _directory(part) / name
    if not path.is_file():
        raise PackageDataError(path, "missing")
    return path


def vectors_dir() -> Path:
    """The bundled vector files (and their schema.json)."""
    _file("vectors", "schema.json")
    return _directory("vectors")


def lua_dir() -> Path:
    """The reference scripts, `<name>-<numkeys>.lua` with `includes/`."""
    return _directory("lua")


def schema_path(name: str) -> Path:
    """Path of a bundled JSON Schema: `vector-file`, `report` or `adapter-protocol`."""
    part, file = _SCHEMAS[name]
    return _file(part, file)


@cache
def schema(name: str) -> dict[str, Any]:
    """A bundled JSON Schema, parsed: `vector-file`, `report` or `adapter-protocol`."""
    path = schema_path(name)
    try:
        document = json.loads(path.read_bytes())
    except ValueError as exc:
        raise PackageDataError(path, "corrupt", f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise PackageDataError(path, "corrupt", "not a JSON Schema object")
    return document


def example_adapter() -> Path:
    """The example adapter of docs/ADAPTERS.md (`python python_adapter.py SCRIPTS_DIR`)."""
    return _file("examples", "python_adapter.py")


def node_adapter_source() -> Path:
    """The bundled Node adapter directory (adapter.js, worker-ops.js, cron-ops.js, admin-ops.js,
    and their npm manifest and lockfile)."""
    for name in NODE_ADAPTER_FILES:
        _file("node-bullmq", name)
    return _directory("node-bullmq")


def rust_crate_source(folder: str, *files: str) -> Path:
    """A bundled Rust crate: an adapter (`rust-bullmq`, `rust-ports/bullrs`, with its
    Cargo.lock, the pins, and `src/main.rs`) or a library the adapters use by path
    (`rust-adapter`); its Cargo.toml and `files` verified."""
    for name in ("Cargo.toml", *files):
        _file(folder, name)
    return _directory(folder)


def report_asset(name: str) -> str:
    """The text of one of the HTML report's assets (`page.css`, `page.js`), verified."""
    _verify(f"conformance/reports/{name}")
    ref = resources.files("conformance.reports") / name
    try:
        return ref.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PackageDataError(str(ref), "missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PackageDataError(str(ref), "unreadable", str(exc)) from None


CACHE_ENV = "BULLMQ_CONFORMANCE_CACHE_DIR"


def cache_dir() -> Path | None:
    """Where the suite may keep files between runs, or None when that is turned off.

    `$BULLMQ_CONFORMANCE_CACHE_DIR` (``off`` turns caching off), else
    `$XDG_CACHE_HOME/bullmq-conformance`, else `~/.cache/bullmq-conformance`. Never the
    current directory.
    """
    chosen = os.environ.get(CACHE_ENV)
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bullmq-conformance"
