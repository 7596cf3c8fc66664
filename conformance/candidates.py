"""Turn a `--candidate` spec into a Candidate."""

from __future__ import annotations

from pathlib import Path

from conformance.candidate import Candidate
from conformance.errors import UsageError
from conformance.paths import LUA_DIR
from conformance.scripts_candidate import ScriptsCandidate

SPEC_HELP = "reference | scripts:DIR"


def from_spec(spec: str) -> Candidate:
    """`reference` (our lua/ scripts) or `scripts:DIR` (any BullMQ-convention directory)."""
    if spec == "reference":
        return ScriptsCandidate(LUA_DIR, label="reference")
    if spec.startswith("scripts:"):
        directory = Path(spec.removeprefix("scripts:")).expanduser()
        if not directory.is_dir():
            raise UsageError(f"--candidate {spec}: {directory} is not a directory")
        return ScriptsCandidate(directory.resolve())
    raise UsageError(f"unknown candidate {spec!r}; expected one of: {SPEC_HELP}")
