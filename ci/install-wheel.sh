#!/usr/bin/env bash
# Install bullmq-conformance the way its users do: build an sdist and a wheel (from that sdist)
# of a source tree, and install the wheel into a fresh venv of its own, never editable. The
# GitHub Action (ci/action.yml) runs this script, and so does the suite's CI.
#
# Environment:
#   BMQC_HOME         where the venv and the built files go (required); both are replaced
#   BMQC_SOURCE       the source tree to build (default: this script's repository)
#   BMQC_BASE_PYTHON  the Python (3.11+) the venv is made from (default: python3)
# Prints `bin=<console script>` and `python=<venv python>`, and appends them to $GITHUB_OUTPUT
# when that is set.
set -euo pipefail
export PIP_DISABLE_PIP_VERSION_CHECK=1
home="${BMQC_HOME:?set BMQC_HOME to a directory for the venv and the wheel}"
src="${BMQC_SOURCE:-$(dirname "$0")/..}"
base="${BMQC_BASE_PYTHON:-python3}"
rm -rf "$home/venv" "$home/dist"
mkdir -p "$home"
"$base" -m venv "$home/venv"
py="$home/venv/bin/python"
"$py" -m pip install --quiet build
"$py" -m build --outdir "$home/dist" "$src" >"$home/build.log" 2>&1 \
  || { tail -20 "$home/build.log" >&2; echo "install-wheel: building $src failed" >&2; exit 1; }
wheels=("$home"/dist/*.whl)
"$py" -m pip install --quiet "${wheels[0]}"
{
  echo "bin=$home/venv/bin/bullmq-conformance"
  echo "python=$py"
} | tee -a "${GITHUB_OUTPUT:-/dev/null}"
