"""Exceptions, split by who is at fault.

::

    SuiteError                      base of everything this package raises on purpose
    ├── HarnessError                the suite could not produce a verdict ("errored")
    │   ├── UsageError              bad command-line input                     exit 2
    │   ├── VectorError             a vector file is unreadable or invalid     exit 2
    │   ├── InfrastructureError     Redis could not be started or reached      exit 3
    │   │   └── RedisNotStarted     a run used before its Redis was started    exit 3
    │   ├── CandidateError          the candidate crashed or broke protocol    errored
    │   └── CandidateUnusable       the candidate cannot be started at all     exit 4
    ├── CandidateSkipped            the candidate does not support an op        skipped
    └── NonConformance              the candidate ran, and its state is wrong  failed

Only `NonConformance` ever turns into a "failed" outcome. Everything else is the harness or the
candidate breaking, which is reported as errored (or aborts the run with its own exit code).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class SuiteError(Exception):
    """Base class for errors raised by the conformance suite."""


class HarnessError(SuiteError):
    """The suite could not produce a verdict."""


class UsageError(HarnessError):
    """Bad command-line input."""


class VectorError(HarnessError):
    """A vector file is unreadable, fails the schema, or is inconsistent.

    `where` is `file[:line]` and `vector_id` the id of the offending vector, when known.
    """

    def __init__(self, message: str, where: str | None = None, vector_id: str | None = None):
        self.where = where
        self.vector_id = vector_id
        parts = [p for p in (where, vector_id) if p]
        text = f"{': '.join(parts)}: {message}" if parts else message
        # Printed as one line: an id or a value quoted from the file may hold a line break.
        super().__init__(text.replace("\r", "\\r").replace("\n", "\\n"))


class InfrastructureError(HarnessError):
    """Redis could not be started, reached, or died during the run."""


class RedisNotStarted(InfrastructureError):
    """A run was asked for its Redis before one was started or attached: it stops (exit 3),
    whichever item asked."""

    def __init__(self) -> None:
        super().__init__("Redis was not started")


class CandidateError(HarnessError):
    """The candidate crashed, is missing a script, or broke the adapter protocol."""


class CandidateUnusable(HarnessError):
    """The candidate cannot run at all (its adapter failed to start twice in a row): the run
    stops, since every further vector would only repeat the same error."""


class CandidateSkipped(SuiteError):
    """The candidate does not support this op (or these arguments); the vector is skipped."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class NonConformance(SuiteError):
    """The candidate's Redis state or return values differ from the vector."""

    def __init__(self, message: str, diff: list[str]):
        self.diff = diff
        super().__init__(message)


class Exit(IntEnum):
    """The command line's exit codes."""

    OK = 0            # every selected vector passed (skips allowed)
    FAILED = 1        # a vector failed or errored, an expected failure passed, nothing was
    #                   judged, or an op of --require-ops was skipped
    USAGE = 2         # bad input: options, vector files, reports, package data
    INFRA = 3         # Redis could not be started or reached, or went away
    CANDIDATE = 4     # the candidate could not be started (twice in a row)
    HANGUP = 129      # SIGHUP (128 + 1)
    INTERRUPTED = 130  # SIGINT (128 + 2)
    TERMINATED = 143   # SIGTERM (128 + 15)


@dataclass(frozen=True)
class Stopped:
    """Why a run stopped before its end, and the exit code that says so."""

    code: Exit
    message: str

    @classmethod
    def of(cls, exc: InfrastructureError | CandidateUnusable) -> Stopped:
        """The stop an exception calls for: exit 3 for Redis, 4 for the candidate."""
        if isinstance(exc, CandidateUnusable):
            return cls(Exit.CANDIDATE, f"candidate unusable: {exc}")
        return cls(Exit.INFRA, f"infrastructure error: {exc}")

    @classmethod
    def unwritten(cls, what: str, path: object, exc: OSError) -> Stopped:
        """The stop for a file a run could not write at its end, though it looked writable
        when the run started (a folder removed meanwhile, a full disk): exit 2, bad output."""
        return cls(Exit.USAGE, f"cannot write {what} to {path}: {exc.strerror or exc}")
