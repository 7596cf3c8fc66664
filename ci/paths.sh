#!/usr/bin/env bash
# The serial and the pipelined paths give identical reports: each candidate is run twice on a
# server the suite starts, with BULLMQ_CONFORMANCE_SERIAL=1 (vectors one by one, the properties
# item in-process) and without (batches, the properties item in a child), and the two JSON
# reports are compared (ci/same_reports.py). Candidates: our Lua, the official PyPI scripts, a
# failing script set (the built-in defect every-entry-differs), and the textbook adapter, which
# fails its expectations file (adapters always take the serial path).
# Usage: ci/paths.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d -t bmqc-paths-XXXXXX)"
trap 'rm -rf "$work"' EXIT
# shellcheck source=ci/lib.sh
source ci/lib.sh
official="$(official_scripts)"
python - "$work/mutant" <<'PY'
import pathlib, sys
from conformance.core.resources import lua_dir
from conformance.checks.mutant_catalog import EVERY_ENTRY_DIFFERS
from conformance.checks.mutants import write_mutant
write_mutant(lua_dir(), pathlib.Path(sys.argv[1]), EVERY_ENTRY_DIFFERS)
PY
textbook=(--candidate "command:$(command -v python) examples/textbook/adapter.py"
          --expect examples/textbook/expectations.yaml)
run_both() {
  local label="$1"; shift
  local codes=()
  for mode in serial batched; do
    local code=0
    if [ "$mode" = serial ]; then
      BULLMQ_CONFORMANCE_SERIAL=1 bullmq-conformance run -q --redis local \
        --seed 1 --report-json "$work/$label-$mode.json" "$@" > /dev/null || code=$?
    else
      bullmq-conformance run -q --redis local --seed 1 \
        --report-json "$work/$label-$mode.json" "$@" > /dev/null || code=$?
    fi
    codes+=("$code")
  done
  echo "--- $label: exit ${codes[0]} serial, ${codes[1]} batched"
  [ "${codes[0]}" = "${codes[1]}" ] || { echo "FAIL: exit codes differ"; return 1; }
  python ci/same_reports.py "$work/$label-serial.json" "$work/$label-batched.json"
}
run_both reference --candidate reference
run_both official --candidate "scripts:$official" --protocol "$(pinned_protocol)"
run_both failing --candidate "scripts:$work/mutant"
run_both textbook "${textbook[@]}"
