"""Check the 5.x repeatable job keys our client model computes against npm bullmq 5.81.5's own
client, for every addRepeatableJob and removeRepeatable op of the repeatable-jobs area.

Usage: python ci/repeat_keys.py    (after `npm ci --prefix ci/node-bullmq-5`; needs node)

The scripts are judged on the vectors; the keys the vectors pass them are the client's
(`reference_impl.repeatable_ops`: the concatenated key, its md5, the legacy iteration id
prefix, what removal sends as ARGV[2]). ci/repeat-keys.js asks the real client what it sends
for each op's inputs; this compares that with what the `scripts:` candidate sends, the fire
time and BASE aside (the client computes its own fire time). Exit 0 when all agree, 1 with
each difference otherwise, 2 when node or the package is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.candidates.scripts.repeatable_calls import CALLS  # noqa: E402
from conformance.core.queues import QueueRef  # noqa: E402
from reference_impl.cases.repeatable_jobs import AREA  # noqa: E402
from reference_impl.keys import PROFILES  # noqa: E402
from reference_impl.repeatable_ops import AddRepeatableJob, RemoveRepeatable  # noqa: E402

SCRIPT = ROOT / "ci" / "repeat-keys.js"
PACKAGE = ROOT / "ci" / "node-bullmq-5" / "node_modules" / "bullmq"


def ops() -> list[AddRepeatableJob | RemoveRepeatable]:
    """Every distinct add and removal of the area, in case order."""
    found: dict[object, AddRepeatableJob | RemoveRepeatable] = {}
    for case in AREA.cases:
        for step in case.when:
            if isinstance(step, AddRepeatableJob | RemoveRepeatable):
                found.setdefault(step, step)
    return list(found.values())


def node_input(op: AddRepeatableJob | RemoveRepeatable) -> dict[str, Any]:
    """The client call's inputs: the repeat options as a caller gives them."""
    repeat: dict[str, Any] = {}
    for name, value in (("every", op.every), ("pattern", op.pattern), ("tz", op.tz),
                        ("endDate", op.end_date), ("key", op.key)):
        if value is not None:
            repeat[name] = value
    out: dict[str, Any] = {"op": "add" if isinstance(op, AddRepeatableJob) else "remove",
                           "name": op.name, "repeat": repeat}
    if op.custom_id is not None:
        out["jobId"] = op.custom_id
    return out


def ours(op: AddRepeatableJob | RemoveRepeatable) -> list[Any]:
    """The ARGV the `scripts:` candidate sends at 5.81.5 (packed options decoded)."""
    import msgpack  # the suite's own dependency

    sent: list[Any] = []
    queue = QueueRef(PROFILES["bullmq"], "q", (5, 81, 5))
    CALLS[type(op)](lambda name, args, fill: sent.extend(args), queue, op)
    if isinstance(op, AddRepeatableJob):
        sent[1] = msgpack.unpackb(sent[1])
    return sent


def comparable(op: AddRepeatableJob | RemoveRepeatable, argv: list[Any]) -> list[Any]:
    """ARGV without the fire time (addRepeatableJob's first) and BASE (the last)."""
    return argv[1:-1] if isinstance(op, AddRepeatableJob) else argv[:-1]


def main() -> int:
    node = shutil.which("node")
    if node is None or not PACKAGE.is_dir():
        print("repeat_keys: needs node and `npm ci --prefix ci/node-bullmq-5`", file=sys.stderr)
        return 2
    found = ops()
    done = subprocess.run([node, str(SCRIPT)], input=json.dumps([node_input(o) for o in found]),
                          text=True, capture_output=True, timeout=60, check=False)
    if done.returncode != 0:
        print(f"repeat_keys: {SCRIPT.name} failed: {done.stderr.strip()}", file=sys.stderr)
        return 2
    answers = json.loads(done.stdout)
    bad = 0
    for op, answer in zip(found, answers, strict=True):
        if answer is None:
            print(f"DIFFERS {op}: the client called no script")
            bad += 1
            continue
        mine, theirs = comparable(op, ours(op)), comparable(op, answer)
        if mine != theirs:
            print(f"DIFFERS {op}:\n  ours:   {mine}\n  client: {theirs}")
            bad += 1
    print(f"repeat_keys: {len(found) - bad} of {len(found)} ops send the ARGV npm bullmq "
          "5.81.5's client sends (fire time and BASE aside)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
