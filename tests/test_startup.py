"""Start-up stays off a run's critical path: what a run does not use, it does not import.

Each case runs `bullmq-conformance` in a new process and lists the heavy modules it imported.
hypothesis is for the `properties` area only; jsonschema and yaml parse and validate vector
files, which a warm vector cache skips (and jsonschema checks command adapters' replies and
report files); `--version` and `--help` need neither pytest nor Redis nor the model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.core.resources import CACHE_ENV

HEAVY = ("hypothesis", "jsonschema", "yaml", "pytest", "redis", "reference_impl.model",
         "testcontainers", "docker")

# Runs the command line in this process, then prints which of HEAVY it imported.
PROBE = f"""
import json, sys
from conformance.cli import main
code = main(sys.argv[1:])
print("MODULES", json.dumps([m for m in {HEAVY!r} if m in sys.modules]))
sys.exit(code)
"""


def imported(*argv: str, cache: Path) -> set[str]:
    """The HEAVY modules a `bullmq-conformance ARGV` process imported (it must exit 0)."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                          env={**os.environ, CACHE_ENV: str(cache)}, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("MODULES "))
    return set(json.loads(line.removeprefix("MODULES ")))


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Path:
    """A vector cache filled by one run (which parsed and validated every file)."""
    cache = tmp_path_factory.mktemp("cache")
    cold = imported("run", "-q", "--redis", redis_url, "--examples", "0", "-k", "key-naming",
                    cache=cache)
    assert {"yaml", "jsonschema"} <= cold  # the first run parses: the probe sees imports
    return cache


def test_a_run_without_properties_imports_no_hypothesis_nor_parsers(
        warm_cache: Path, redis_url: str) -> None:
    found = imported("run", "-q", "--redis", redis_url, "-k", "not properties", cache=warm_cache)
    assert {"pytest", "redis", "reference_impl.model"} <= found  # what a run does use
    assert not found & {"hypothesis", "jsonschema", "yaml", "testcontainers", "docker"}, found


def test_examples_0_imports_no_hypothesis(warm_cache: Path, redis_url: str) -> None:
    found = imported("run", "-q", "--redis", redis_url, "--examples", "0", cache=warm_cache)
    assert "hypothesis" not in found


def test_the_properties_area_imports_hypothesis(warm_cache: Path, redis_url: str) -> None:
    found = imported("run", "-q", "--redis", redis_url, "--examples", "2", "-k", "properties",
                     cache=warm_cache)
    assert "hypothesis" in found


@pytest.mark.parametrize("argv", [["--version"], ["run", "--help"], ["--help"]])
def test_version_and_help_import_only_the_command_table(argv: list[str], tmp_path: Path) -> None:
    # argparse exits through SystemExit(0) before `main` returns: catch it to print.
    probe = PROBE.replace("code = main(sys.argv[1:])",
                          "try:\n    code = main(sys.argv[1:])\nexcept SystemExit as e:\n"
                          "    code = e.code")
    proc = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True,
                          env={**os.environ, CACHE_ENV: str(tmp_path)}, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("MODULES "))
    assert json.loads(line.removeprefix("MODULES ")) == []
