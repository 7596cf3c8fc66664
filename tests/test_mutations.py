"""Deliberately broken copies of our Lua must be caught, each with a readable state diff.

Every mutant is one textual change to one include. The test asserts the change applied, that
the vectors guarding that fact fail (not error), and that the diff names the key and scores.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.core.queues import QueueNames
from conformance.core.resources import lua_dir
from conformance.run.serial import run_vector
from conformance.run.spec import profile_for
from conformance.run.verdict import Verdict
from conformance.servers import ServerInfo, client_for
from conformance.vectors import Vector
from reference_impl import versions
from tests.scripts_helpers import replace_once

LUA_DIR = lua_dir()


@dataclass(frozen=True)
class Mutant:
    name: str
    include: str  # a path under lua/; a bare name means lua/includes/<name>
    original: str
    replacement: str
    must_fail: tuple[str, ...]
    diff_mentions: tuple[str, ...]


MUTANTS = [
    Mutant(
        "shift-0x800",
        "getDelayedScore.lua",
        "  local bandFloor = fireAt * 0x1000\n  local bandCeiling = (fireAt + 1) * 0x1000 - 1\n",
        "  local bandFloor = fireAt * 0x800\n  local bandCeiling = (fireAt + 1) * 0x800 - 1\n",
        ("delayed-score/delay-5000", "band-bump/2-same-ms"),
        ("delayed: zset differs", "expected score 6963200020480000 (F=1700000005000 +0)",
         "actual 3481600010240000"),
    ),
    Mutant(
        "no-band-bump",
        "getDelayedScore.lua",
        "  return topScore + 1, fireAt\n",
        "  return bandFloor, fireAt\n",
        ("band-bump/2-same-ms", "band-bump/3-same-ms", "band-bump/different-timestamps-same-fire"),
        ("member '2': expected score 6963200020480001 (F=1700000005000 +1), "
         "actual 6963200020480000 (F=1700000005000 +0)",),
    ),
    Mutant(
        "promote-bound-plus-one",
        "promoteDelayedJobs.lua",
        "local dueUpTo = (tonumber(now) + 1) * 0x1000 - 1",
        "local dueUpTo = (tonumber(now) + 1) * 0x1000",
        ("promote-range/next-band-floor-excluded",),
        ("delayed: missing (expected zset {\"n\": 6963200020484096})",
         "return of op 1 (moveToActive): expected {'job': None"),
    ),
    Mutant(
        "promote-bound-minus-one",
        "promoteDelayedJobs.lua",
        "local dueUpTo = (tonumber(now) + 1) * 0x1000 - 1",
        "local dueUpTo = (tonumber(now) + 1) * 0x1000 - 2",
        ("promote-range/band-ceiling-of-now-included",),
        ("unexpected key (zset {\"c\": \"6963200020484095\"})",),
    ),
]


# The lifecycle areas (changeDelay, moveToDelayed, changePriority) must catch these too.
MUTANTS += [
    Mutant(
        "change-delay-without-band-bump",
        "./changeDelay-4.lua",
        'rcall("ZADD", delayedKey, score, jobId)',
        'rcall("ZADD", delayedKey, fireAt * 0x1000, jobId)',
        ("band-bump/change-delay-own-band", "change-delay/joins-band-of-two",
         "change-delay/into-saturated-band"),
        ("member '3': expected score 6963200020480002 (F=1700000005000 +2), "
         "actual 6963200020480000 (F=1700000005000 +0)",),
    ),
    Mutant(
        "move-to-delayed-forgets-marker",
        "./moveToDelayed-11.lua",
        "addDelayMarkerIfNeeded(markerKey, delayedKey)\nreturn 0",
        "return 0",
        ("next-wake/retry-earlier-lowers-wake", "next-wake/retry-refreshes-stale-wake"),
        ("marker: zset differs",),
    ),
    Mutant(
        "change-priority-reuses-old-counter",
        "./changePriority-7.lua",
        "    insertPrioritized(prioritizedKey, priorityCounterKey, markerKey, priority, jobId,\n"
        "      pausedOrMaxed)",
        "    rcall(\"ZADD\", prioritizedKey, priority * 0x100000000\n"
        "      + tonumber(rcall(\"GET\", priorityCounterKey) or 0) % 0x100000000, jobId)",
        ("priority-order/change-rescore", "priority-order/change-same-priority-to-back"),
        ("prioritized: zset differs",),
    ),
]


def _mutated_copy(tmp_path: Path, mutant: Mutant) -> Path:
    target = tmp_path / "lua"
    shutil.copytree(LUA_DIR, target)
    path = target / (mutant.include if "/" in mutant.include else f"includes/{mutant.include}")
    replace_once(path, mutant.original, mutant.replacement)
    return target


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_mutant_is_caught_with_a_clear_diff(tmp_path: Path, mutant: Mutant,
                                           all_vectors: list[Vector],
                                           redis_server: ServerInfo) -> None:
    candidate = ScriptsCandidate(_mutated_copy(tmp_path, mutant))
    client, names, profile = client_for(redis_server), QueueNames(), profile_for("bullmq")
    verdicts: dict[str, Verdict] = {
        v.id: run_vector(v, candidate, client, profile, names,
                         protocol=versions.CURRENT) for v in all_vectors
    }
    failed = {vid for vid, v in verdicts.items() if v.outcome == "failed"}
    errored = {vid for vid, v in verdicts.items() if v.outcome == "errored"}
    assert errored == set(), "a wrong score must fail, not error"
    assert set(mutant.must_fail) <= failed, sorted(failed)[:10]
    diff_text = "\n".join(line for vid in mutant.must_fail for line in verdicts[vid].diff)
    for fragment in mutant.diff_mentions:
        assert fragment in diff_text, diff_text[:2000]
