#!/usr/bin/env bash
# Real releases, judged under their own protocol: each release's scripts directory must pass
# `run --protocol <its npm version>` with 0 failed and 0 errored, and `identify` must name a
# range holding that version. PyPI releases are judged under the npm version whose scripts
# they ship (docs/RESEARCH.md §1.1, README "Protocol versions"). BullMQ 4.x must be older
# than supported.
# Usage: ci/protocols.sh [--redis SPEC]   (releases are fetched pinned, see fetch-releases.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
redis=(--redis "${2:-local}")
releases="$(mktemp -d -t bmqc-releases-XXXXXX)"
trap 'rm -rf "$releases"' EXIT
# release directory : npm protocol version it speaks
judged=(
  npm-5.0.0:5.0.0 npm-5.1.0:5.1.0 npm-5.1.1:5.1.1 npm-5.1.8:5.1.8 npm-5.1.9:5.1.9
  npm-5.1.10:5.1.10 npm-5.5.3:5.5.3 npm-5.5.4:5.5.4 npm-5.8.0:5.8.0 npm-5.8.1:5.8.1
  npm-5.8.2:5.8.2 npm-5.8.3:5.8.3 npm-5.8.5:5.8.5 npm-5.8.6:5.8.6 npm-5.8.7:5.8.7
  npm-5.9.0:5.9.0 npm-5.26.2:5.26.2 npm-5.28.0:5.28.0 npm-5.81.5:5.81.5 npm-6.0.0:6.0.0
  npm-6.2.1:6.2.1 npm-6.2.2:6.2.2 npm-6.3.6:6.3.6 npm-6.3.7:6.3.7 npm-6.7.0:6.7.0
  pypi-2.0.0:5.0.0 pypi-2.8.0:5.8.5 pypi-2.26.0:5.81.5 pypi-3.4.4:6.4.0
)
older=(npm-4.18.3 pypi-1.24.0)
bash ci/fetch-releases.sh "$releases" >/dev/null
failures=0
for entry in "${judged[@]}"; do
  dir="${entry%%:*}"; version="${entry#*:}"
  echo "--- $dir under --protocol $version"
  if ! bullmq-conformance run -q --examples 0 --candidate "scripts:$releases/$dir" \
      --protocol "$version" "${redis[@]}" | tail -1; then
    echo "FAIL: $dir does not pass its own protocol $version"; failures=$((failures + 1))
  fi
  found="$(bullmq-conformance identify --json --candidate "scripts:$releases/$dir" \
      "${redis[@]}" 2>/dev/null || true)"
  if ! python - "$version" "$found" <<'PY'
import json, sys
version = tuple(int(p) for p in sys.argv[1].split("."))
found = json.loads(sys.argv[2])
span = found["protocol"]
v = lambda text: tuple(int(p) for p in text.split("."))
ok = span is not None and v(span["since"]) <= version and (
    span["until"] is None or version < v(span["until"]))
print(f"identify: {span}, {len(found['evidence'])} vectors of evidence")
sys.exit(0 if ok else 1)
PY
  then
    echo "FAIL: identify does not name a range holding $version for $dir"
    failures=$((failures + 1))
  fi
done
for dir in "${older[@]}"; do
  echo "--- $dir (BullMQ 4.x scripts)"
  found="$(bullmq-conformance identify --json --candidate "scripts:$releases/$dir" \
      "${redis[@]}" 2>/dev/null || true)"
  if ! python -c 'import json,sys; d=json.loads(sys.argv[1]); print(d); sys.exit(0 if d["older_than_supported"] else 1)' "$found"; then
    echo "FAIL: $dir is not reported as older than supported"; failures=$((failures + 1))
  fi
done
echo "--- $failures failure(s)"
[ "$failures" -eq 0 ]
