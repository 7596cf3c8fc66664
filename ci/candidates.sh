#!/usr/bin/env bash
# Every candidate the suite ships or proves itself on, under both key profiles:
#   reference (our Lua), the official PyPI bullmq scripts, the official Python client,
#   the official Node client (npm bullmq, through its adapter), and the example adapter
#   from docs/; then the textbook pattern, which must fail exactly its expectations file. The
#   Python client's job scheduler differences (README, "Bugs found in real releases") are
#   listed in ci/expectations/bullmq-py-schedulers.yaml: they must keep failing, nothing else.
# Usage: ci/candidates.sh [extra `bullmq-conformance run` options, e.g. --redis SPEC]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ci/lib.sh
source ci/lib.sh
commands="$(official_scripts)"
pinned="$(pinned_protocol)"
python="$(command -v python)"
for profile in bullmq echomq; do
  for candidate in reference "scripts:$commands" bullmq-py bullmq-node \
      "command:$python conformance/bundled/examples/python_adapter.py $commands"; do
    # The PyPI release's scripts and its client are judged at the protocol they ship.
    protocol=()
    case "$candidate" in "scripts:$commands"|bullmq-py) protocol=(--protocol "$pinned") ;; esac
    expect=()
    [ "$candidate" = bullmq-py ] && expect=(--expect ci/expectations/bullmq-py-schedulers.yaml)
    echo "--- $candidate, profile $profile ${protocol[*]} ${expect[*]}"
    bullmq-conformance run -q --candidate "$candidate" --profile "$profile" "${protocol[@]}" \
      "${expect[@]}" "$@"
  done
done
echo "--- textbook example (must fail exactly examples/textbook/expectations.yaml)"
bullmq-conformance run -q --candidate "command:$python examples/textbook/adapter.py" \
  --expect examples/textbook/expectations.yaml "$@"
