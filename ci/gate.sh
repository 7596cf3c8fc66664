#!/usr/bin/env bash
# Gate a port's CI on the suite: one `bullmq-conformance run` with reports. The GitHub Action
# (ci/action.yml) runs exactly this script, and .ci/run runs it too, so the Action's commands
# are the ones our CI exercises.
#
# Inputs come from the environment, with the Action's defaults:
#   BMQC_CANDIDATE (reference)  BMQC_PROFILE (bullmq)  BMQC_REDIS (auto)
#   BMQC_EXPECT (none)          BMQC_REPORT_DIR (bullmq-conformance-reports)
# Writes report.json, junit.xml and summary.md there (and appends the summary to
# $GITHUB_STEP_SUMMARY when set). Exits with the run's code: 0 pass, 1 fail, 2 usage, 3 infra.
set -uo pipefail
dir="${BMQC_REPORT_DIR:-bullmq-conformance-reports}"
mkdir -p "$dir"
rm -f "$dir/summary.md"  # --summary-md appends; a rerun starts a fresh one
args=(run --candidate "${BMQC_CANDIDATE:-reference}" --profile "${BMQC_PROFILE:-bullmq}"
      --redis "${BMQC_REDIS:-auto}" --report-json "$dir/report.json"
      --junit-xml "$dir/junit.xml" --summary-md "$dir/summary.md")
if [ -n "${BMQC_EXPECT:-}" ]; then
  args+=(--expect "$BMQC_EXPECT")
fi
bullmq-conformance "${args[@]}"
code=$?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$dir/summary.md" ]; then
  cat "$dir/summary.md" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$code"
