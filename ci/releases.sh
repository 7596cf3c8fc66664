#!/usr/bin/env bash
# Real releases, judged and shown on one page: those of ci/releases.toml (npm bullmq 4.18.3 and
# 5.0.0 on, PyPI bullmq 1.24.0 on and the PyPI forks that ship BullMQ's scripts: their scripts
# directories, fetched pinned; the official clients with the forks, installed pinned, a venv
# each; the Rust crates: the official SDK and the community ports through their bundled
# adapters, built on first use, and the Lua the SDK and bullrs embed) and the bundled adapter's
# Node client.
# ci/releases.py runs `identify` and `run --protocol` on each, writes OUTDIR/releases.json and
# gates: a release judged at its own protocol passes it (0 failed, 0 errored) and `identify`
# names a range holding it; BullMQ 4.x is older than supported; a client, SDK or port with
# known bugs fails exactly its ci/expectations/ file. The page OUTDIR/releases.html is written either way.
# Usage: ci/releases.sh [--redis SPEC] OUTDIR      (--redis defaults to local)
set -euo pipefail
cd "$(dirname "$0")/.."
redis=local
if [ "${1:-}" = --redis ]; then redis="$2"; shift 2; fi
[ $# -eq 1 ] || { echo "usage: ci/releases.sh [--redis SPEC] OUTDIR" >&2; exit 2; }
out="$1"
status=0
python ci/releases.py --redis "$redis" "$out" || status=$?
[ -f "$out/releases.json" ] || exit "$status"
python -m conformance report --releases "$out/releases.html" "$out/releases.json"
exit "$status"
