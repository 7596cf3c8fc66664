"""`bullmq-node`: the official npm `bullmq` client, driven through the bundled Node adapter
(`conformance/bundled/node-bullmq/`) as a `command:` candidate."""

from __future__ import annotations

import filecmp
import hashlib
import shlex
import shutil
from pathlib import Path

from conformance.candidates.adapter.command import CommandCandidate
from conformance.candidates.base import Candidate
from conformance.core.candidate_forms import BULLMQ_NODE
from conformance.core.errors import UsageError
from conformance.core.resources import NODE_ADAPTER_FILES, cache_dir, node_adapter_source

_FLAG = f"--candidate {BULLMQ_NODE.name}"
_NEEDS_NPM = (f"{_FLAG} needs its npm packages (bullmq 6.7.0 and ioredis, pinned by a "
              "lockfile)")


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
        raise UsageError(f"{_FLAG}: cannot prepare {target}: {exc.strerror}; "
                         f"or run `npm ci --prefix {source}` once") from None
    if not _installed(target):
        raise UsageError(f"{_NEEDS_NPM}: run `npm ci --prefix {target}` once")
    return target


def node_candidate(timeout: float) -> Candidate:
    """The Node client's candidate: its adapter as a `command:` candidate, each op limited to
    `timeout` seconds. A UsageError when Node.js or the npm packages are missing."""
    if shutil.which("node") is None:
        raise UsageError(f"{_FLAG} needs Node.js (node) on PATH")
    adapter = shlex.quote(str(node_adapter_dir() / "adapter.js"))
    return CommandCandidate(f"node {adapter}", label=BULLMQ_NODE.name, timeout=timeout)
