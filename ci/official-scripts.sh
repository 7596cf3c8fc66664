#!/usr/bin/env bash
# Run every vector against the scripts shipped in the installed PyPI `bullmq` package, under
# both key profiles. This is the check that our model agrees with real BullMQ.
# Usage: ci/official-scripts.sh [extra `bullmq-conformance run` options]
set -euo pipefail
commands="$(python -c 'import bullmq, pathlib; print(pathlib.Path(bullmq.__file__).parent / "commands")')"
for profile in bullmq echomq; do
  echo "--- official scripts ($commands), profile $profile"
  bullmq-conformance run -q --candidate "scripts:$commands" --profile "$profile" "$@"
done
