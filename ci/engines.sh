#!/usr/bin/env bash
# The full vector set on every engine CI has: Redis 7.0 from Debian, Valkey 8, a 3-master
# Redis Cluster (hash-tagged profiles; the untagged one must be refused in words), and
# parallel workers. Reports go to reports/.
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

run -n auto --redis local --seed 1 --examples 50 --report-json reports/parallel.json
run --redis local --seed 1 --examples 50 --report-json reports/serial.json
python - <<'PY'
import json
def verdicts(path):
    return sorted((r["id"], r["outcome"]) for r in json.load(open(path))["results"])
assert verdicts("reports/parallel.json") == verdicts("reports/serial.json")
print("-n auto and serial: identical verdicts")
PY
