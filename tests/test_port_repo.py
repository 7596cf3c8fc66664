"""The pytest plugin inside a port's own repository (tests/port_repo/, copied per test).

The port has its own pyproject with testpaths, a conftest with `pytest_plugins`, unit tests, a
`docker-compose.yaml` and an expectations file. Each test runs pytest there in a subprocess,
with the interpreter whose installed suite is under test: `$BMQC_SUITE_PYTHON` (ci/installed.sh
sets it to a wheel venv) or this one. No checkout is on that process's path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.core.resources import lua_dir, vectors_dir
from conformance.vectors import iter_vectors, load_dir

TEMPLATE = Path(__file__).parent / "port_repo"
SUITE_PYTHON = os.environ.get("BMQC_SUITE_PYTHON", sys.executable)
PORT_TESTS = {"tests/test_queue.py::test_add_returns_an_id",
              "tests/test_queue.py::test_known_regression"}


@pytest.fixture
def port(tmp_path: Path) -> Path:
    repo = tmp_path / "port"
    shutil.copytree(TEMPLATE, repo)
    return repo


@pytest.fixture(scope="module")
def bundled_ids() -> set[str]:
    """Node ids of the bundled vectors, as the plugin names them in a port's repository."""
    return {f"vectors/{v.path.name}::{v.id}" for v in iter_vectors(load_dir(vectors_dir()))}


@pytest.fixture(scope="module")
def broken_scripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Our Lua with the band bump broken: every job of a millisecond shares one score."""
    scripts = tmp_path_factory.mktemp("lua") / "lua"
    shutil.copytree(lua_dir(), scripts)
    include = scripts / "includes" / "getDelayedScore.lua"
    text = include.read_text(encoding="utf-8")
    assert "return topScore + 1, fireAt" in text
    include.write_text(text.replace("return topScore + 1, fireAt", "return topScore, fireAt"),
                       encoding="utf-8")
    return scripts


def pytest_in(repo: Path, *args: str, env: dict[str, str] | None = None,
              ) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run pytest in `repo`; return the process and {node id: outcome} from its JUnit XML."""
    junit = repo.parent / "junit.xml"
    junit.unlink(missing_ok=True)
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("PYTEST_", "BMQC_")) and k != "PYTHONPATH"}
    proc = subprocess.run([SUITE_PYTHON, "-m", "pytest", "-q", f"--junitxml={junit}", *args],
                          cwd=repo, env={**clean, **(env or {})}, capture_output=True,
                          text=True, timeout=300, check=False)
    outcomes: dict[str, str] = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            node = _node_id(case.get("classname", ""), case.get("name", ""))
            kinds = {child.tag for child in case}
            outcomes[node] = ("failed" if kinds & {"failure", "error"} else
                              "skipped" if "skipped" in kinds else "passed")
    return proc, outcomes


def _node_id(classname: str, name: str) -> str:
    # JUnit writes `vectors.band-bump.yaml` / `tests.test_queue`: the file path with dots.
    for suffix in (".yaml", ".yml"):
        if classname.endswith(suffix):
            return f"{classname.removesuffix(suffix).replace('.', '/')}{suffix}::{name}"
    return f"{classname.replace('.', '/')}.py::{name}"


def candidate(redis_url: str, spec: str = "reference", examples: int = 0) -> list[str]:
    return ["--bmq-candidate", spec, "--bmq-redis", redis_url, "--bmq-examples", str(examples)]


def test_inactive_the_plugin_collects_nothing(port: Path) -> None:
    proc, outcomes = pytest_in(port)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert outcomes == dict.fromkeys(PORT_TESTS, "passed")


def test_no_path_runs_the_bundled_vectors_beside_the_ports_tests(
        port: Path, redis_url: str, bundled_ids: set[str]) -> None:
    proc, outcomes = pytest_in(port, *candidate(redis_url))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    # Everything ran, and nothing else: the docker-compose and expectations files were left
    # alone, silently.
    assert set(outcomes) == PORT_TESTS | bundled_ids
    assert "docker-compose" not in proc.stdout + proc.stderr
    assert "skipped" in outcomes.values()  # the other profile's key-naming vectors


