"""Resolve BullMQ-style `--- @include "x"` directives into one script text.

Each included file is emitted once, at its first point of use, depth-first. The path is relative
to the including file's directory, with `.lua` appended when it has no extension. A missing
file, a cycle, or the same file included twice by one file is an error. Already-inlined scripts
(the PyPI package ships those) pass through unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from conformance.core.errors import CandidateError

INCLUDE = re.compile(r"""^-{2,3}[ \t]*@include[ \t]+(["'])(.+?)\1[; \t]*$""")


def _target(including: Path, name: str) -> Path:
    path = including.parent / name
    if not path.suffix:
        path = path.with_suffix(".lua")
    return path.resolve()


def resolve(path: Path, read: Callable[[Path], str] | None = None) -> str:
    """The text of `path` with every include inlined (`read`: as in `resolve_with_files`)."""
    return resolve_with_files(path, read)[0]


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def resolve_with_files(path: Path, read: Callable[[Path], str] | None = None
                       ) -> tuple[str, frozenset[Path]]:
    """The text of `path` with every include inlined, and every file it was made of (`path`
    itself included), resolved. `read`: how a file's text is read, given its resolved path
    (the file itself by default; a mutant's changed files come from memory)."""
    reader = read or _read
    emitted: set[Path] = set()
    out: list[str] = []

    def visit(current: Path, stack: tuple[Path, ...]) -> None:
        try:
            text = reader(current)
        except OSError as exc:
            via = f" (included from {stack[-1].name})" if stack else ""
            raise CandidateError(f"cannot read {current}{via}: {exc.strerror}") from None
        seen_here: set[Path] = set()
        for line in text.splitlines():
            match = INCLUDE.match(line.strip())
            if not match:
                out.append(line)
                continue
            target = _target(current, match.group(2))
            if target in stack or target == current:
                chain = " -> ".join(p.name for p in (*stack, current, target))
                raise CandidateError(f"circular @include: {chain}")
            if target in seen_here:
                raise CandidateError(f"{current.name} includes {target.name} twice")
            seen_here.add(target)
            if target in emitted:
                continue
            emitted.add(target)
            visit(target, (*stack, current))

    root = path.resolve()
    emitted.add(root)
    visit(root, ())
    return "\n".join(line for line in out if line.strip()) + "\n", frozenset(emitted)
