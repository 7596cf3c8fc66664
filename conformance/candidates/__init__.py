"""Turn a `--candidate` spec into a Candidate."""

from __future__ import annotations

import filecmp
import hashlib
import shlex
import shutil
from pathlib import Path

from conformance.candidates.adapter.command import CommandCandidate
from conformance.candidates.base import Candidate
from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.core.errors import UsageError
from conformance.core.options import ADAPTER_TIMEOUT_S, CANDIDATE_SPECS
from conformance.core.resources import NODE_ADAPTER_FILES, cache_dir, lua_dir, node_adapter_source

_NEEDS_NPM = ("--candidate bullmq-node needs its npm packages (bullmq 6.7.0 and ioredis, pinned "
              "by a lockfile)")


def _installed(directory: Path) -> bool:
    return (directory / "node_modules" / "bullmq").is_dir()


def node_adapter_dir() -> Path:
    """Where the Node adapter runs: the bundled directory when its npm packages are installed
    there (a checkout), else a copy in the user cache (the installed package's directory may
    not be writable, and is replaced on upgrade).

    Raises UsageError, naming the one `npm ci` command to run, while the packages are missing.
    """
    source = node_adapter_source()
    if _installed(source):
        return source
    base = cache_dir()
    if base is None:
        raise UsageError(f"{_NEEDS_NPM}, and the cache is off: run `npm ci --prefix {source}` "
                         "once")
    # One directory per lockfile: an upgrade of the suite that pins another bullmq gets its own.
    lock = hashlib.sha256((source / "package-lock.json").read_bytes()).hexdigest()[:12]
    target = base / f"node-bullmq-{lock}"
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name in NODE_ADAPTER_FILES:
            if not (target / name).is_file() or not filecmp.cmp(source / name, target / name,
                                                                 shallow=False):
                shutil.copyfile(source / name, target / name)
    except OSError as exc:
        raise UsageError(f"--candidate bullmq-node: cannot prepare {target}: {exc.strerror}; "
                         f"or run `npm ci --prefix {source}` once") from None
    if not _installed(target):
        raise UsageError(f"{_NEEDS_NPM}: run `npm ci --prefix {target}` once")
    return target


def _node_candidate(timeout: float) -> Candidate:
    if shutil.which("node") is None:
        raise UsageError("--candidate bullmq-node needs Node.js (node) on PATH")
    directory = node_adapter_dir()
    adapter = shlex.quote(str(directory / "adapter.js"))
    return CommandCandidate(f"node {adapter}", label="bullmq-node", timeout=timeout)


def from_spec(spec: str, timeout: float = ADAPTER_TIMEOUT_S) -> Candidate:
    """Build the candidate a `--candidate` spec names.

    `reference` is our lua/ scripts; `scripts:DIR` any directory of BullMQ-convention scripts;
    `command:CMD` an adapter process (docs/ADAPTERS.md); `bullmq-node` and `bullmq-py` the
    official Node and Python clients.
    """
    if spec == "reference":
        return ScriptsCandidate(lua_dir(), label="reference", limit=timeout)
    if spec.startswith("scripts:"):
        directory = Path(spec.removeprefix("scripts:")).expanduser()
        if not directory.is_dir():
            raise UsageError(f"--candidate {spec}: {directory} is not a directory")
        try:
            return ScriptsCandidate(directory.resolve(), limit=timeout)
        except UsageError as exc:  # it holds none of the scripts
            raise UsageError(f"--candidate {spec}: {exc}") from None
    if spec.startswith("command:"):
        return CommandCandidate(spec.removeprefix("command:"), timeout=timeout)
    if spec == "bullmq-node":
        return _node_candidate(timeout)
    if spec == "bullmq-py":
        from conformance.candidates.clients.bullmq_py import PythonClientCandidate

        return PythonClientCandidate()
    raise UsageError(f"unknown candidate {spec!r}; expected one of: {CANDIDATE_SPECS}")
