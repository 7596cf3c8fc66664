"""The import graph of the suite, built from the sources with `ast`: imports run one way, from
the command line and the plugin down to the model, with no cycles and no private names taken
from another module. docs/ARCHITECTURE.md draws the same layers."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("conformance", "reference_impl")

#: Top to bottom, one folder a line, in the order a run flows: a module may import from its own
#: folder or any folder below, never above. docs/ARCHITECTURE.md's table has the same rows.
LAYERS: tuple[str, ...] = (
    "conformance.cli",
    "conformance.plugin",
    "conformance.checks",
    "conformance.properties",
    "conformance.reports",
    "conformance.run",
    "conformance.candidates",
    "conformance.state",
    "conformance.servers",
    "conformance.vectors",
    "conformance.core",
    "reference_impl.cases",
    "reference_impl",
)
#: What is neither a folder nor in one: the package (a docstring) and `python -m conformance`.
ENTRY = ("conformance.__main__", "conformance")


@dataclass(frozen=True)
class Import:
    """One import statement's target module, and the private names it takes."""

    source: str
    target: str
    line: int
    private: tuple[str, ...] = ()


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "bundled" not in path.relative_to(ROOT).parts:  # package data, not code
                found[module_name(path)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> Iterator[Import]:
    """Every import of our own modules in `path`, at any depth (lazy imports count)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    yield Import(name, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module \
                and node.module.split(".")[0] in PACKAGES:
            private = tuple(a.name for a in node.names if a.name.startswith("_"))
            submodules = [f"{node.module}.{a.name}" for a in node.names
                          if f"{node.module}.{a.name}" in known]
            for target in submodules or [node.module]:
                yield Import(name, target, node.lineno, private)


def layer_of(module: str) -> int:
    """The index of the folder `module` is in (`reference_impl.generate` renders the cases)."""
    if module in ENTRY:
        return -1 if module == "conformance.__main__" else len(LAYERS) - 3
    if module == "reference_impl.generate":
        module = "reference_impl.cases"
    for index, folder in enumerate(LAYERS):
        if module == folder or module.startswith(folder + "."):
            return index
    raise AssertionError(f"{module} is in no layer: add its folder to LAYERS and "
                         "docs/ARCHITECTURE.md")


def graph() -> list[Import]:
    found = modules()
    return [edge for name, path in found.items() for edge in imports(name, path, set(found))
            if edge.target != name]


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer_of(name)


def test_imports_run_one_way() -> None:
    upward = [f"{e.source}:{e.line} imports {e.target} (layer {layer_of(e.target)} is above "
              f"{layer_of(e.source)})" for e in graph() if layer_of(e.target) < layer_of(e.source)]
    assert upward == []


def test_no_import_cycles() -> None:
    edges: dict[str, set[str]] = {}
    for edge in graph():
        edges.setdefault(edge.source, set()).add(edge.target)
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target):], target])
            elif target not in state:
                visit(target, [*path, target])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_no_module_takes_another_modules_private_names() -> None:
    taken = [f"{e.source}:{e.line} imports {', '.join(e.private)} from {e.target}"
             for e in graph() if e.private]
    assert taken == []


def test_the_checks_see_what_they_claim() -> None:
    """The graph is not empty and knows the edges that define the shape (so the tests above
    cannot pass by reading nothing)."""
    edges = {(e.source, e.target) for e in graph()}
    assert ("conformance.run.session", "conformance.run.serial") in edges
    assert ("conformance.run.serial", "conformance.candidates.base") in edges
    assert ("conformance.run.verdict", "reference_impl.expected") in edges
    assert not any(target == "reference_impl.generate" for source, target in edges
                   if source in ("conformance.run.serial", "conformance.run.verdict"))
    # Both drivers take the verdict steps they share from one module; the batched one takes
    # nothing of the serial one but its documented fallback for a single vector.
    assert ("conformance.run.serial", "conformance.run.verdict") in edges
    assert ("conformance.run.batch", "conformance.run.verdict") in edges
    assert _names_taken("conformance.run.batch", "conformance.run.serial") == {"run_vector"}
    assert ("conformance.run.verdict", "conformance.run.serial") not in edges
    assert layer_of("conformance.cli.run") < layer_of("conformance.plugin.hooks") \
        < layer_of("conformance.run.session") < layer_of("conformance.candidates.base") \
        < layer_of("conformance.state.snapshot") < layer_of("conformance.core.queues") \
        < layer_of("reference_impl.model")
    assert len(edges) > 150


def _names_taken(source: str, target: str) -> set[str]:
    """The names module `source` imports from module `target` (`*` for the module itself)."""
    parent, _, leaf = target.rpartition(".")
    taken: set[str] = set()
    for node in ast.walk(ast.parse(modules()[source].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            taken.update("*" for alias in node.names if alias.name == target)
        elif isinstance(node, ast.ImportFrom) and node.module == target:
            taken.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == parent:
            taken.update("*" for alias in node.names if alias.name == leaf)
    return taken


def _page_rows() -> list[tuple[str, str]]:
    """The layer table of docs/ARCHITECTURE.md: (folder, the rest of the row), top to bottom."""
    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = page.split("## The floors", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    rows = []
    for line in table[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows.append((cells[0].strip("`").rstrip("/").replace("/", "."), " ".join(cells[1:])))
    return rows


def test_every_folder_is_a_layer() -> None:
    """Every folder of the packages is placed by LAYERS (package data excepted)."""
    folders = {module_name(path.parent) for path in ROOT.glob("conformance/*/__init__.py")
               if path.parent.name != "bundled"}
    top = {folder for folder in LAYERS if folder.count(".") == 1 and
           folder.startswith("conformance.")}
    assert folders == top


def test_architecture_page_has_the_layers_and_names_every_module() -> None:
    """docs/ARCHITECTURE.md's floors are LAYERS, in order, and each row names every module of
    its folder (`hooks.py`, `scripts/call.py`), so the page cannot disagree with the code."""
    rows = _page_rows()
    assert [folder for folder, _ in rows] == list(LAYERS)
    missing = []
    for folder, text in rows:
        if not folder.startswith("conformance."):
            continue
        base = ROOT.joinpath(*folder.split("."))
        for path in sorted(base.rglob("*.py")):
            name = path.relative_to(base).as_posix()
            if path.name != "__init__.py" and f"`{name}`" not in text:
                missing.append(f"{folder}: {name}")
        named = re.findall(r"`([\w/]+\.py)`", text)
        missing += [f"{folder}: {name} (on the page only)" for name in named
                    if not base.joinpath(name).is_file()]
    assert missing == []
