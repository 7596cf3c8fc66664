"""The import graph of the suite, built from the sources with `ast`: imports run one way, from
the command line and the plugin down to the model, with no cycles and no private names taken
from another module. docs/ARCHITECTURE.md draws the same layers."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("conformance", "reference_impl")

#: Top to bottom: a module may import from its own layer or any layer below, never above.
#: The longest matching prefix places a module.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("conformance.cli", "conformance.__main__", "conformance.commands",
     "conformance.run_command", "conformance.plugin", "conformance.terminal",
     "conformance.identify_command"),
    ("conformance.active_run", "conformance.items"),
    ("conformance.reports", "conformance.selftest", "conformance.properties",
     "conformance.properties_worker", "conformance.properties_queue",
     "conformance.properties_ahead",
     "conformance.candidates.adapter_check", "conformance.identify"),
    ("conformance.session",),
    ("conformance.runner", "conformance.batch"),
    ("conformance.candidates", "conformance.servers", "conformance.vectors",
     "conformance.snapshot", "conformance.compare", "conformance.align",
     "conformance.keytracker"),
    ("conformance.schemas", "conformance.resources", "conformance.outcomes",
     "conformance.options", "conformance.errors", "conformance.signals", "conformance"),
    ("reference_impl.generate", "reference_impl.cases"),
    ("reference_impl",),
)


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
    best, length = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = index, len(prefix)
    assert best is not None, f"{module} is in no layer: add it to LAYERS (and ARCHITECTURE.md)"
    return best


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
    assert ("conformance.session", "conformance.runner") in edges
    assert ("conformance.runner", "conformance.candidates.base") in edges
    assert ("conformance.runner", "reference_impl.expected") in edges
    assert not any(target == "reference_impl.generate" for source, target in edges
                   if source == "conformance.runner")
    assert layer_of("conformance.cli") < layer_of("conformance.session") \
        < layer_of("conformance.runner") < layer_of("conformance.vectors") \
        < layer_of("reference_impl.model")
    assert len(edges) > 150


def test_architecture_page_names_every_folder_and_module() -> None:
    """docs/ARCHITECTURE.md matches the folders: every subpackage and top-level module of
    `conformance/` is placed on the page."""
    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    package = ROOT / "conformance"
    folders = [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
    files = [p.name for p in package.glob("*.py") if p.name != "__init__.py"]
    assert len(folders) >= 6 and len(files) >= 15
    missing = [f"{name}/" for name in folders if f"`{name}/" not in page]
    missing += [name for name in files if f"`{name}`" not in page]
    assert missing == []
