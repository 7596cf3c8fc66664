"""The shape of a catalog mutant, shared by the catalog's modules (`mutant_catalog` joins them).

A mutant is one defect class, written twice as exact textual replacements: once for our scripts
in `lua/` (`ours`: each pattern lives in exactly one include or top-level file) and once for the
official PyPI bullmq scripts (`official`: inlined, so a pattern is replaced in every file that
contains it).
"""

from __future__ import annotations

from dataclasses import dataclass

#: One replacement: (exact original text, replacement text).
Replacement = tuple[str, str]


@dataclass(frozen=True)
class Mutant:
    """A named defect class and its replacements for our `lua/` and for the official scripts."""

    name: str
    defect: str
    ours: tuple[Replacement, ...]
    official: tuple[Replacement, ...]


def mutant(name: str, defect: str, ours: list[Replacement],
           official: list[Replacement]) -> Mutant:
    """A Mutant from replacement lists (the catalog modules' shorthand)."""
    return Mutant(name, defect, tuple(ours), tuple(official))


def dropped(text: str) -> Replacement:
    """A replacement that deletes `text`."""
    return (text, "")
