"""Ask the pinned Node client for the cron-parity answers (reference_impl/cron_answers.json).

Usage: python ci/cron_answers.py [--check]

Collects every `nextMillis` input of the cron-parity area, and the fire times the
job-schedulers area's workers compute when they pick up a pattern iteration and its callers'
clients when they upsert a pattern scheduler, runs
ci/cron-answers.js on them (the npm bullmq the Node adapter pins, from
conformance/bundled/node-bullmq/node_modules: run `npm ci --prefix
conformance/bundled/node-bullmq` first) and writes the answers. `--check`
writes nothing and exits 1 when the file differs from what the client answers now (another
pinned release, a changed case), 0 when it agrees.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reference_impl import cron_answers  # noqa: E402
from reference_impl.cases.cron_parity import AREA  # noqa: E402
from reference_impl.cases.scheduler_pickups import cron_lookups  # noqa: E402
from reference_impl.cases.scheduler_upserts import cron_lookups as upsert_lookups  # noqa: E402
from reference_impl.scheduler_ops import NextMillis  # noqa: E402

SCRIPT = ROOT / "ci" / "cron-answers.js"
ANSWERS = ROOT / "reference_impl" / cron_answers.ANSWERS_FILE


def inputs() -> list[dict[str, object]]:
    """Every distinct nextMillis input of the area, in case order, then the fire times the
    job-schedulers area's workers and callers' clients compute (its pick-up and upsert
    cases)."""
    found: dict[tuple[object, ...], dict[str, object]] = {}
    steps = [step for case in AREA.cases for step in case.when if isinstance(step, NextMillis)]
    for step in [*steps, *cron_lookups(), *upsert_lookups()]:
        found.setdefault(cron_answers.key(step), cron_answers.as_input(step))
    return list(found.values())


def ask_node() -> str:
    """The answers file's text, as the pinned client gives it now."""
    node = shutil.which("node")
    if node is None:
        raise SystemExit("cron_answers: node is not on PATH")
    done = subprocess.run([node, str(SCRIPT)], input=json.dumps(inputs()), text=True,
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"cron_answers: {SCRIPT.name} failed: {done.stderr.strip()}")
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the file instead of writing it")
    args = parser.parse_args()
    text = ask_node()
    if not args.check:
        ANSWERS.write_text(text, encoding="utf-8")
        print(f"wrote {len(json.loads(text)['answers'])} answers to {ANSWERS}")
        return 0
    stored = ANSWERS.read_text(encoding="utf-8") if ANSWERS.exists() else ""
    if stored == text:
        print(f"{ANSWERS.name}: the pinned client gives the same answers")
        return 0
    now = {json.dumps(a, sort_keys=True) for a in json.loads(text)["answers"]}
    old = {json.dumps(a, sort_keys=True) for a in json.loads(stored or '{"answers": []}')
           ["answers"]}
    for line in sorted(now - old)[:20]:
        print(f"client now: {line}")
    for line in sorted(old - now)[:20]:
        print(f"file has:   {line}")
    print(f"{ANSWERS.name} differs from the pinned client's answers: "
          f"run python ci/cron_answers.py")
    return 1


if __name__ == "__main__":
    sys.exit(main())