@pytest.mark.slow
def test_a_path_runs_only_what_it_holds_and_vector_files_are_known_by_header(
        port: Path, redis_url: str) -> None:
    pinned = port / "tests" / "conformance"
    pinned.mkdir()
    shutil.copy(vectors_dir() / "next-wake.yaml", pinned / "next-wake.yaml")
    proc, outcomes = pytest_in(port, "tests", *candidate(redis_url))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    expected = {f"tests/conformance/next-wake.yaml::{v.id}"
                for v in iter_vectors(load_dir(pinned))}
    assert set(outcomes) == PORT_TESTS | expected
    # A vector directory inside the collected paths is collected once, and every YAML file
    # in it is a vector file, header or not.
    again, outcomes = pytest_in(port, "--bmq-vectors", "tests/conformance", *candidate(redis_url))
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr
    assert set(outcomes) == PORT_TESTS | expected
    (pinned / "notes.yaml").write_text("todo: [more vectors]\n", encoding="utf-8")
    strict, _ = pytest_in(port, "--bmq-vectors", "tests/conformance", *candidate(redis_url))
    assert strict.returncode == 2 and "notes.yaml" in strict.stdout, strict.stdout[-2000:]
    # `--bmq-vectors bundled` adds the bundled set to the given paths.
    both, outcomes = pytest_in(port, "tests/test_queue.py", "--bmq-vectors", "bundled",
                               "-k", "band-bump", *candidate(redis_url))
    assert both.returncode == 0, both.stdout[-3000:] + both.stderr
    assert outcomes and all(node.startswith("vectors/band-bump.yaml::") for node in outcomes)


@pytest.mark.slow
def test_lf_ff_and_x_rerun_exactly_the_failures(port: Path, redis_url: str,
                                                 broken_scripts: Path) -> None:
    broken = candidate(redis_url, f"scripts:{broken_scripts}")
    first, outcomes = pytest_in(port, *broken, env={"PORT_BUG": "1"})
    assert first.returncode == 1
    failed = {node for node, outcome in outcomes.items() if outcome == "failed"}
    assert "tests/test_queue.py::test_known_regression" in failed
    assert any(node.startswith("vectors/band-bump.yaml::") for node in failed)
    assert len(failed) < len(outcomes) / 4
    # Both the port's failure and the vectors' run again, and nothing else.
    again, rerun = pytest_in(port, "--lf", *broken, env={"PORT_BUG": "1"})
    assert again.returncode == 1
    assert set(rerun) == failed and set(rerun.values()) == {"failed"}
    first_failure, stopped = pytest_in(port, "--ff", "-x", *broken, env={"PORT_BUG": "1"})
    assert first_failure.returncode == 1
    assert set(stopped.values()) == {"failed"} and len(stopped) == 1
    assert set(stopped) <= failed


@pytest.mark.slow
def test_k_and_xdist_select_and_spread_vectors(port: Path, redis_url: str,
                                                bundled_ids: set[str]) -> None:
    proc, outcomes = pytest_in(port, "-k", "band-bump and 4097", *candidate(redis_url))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert outcomes and all("band-bump/4097" in node for node in outcomes)
    spread, outcomes = pytest_in(port, "-n", "2", *candidate(redis_url))
    assert spread.returncode == 0, spread.stdout[-3000:] + spread.stderr
    assert set(outcomes) == PORT_TESTS | bundled_ids


def test_the_plugin_loads_by_name_with_or_without_autoload(port: Path, redis_url: str) -> None:
    selection = ["-k", "band-bump and 4097", *candidate(redis_url)]
    # Autoloaded, and named by -p as well (and by the conftest's pytest_plugins).
    named, outcomes = pytest_in(port, "-p", "conformance.plugin", *selection)
    assert named.returncode == 0, named.stdout[-3000:] + named.stderr
    assert outcomes
    # Autoload off: the conftest's pytest_plugins alone, then -p alone.
    (port / "tests" / "conftest.py").write_text("", encoding="utf-8")
    off = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    alone, outcomes_p = pytest_in(port, "-p", "conformance.plugin", *selection, env=off)
    assert alone.returncode == 0, alone.stdout[-3000:] + alone.stderr
    assert set(outcomes_p) == set(outcomes)
    unloaded, _ = pytest_in(port, *selection, env=off)
    assert unloaded.returncode == 4 and "--bmq-candidate" in unloaded.stderr


def test_a_run_leaves_nothing_in_the_port_but_pytests_own_cache(port: Path,
                                                                redis_url: str) -> None:
    before = {p.relative_to(port) for p in port.rglob("*")}
    # pytest-benchmark, where installed, writes .benchmarks/ in any run: not ours to judge.
    proc, _ = pytest_in(port, "-p", "no:benchmark", *candidate(redis_url, examples=3))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    new = {p.relative_to(port) for p in port.rglob("*")} - before
    assert {p.parts[0] for p in new} <= {".pytest_cache", "tests"}, sorted(map(str, new))
    assert all(p.parts[0] == ".pytest_cache" or "__pycache__" in p.parts for p in new), new
