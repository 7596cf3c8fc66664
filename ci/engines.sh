#!/usr/bin/env bash
# The full vector set on every engine CI has: Redis 7.0 from Debian, Valkey 8, a 3-master
# Redis Cluster (hash-tagged profiles; the untagged one must be refused in words). Reports go
# to reports/. (`-n auto` against a serial run is the test command's: tests/test_parallel.py.)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p reports
# shellcheck source=ci/lib.sh
source ci/lib.sh
commands="$(official_scripts)"
run() { echo "--- bullmq-conformance run $*"; bullmq-conformance run -q "$@"; }

run --redis local --report-json reports/redis-7.0.json
run --redis local:valkey-server --report-json reports/valkey.json
python - <<'PY'
import json
doc = json.load(open("reports/valkey.json"))
assert doc["redis"]["engine"] == "valkey" and doc["redis"]["version"].startswith("8."), doc
PY

run --redis cluster --profile echomq --report-json reports/cluster-echomq.json
run --redis cluster --prefix '{bull}' --report-json reports/cluster-prefix.json
run --redis cluster --profile echomq --candidate "scripts:$commands" --protocol "$(pinned_protocol)"
run --redis cluster:valkey-server --profile echomq
echo "--- the untagged bullmq profile on a cluster: refused in words, exit 2"
set +e
message="$(bullmq-conformance run -q --redis cluster 2>&1)"
code=$?
set -e
echo "$message"
[ "$code" -eq 2 ] && grep -q "not cluster-safe" <<<"$message" && grep -q "CROSSSLOT" <<<"$message"
