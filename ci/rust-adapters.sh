#!/usr/bin/env bash
# Build every bundled Rust adapter (the official SDK's, the ports') into the user cache, as the
# first run of each candidate would: .ci/run starts it in the background while the steps before
# the releases run, which then find the programs built (cargo waits on a build in progress).
# Usage: ci/rust-adapters.sh
set -euo pipefail
cd "$(dirname "$0")/.."
python - <<'PY'
from conformance.candidates.clients import rust

for adapter in (rust.BULLMQ_RUST, *rust.RUST_PORTS.values()):
    print(f"{adapter.spec}: {rust.built_adapter(adapter)}", flush=True)
PY
# The shared crate's own tests (the protocol loop, the clock pin) (its lockfile serves only this: a crate used by path builds with the
# adapter's).
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cargo test -q --release --locked --manifest-path conformance/bundled/rust-adapter/Cargo.toml \
  --target-dir "$scratch"
