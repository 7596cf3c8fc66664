"""What the plugin collects: the vector directories (`--bmq-vectors`, else the bundled
vectors), the names their files get outside the rootdir (and the ids pytest printed for them,
pasted back), one collector per vector file, and `-k` on the `properties` items' names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.core.errors import UsageError, VectorError
from conformance.core.options import BUNDLED
from conformance.plugin.items import PLUGIN_KEY, VectorItem
from conformance.vectors import load_file
from reference_impl import versions
from reference_impl.versions import split

#: The suffixes of vector files.
YAML = (".yaml", ".yml")


def vector_dirs(config: pytest.Config) -> list[Path]:
    """The `--bmq-vectors` directories, resolved; the bundled vectors when the option is not
    given and neither is a test path (pytest then collects its testpaths or the current
    directory, and the bundled vectors besides)."""
    from conformance.core.resources import vectors_dir

    chosen = config.getoption("bmq_vectors")
    if chosen is None:
        chosen = [] if config.args_source == pytest.Config.ArgsSource.ARGS else [BUNDLED]
    dirs = []
    for entry in chosen:
        path = (vectors_dir() if entry == BUNDLED
                else config.invocation_params.dir / Path(entry).expanduser())
        if not path.is_dir():
            raise UsageError(f"--bmq-vectors {entry}: not a directory")
        dirs.append(path.resolve())
    return dirs


def naming_homes(dirs: list[Path]) -> list[Path]:
    """The directories whose vector files are named `<directory name>/<file>` when they lie
    outside the rootdir: the `--bmq-vectors` ones and the bundled vectors."""
    from conformance.core.resources import vectors_dir

    return [*dirs, vectors_dir().resolve()]


def pasted(arg: str, here: Path, root: Path, homes: list[Path]) -> str:
    """`arg`, or the real path of the vector file it names the way this plugin names one
    outside the rootdir (`vectors/band-bump.yaml::band-bump/...`, see pytest_collect_file):
    an id pytest printed, pasted back, selects that vector."""
    head, sep, rest = arg.partition("::")
    if not head or (here / head).exists():
        return arg
    # Node ids are relative to the rootdir; pytest prints them relative to the current one.
    parts = Path(os.path.relpath(here / head, root)).parts
    for home in homes:
        if parts[:1] == (home.name,) and not home.is_relative_to(root):
            real = home.joinpath(*parts[1:])
            if real.exists():
                return f"{real}{sep}{rest}"
    return arg


class NameMatcher:
    """A `-k` word matches a `properties` item when it occurs in the item's name, as for a
    test's name."""

    def __init__(self, name: str) -> None:
        self.name = name.lower()

    def __call__(self, word: str, /, **kwargs: str | int | bool | None) -> bool:
        return word.lower() in self.name


class VectorFileCollector(pytest.File):
    """One vector file."""

    def collect(self) -> list[pytest.Item]:
        """Load and validate the file; a bad file is a collection error (exit 2)."""
        loaded = load_file(self.path)
        plugin = self.config.stash[PLUGIN_KEY]
        protocol = plugin.run.protocol
        items: list[pytest.Item] = []
        for vector in loaded.vectors:
            plugin.ids.add(vector)
            if protocol is not None:
                items.append(VectorItem.from_parent(self, name=vector.id, vector=vector,
                                                    protocol=protocol))
                continue
            # identify: the vector at the start of each part of its range in which the
            # candidate's calling convention stays the same
            conventions = plugin.run.candidate.capabilities.conventions
            for span in split(vector.span, conventions):
                items.append(VectorItem.from_parent(
                    self, name=f"{vector.id}@{versions.text(span.since)}", vector=vector,
                    protocol=span.since, span=span))
        return items

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        """A one-line message for vector errors instead of a traceback."""
        if isinstance(excinfo.value, VectorError):
            return f"vector error: {excinfo.value}"
        return str(super().repr_failure(excinfo))
