"""`bullmq-conformance`: parse the command line, run the subcommand's handler, and turn the
suite's exceptions into one-line messages and exit codes (`conformance.core.errors.Exit`).

The subcommands, their options and handlers are declared in `conformance.cli.commands`.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from conformance.cli.commands import build_parser
from conformance.core import signals
from conformance.core.errors import (
    CandidateUnusable,
    Exit,
    HarnessError,
    InfrastructureError,
    UsageError,
    VectorError,
)

__all__ = ["build_parser", "main"]


def _handler(spec: str) -> Callable[[Any], int]:
    module, _, function = spec.partition(":")
    return getattr(importlib.import_module(module), function)  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    with signals.SignalGuard().installed() as guard:
        try:
            code = _main(argv)
            if guard.received is None:
                return code
        except KeyboardInterrupt:
            # Raised by the guard for SIGTERM and SIGHUP too, outside any handler's own care.
            guard.acknowledge()
            if guard.received is None:
                print("bullmq-conformance: interrupted", file=sys.stderr)
                return Exit.INTERRUPTED
            code = guard.report()
    signals.exit_now(code)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command != "run" and str(getattr(args, "redis", "")).startswith("cluster"):
            raise UsageError(f"--redis cluster is supported by `run` only, not by "
                             f"`{args.command}`")
        if getattr(args, "vectors", False) is None:
            from conformance.core.resources import vectors_dir

            args.vectors = vectors_dir()
        return int(_handler(args.handler)(args))
    except (UsageError, VectorError) as exc:
        print(f"bullmq-conformance: {exc}", file=sys.stderr)
        return Exit.USAGE
    except HarnessError as exc:
        print(f"bullmq-conformance: {exc}", file=sys.stderr)
        if isinstance(exc, InfrastructureError):
            return Exit.INFRA
        return Exit.CANDIDATE if isinstance(exc, CandidateUnusable) else Exit.FAILED
    except BrokenPipeError:
        # The reader went away (`| head`); stop quietly, as other command-line tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return Exit.FAILED


if __name__ == "__main__":
    sys.exit(main())
