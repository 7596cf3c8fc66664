"""Compare two `--report-json` files of the same run taken by the serial and the pipelined
paths: the same vectors with the same outcome, message and diff, and the same tallies.

    python ci/same_reports.py SERIAL.json BATCHED.json

A remaining-milliseconds reading (`pttl 29999`, `actual 29998`) and the properties items'
rate (`25 examples, seed 1, 38.1/s`) are clock readings, and the run id in a queue name differs
per run: all are masked; nothing else may differ. Exits 1
naming the first differences.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from conformance.core.queues import RUN_PREFIX_MASK, RUN_PREFIX_RE

_CLOCK = re.compile(r'(pttl"?:? |actual )[0-9]+')
_RATE = re.compile(r"(examples, seed [0-9]+, )[0-9.]+/s")


def _results(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    rows = {}
    for result in document["results"]:
        message = RUN_PREFIX_RE.sub(RUN_PREFIX_MASK, _CLOCK.sub(r"\1<ms>", result["message"]))
        message = _RATE.sub(r"\1<rate>/s", message)
        rows[result["id"]] = {**result, "message": message}
    return rows, document["totals"]


def main(serial_path: str, batched_path: str) -> int:
    serial, serial_summary = _results(serial_path)
    batched, batched_summary = _results(batched_path)
    problems = [f"{key}: only in one report" for key in sorted(set(serial) ^ set(batched))]
    problems += [f"{key}: serial {serial[key]} / batched {batched[key]}"
                 for key in sorted(set(serial) & set(batched)) if serial[key] != batched[key]]
    if serial_summary != batched_summary:
        problems.append(f"summary: serial {serial_summary} / batched {batched_summary}")
    for line in problems[:10]:
        print(line, file=sys.stderr)
    outcomes = sorted({row["outcome"] for row in serial.values()})
    print(f"same reports: {len(serial)} vectors ({', '.join(outcomes)})" if not problems
          else f"{len(problems)} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
