#!/usr/bin/env bash
# Gate a port's CI on the suite: one `bullmq-conformance run` with every report. The GitHub
# Action (ci/action.yml) runs exactly this script, and the suite's CI runs it too, from a wheel
# install, so the Action's commands are the ones our CI exercises.
#
# Inputs come from the environment, with the Action's defaults:
#   BMQC_CANDIDATE (reference)   BMQC_PROFILE (bullmq)   BMQC_REDIS (auto)   BMQC_EXPECT (none)
#   BMQC_EXTRA_ARGS (none: more `run` options, shell-quoted)   BMQC_ADAPTER_TIMEOUT (10)
#   BMQC_REPORT_DIR (bullmq-conformance-reports)
#   BMQC_BIN (bullmq-conformance on PATH)   BMQC_PYTHON (python3; splits BMQC_EXTRA_ARGS)
# Writes report.json, junit.xml, summary.md and report.html there (and appends the summary to
# $GITHUB_STEP_SUMMARY when set). Exits with the run's code: 0 pass, 1 fail, 2 usage, 3 infra.
set -uo pipefail
dir="${BMQC_REPORT_DIR:-bullmq-conformance-reports}"
bin="${BMQC_BIN:-bullmq-conformance}"
mkdir -p "$dir"
rm -f "$dir/summary.md" "$dir/report.json" "$dir/report.html"  # a rerun starts afresh
args=(run --candidate "${BMQC_CANDIDATE:-reference}" --profile "${BMQC_PROFILE:-bullmq}"
      --redis "${BMQC_REDIS:-auto}" --adapter-timeout "${BMQC_ADAPTER_TIMEOUT:-10}"
      --report-json "$dir/report.json" --junit-xml "$dir/junit.xml"
      --summary-md "$dir/summary.md")
if [ -n "${BMQC_EXPECT:-}" ]; then
  args+=(--expect "$BMQC_EXPECT")
fi
if [ -n "${BMQC_EXTRA_ARGS:-}" ]; then
  words="$(mktemp)"
  "${BMQC_PYTHON:-python3}" - "$BMQC_EXTRA_ARGS" >"$words" <<'PY' || exit 2
import shlex
import sys

try:
    words = shlex.split(sys.argv[1])
except ValueError as exc:
    sys.stderr.write(f"bullmq-conformance gate: extra-args: {exc}\n")
    sys.exit(2)
sys.stdout.write("".join(word + "\0" for word in words))
PY
  mapfile -d '' -t extra <"$words"
  rm -f "$words"
  args+=("${extra[@]}")
fi
"$bin" "${args[@]}"
code=$?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$dir/summary.md" ]; then
  cat "$dir/summary.md" >> "$GITHUB_STEP_SUMMARY"
fi
if [ -f "$dir/report.json" ]; then
  "$bin" report --html "$dir/report.html" "$dir/report.json"
  page=$?
  # The verdict wins; a page that could not be written fails an otherwise green gate.
  if [ "$code" -eq 0 ]; then
    code=$page
  fi
fi
exit "$code"
