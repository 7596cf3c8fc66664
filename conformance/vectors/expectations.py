"""Expectations files: the known failures and skips of one candidate, kept with the candidate.

::

    # expectations for my-port
    expectations:
      "band-bump/4097-*":
        outcome: fail
        reason: we cap the band at 4095 jobs
        link: https://example.invalid/my-port/issues/12
      "priority-order/change-*":
        outcome: skip
        reason: no changePriority yet

Keys are id globs (fnmatch), tried in file order. A listed failure is a strict expected failure:
if the vector passes, the run fails and says to remove the entry, so the list only shrinks.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from conformance.core.errors import UsageError
from conformance.core.outcomes import Outcome

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["expectations"],
    "properties": {
        "expectations": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["outcome", "reason"],
                "properties": {
                    "outcome": {"enum": ["fail", "skip"]},
                    "reason": {"type": "string", "minLength": 1},
                    "link": {"type": "string"},
                },
            },
        }
    },
}


@dataclass(frozen=True)
class Expectation:
    """What a candidate expects of the vectors matching `pattern`."""

    pattern: str
    outcome: Literal["fail", "skip"]
    reason: str
    link: str | None = None
    source: str = "the expectations file"

    def describe(self) -> str:
        """Reason and link, for messages."""
        return f"{self.reason} ({self.link})" if self.link else self.reason


@dataclass(frozen=True)
class Expectations:
    """An ordered list of expectations loaded from one file."""

    path: Path
    entries: tuple[Expectation, ...]

    def match(self, vector_id: str) -> Expectation | None:
        """The first entry whose glob matches the id."""
        for entry in self.entries:
            if fnmatch.fnmatchcase(vector_id, entry.pattern):
                return entry
        return None


def load(path: Path) -> Expectations:
    """Read and validate an expectations file. Raises UsageError with a one-line cause."""
    # yaml and jsonschema only with --expect: a run imports this module either way.
    import jsonschema
    import yaml

    from conformance.vectors.yaml_strict import nesting_message, too_deep

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--expect {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        raise UsageError(f"--expect {path}:{line}: not UTF-8 text") from None
    deep = too_deep(text, loader=yaml.SafeLoader)
    if deep is not None:  # composing it would exhaust the recursion limit
        raise UsageError(f"--expect {path}:{deep}: {nesting_message()}")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise UsageError(f"--expect {where}: invalid YAML") from None
    except ValueError:  # an integer of thousands of digits, which Python refuses to read
        raise UsageError(f"--expect {path}: invalid YAML: a number too long to read") from None
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(_SCHEMA)
                                             .iter_errors(data))
    if error is not None:
        loc = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise UsageError(f"--expect {path}: at {loc}: {error.message}")
    entries = tuple(
        Expectation(pattern, spec["outcome"], spec["reason"], spec.get("link"), str(path))
        for pattern, spec in data["expectations"].items()
    )
    return Expectations(path, entries)


def from_report(report: dict[str, Any], candidate: str | None = None) -> str:
    """An expectations file (YAML text) listing every failed or errored vector of a report."""
    lines = [f"# expectations for {candidate or report.get('candidate', 'a candidate')}",
             "# written by `bullmq-conformance expectations write`; give each entry a reason",
             "expectations:"]
    entries = {}
    for result in report.get("results", []):
        if Outcome(result["outcome"]).failing:
            first = (result.get("message") or result["outcome"]).strip().splitlines()
            reason = f"{result['outcome']}: {first[0] if first else ''}".strip()
            entries[result["id"]] = {"outcome": "fail", "reason": reason[:200]}
    if not entries:
        return "\n".join(lines[:2]) + "\nexpectations: {}\n"
    import yaml

    body = yaml.safe_dump(entries, sort_keys=False, allow_unicode=True, width=100)
    return "\n".join(lines) + "\n" + "\n".join("  " + line for line in body.splitlines()) + "\n"
