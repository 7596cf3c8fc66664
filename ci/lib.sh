# shellcheck shell=bash
# What the CI scripts ask of the installed suite, asked in one place: source it
# (`source ci/lib.sh`), then call the functions. Each takes the Python to ask as its optional
# argument (default: `python` on PATH, the checkout's dev environment) and prints one line; on a
# failure it prints one line to stderr and returns non-zero, so use it in an assignment
# (`x="$(official_scripts)"`), which `set -e` stops on, not inside another command's argument.

# pinned_bullmq [PYTHON]: the official PyPI bullmq release the suite pins (its PINNED_VERSION).
pinned_bullmq() {
  "${1:-python}" -c 'from conformance.core.pins import PINNED_VERSION
print(PINNED_VERSION)'
}

# official_scripts [PYTHON]: the scripts folder of the bullmq that PYTHON imports (the dev
# extra's pinned release), found as `bullmq-conformance mutants --scripts official` finds it.
official_scripts() {
  "${1:-python}" -c 'import sys
from conformance.checks.mutants import resolve_scripts
from conformance.core.errors import UsageError
try:
    print(resolve_scripts("official"))
except UsageError as exc:
    sys.exit(f"official_scripts: {exc}")'
}

# pinned_protocol [PYTHON]: the npm bullmq release whose scripts the pinned PyPI release ships,
# the protocol those scripts (and the Python client) are judged at.
pinned_protocol() {
  "${1:-python}" -c 'from conformance.core.pins import PINNED_PROTOCOL
print(PINNED_PROTOCOL)'
}
