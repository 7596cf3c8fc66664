"""Turn a `--candidate` spec into a Candidate."""

from __future__ import annotations

import shutil
from pathlib import Path

from conformance.candidate import Candidate
from conformance.command_candidate import DEFAULT_TIMEOUT, CommandCandidate
from conformance.errors import UsageError
from conformance.paths import LUA_DIR, ROOT
from conformance.scripts_candidate import ScriptsCandidate

SPEC_HELP = "reference | scripts:DIR | command:'CMD ARGS' | bullmq-node | bullmq-py"
NODE_ADAPTER = ROOT / "ci" / "adapters" / "node-bullmq"


def _node_candidate(timeout: float) -> Candidate:
    if shutil.which("node") is None:
        raise UsageError("--candidate bullmq-node needs Node.js (node) on PATH")
    if not (NODE_ADAPTER / "node_modules" / "bullmq").is_dir():
        raise UsageError(f"--candidate bullmq-node: run `npm ci` in {NODE_ADAPTER} first")
    return CommandCandidate(f"node {NODE_ADAPTER / 'adapter.js'}", label="bullmq-node",
                            timeout=timeout)


def from_spec(spec: str, timeout: float = DEFAULT_TIMEOUT) -> Candidate:
    """Build the candidate a `--candidate` spec names.

    `reference` is our lua/ scripts; `scripts:DIR` any directory of BullMQ-convention scripts;
    `command:CMD` an adapter process (docs/ADAPTERS.md); `bullmq-node` and `bullmq-py` the
    official Node and Python clients.
    """
    if spec == "reference":
        return ScriptsCandidate(LUA_DIR, label="reference")
    if spec.startswith("scripts:"):
        directory = Path(spec.removeprefix("scripts:")).expanduser()
        if not directory.is_dir():
            raise UsageError(f"--candidate {spec}: {directory} is not a directory")
        return ScriptsCandidate(directory.resolve())
    if spec.startswith("command:"):
        return CommandCandidate(spec.removeprefix("command:"), timeout=timeout)
    if spec == "bullmq-node":
        return _node_candidate(timeout)
    if spec == "bullmq-py":
        from conformance.bullmq_py import PythonClientCandidate

        return PythonClientCandidate()
    raise UsageError(f"unknown candidate {spec!r}; expected one of: {SPEC_HELP}")
