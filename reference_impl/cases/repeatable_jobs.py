"""repeatable-jobs: the legacy repeatable jobs of 5.x, gone at 6.0.0 (job schedulers replace
them): addRepeatableJob-2 and updateRepeatableJobMillis-1 (from 5.12.13), removeRepeatable
(-2, then -3 from 5.10.4).

The keys are the client's (`reference_impl.repeatable_ops`): the concatenation
`name:jobId:endDate:tz:pattern-or-every`, its md5, or `repeat.key`. The vectors give the
options and the client computes the keys, so a port that hashes or concatenates otherwise
stores another member. The iteration itself is an ordinary add (`add` with its job id) and
is not repeated here.
"""

from __future__ import annotations

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, T, job_hash, wait_list, zset
from reference_impl.repeatable_ops import (
    AddRepeatableJob,
    RemoveRepeatable,
    RepeatOpts,
    UpdateRepeatableJobMillis,
    concat_key,
    legacy_job_id_prefix,
    repeat_key,
)

MINUTE = 60_000
#: The repeatable job most cases use: every minute, no custom id, end date or zone.
EVERY = RepeatOpts("report", every=MINUTE)
#: Its md5 key (from 5.10.0) and its concatenated key (before; "legacy" after).
KEY = repeat_key(EVERY)
CONCAT = concat_key(EVERY)
#: Its next iteration under each key: `repeat:<md5>:<ms>`, or the legacy checksum's.
NEXT = f"repeat:{KEY}:{T + MINUTE}"
LEGACY_NEXT = f"{legacy_job_id_prefix(EVERY)}{T + MINUTE}"
PATTERN = "0 * * * *"
END = T + 86_400_000

NOTES = {
    "keys": Flag(
        "key-layout",
        "The client names a repeatable job: md5 (hex) of name:jobId:endDate:tz:pattern-or-every "
        "(empty where missing), or repeat.key. addRepeatableJob scores that key in repeat with "
        "the next fire time and HMSETs repeat:<key> with name, tz, pattern, endDate and every "
        "(those given); the hash is written over, never deleted.",
    ),
    "legacy": Flag(
        "older-protocol",
        "A queue may still hold a concatenated key (the only kind before 5.10.0): "
        "addRepeatableJob and updateRepeatableJobMillis then move that member's score; "
        "removeRepeatable removes it first, with its iteration "
        "repeat:<md5(name + jobId + md5(key))>:<ms>, and leaves its hash.",
    ),
    "replace": Flag(
        "missing-write",
        "addRepeatableJob removes the key's previous iteration repeat:<key>:<previous score> "
        "while it is delayed (its keys and the deduplication key it owns, no event), unless "
        "(from 5.13.2) the job of the new fire time exists; an iteration no longer delayed "
        "stays. It adds no iteration: the client adds that job next.",
    ),
    "millis": Flag(
        "precondition",
        "updateRepeatableJobMillis (a worker's next iteration) moves the score of the key, "
        "else of the concatenated key, and returns it; when the queue holds neither it "
        "writes nothing and returns \"\", so a removed repeatable job stays removed.",
    ),
    "remove": Flag(
        "missing-write",
        "removeRepeatable removes the key with its hash and its iteration while delayed "
        "(all its keys, a removed event with prev delayed) and returns 0, or 1 when missing. "
        "Before 5.10.4 it left the hash; before 5.10.0 it knew the concatenated key only, "
        "and deleted an iteration's hash alone.",
    ),
}

_ADD_SINCE = versions.REPEATABLE_SCRIPTS
_UNTIL = versions.REPEATABLES_REMOVED


def _add(next_millis: int = T + MINUTE, **options: object) -> AddRepeatableJob:
    """An add of the every-minute repeatable job (or with other options) at `next_millis`."""
    merged: dict[str, object] = {"every": MINUTE, **options}
    return AddRepeatableJob("report", next_millis, **merged)  # type: ignore[arg-type]


def _scheduled(member: str, score: int = T + MINUTE) -> dict[str, object]:
    return {"repeat": zset([(member, score)])}


def _delayed(job_id: str, score: int = T + MINUTE) -> dict[str, object]:
    """A delayed iteration: its hash and its delayed entry (score fire time * 0x1000)."""
    return {job_id: job_hash({"name": "report", "timestamp": str(T), "delay": str(MINUTE)}),
            "delayed": zset([(job_id, score * 0x1000)])}


def _add_cases() -> list[Case]:
    return [
        Case("add-every", "An every repeatable job is scored under md5 of report::::60000, "
             "its hash holding name and every.", (_add(),), ("keys",)),
        Case("add-pattern-options", "A custom id, end date and zone are in the hashed key; "
             "the hash holds tz, pattern and endDate.",
             (AddRepeatableJob("report", T + MINUTE, pattern=PATTERN, tz="Europe/Paris",
                               end_date=END, custom_id="daily"),), ("keys",)),
        Case("add-custom-key", "repeat.key is the member and names the hash, in place of "
             "the md5.", (_add(key="nightly"),), ("keys",)),
        Case("add-hash-written-over", "Re-adding under the same repeat.key keeps the hash's "
             "earlier tz and pattern beside the new every.", (_add(key="nightly"),), ("keys",),
             {"repeat:nightly": job_hash({"name": "report", "tz": "Europe/Paris",
                                          "pattern": PATTERN})}),
        Case("add-legacy-key-kept", "A queue holding the concatenated key gets that member "
             "rescored and its hash written; no md5 member.", (_add(T + 2 * MINUTE),),
             ("legacy", "keys"), _scheduled(CONCAT)),
        Case("add-legacy-over-md5", "With both keys held, the concatenated one is rescored; "
             "the md5's delayed iteration is removed.", (_add(T + 2 * MINUTE),),
             ("legacy", "replace"),
             {"repeat": zset([(CONCAT, T + MINUTE), (KEY, T + MINUTE)]), **_delayed(NEXT)}),
        Case("add-replaces-delayed", "Re-adding removes the delayed iteration of the previous "
             "score with its logs and deduplication key.", (_add(T + 2 * MINUTE),),
             ("replace",),
             {**_scheduled(KEY), **_delayed(NEXT), f"{NEXT}:logs": {"list": ["started"]},
              "de:d1": {"string": NEXT}}),
        Case("add-waiting-iteration-stays", "A previous iteration already waiting stays; the "
             "key is rescored.", (_add(T + 2 * MINUTE),), ("replace",),
             {**_scheduled(KEY), NEXT: job_hash({"name": "report"}), "wait": wait_list(NEXT)}),
        Case("add-same-fire-time", "Re-adding at the same fire time keeps its delayed "
             "iteration: that job is the next one.", (_add(),), ("replace",),
             {**_scheduled(KEY), **_delayed(NEXT)}),
    ]


def _update_cases() -> list[Case]:
    return [
        Case("update-millis", "A worker's next iteration rescores the md5 key and returns it; "
             "the hash is untouched.",
             (UpdateRepeatableJobMillis("report", T + 2 * MINUTE, every=MINUTE),), ("millis",),
             {**_scheduled(KEY), f"repeat:{KEY}": job_hash({"name": "report", "every": "1"})}),
        Case("update-millis-legacy", "A queue holding only the concatenated key gets that one "
             "rescored and returned.",
             (UpdateRepeatableJobMillis("report", T + 2 * MINUTE, every=MINUTE),),
             ("millis", "legacy"), _scheduled(CONCAT)),
        Case("update-millis-md5-first", "With both keys held, the md5 key is rescored (an add "
             "prefers the concatenated one).",
             (UpdateRepeatableJobMillis("report", T + 2 * MINUTE, every=MINUTE),), ("millis",),
             {"repeat": zset([(CONCAT, T + MINUTE), (KEY, T + MINUTE)])}),
        Case("update-millis-removed", "A removed repeatable job stays removed: \"\" and no "
             "write.", (UpdateRepeatableJobMillis("report", T + 2 * MINUTE, every=MINUTE),),
             ("millis",)),
    ]


def _remove_cases() -> list[Case]:
    concat_hash = {f"repeat:{CONCAT}": job_hash({"name": "report", "every": str(MINUTE)})}
    md5_held = {**_scheduled(KEY), f"repeat:{KEY}": job_hash({"name": "report",
                                                                "every": str(MINUTE)})}
    colon = RepeatOpts("report", every=MINUTE, key="team:a:report")
    colon_next = f"repeat:{colon.key}:{T + MINUTE}"
    return [
        Case("remove-concat-key", "The concatenated key goes with its delayed iteration (legacy "
             "id) and logs; its hash stays.", (RemoveRepeatable("report", every=MINUTE),),
             ("legacy", "remove"),
             {**_scheduled(CONCAT), **concat_hash, **_delayed(LEGACY_NEXT),
              f"{LEGACY_NEXT}:logs": {"list": ["started"]}}, since=versions.EARLIEST),
        Case("remove-md5-key", "The md5 key goes with its hash and delayed iteration, and a "
             "removed event.", (RemoveRepeatable("report", every=MINUTE),), ("remove",),
             {**md5_held, **_delayed(NEXT)}, since=versions.EARLIEST),
        Case("remove-missing", "Removing a repeatable job the queue does not hold returns 1.",
             (RemoveRepeatable("report", every=MINUTE),), ("remove",), since=versions.EARLIEST),
        Case("remove-waiting-iteration-stays", "An iteration already waiting stays, without "
             "an event; the key and hash go.", (RemoveRepeatable("report", every=MINUTE),),
             ("remove",), {**md5_held, NEXT: job_hash({"name": "report"}),
                           "wait": wait_list(NEXT)}, since=versions.EARLIEST),
        Case("remove-concat-first", "With both keys held, only the concatenated key goes (0); "
             "the md5 key stays.", (RemoveRepeatable("report", every=MINUTE),),
             ("legacy", "remove"),
             {"repeat": zset([(CONCAT, T + MINUTE), (KEY, T + MINUTE)])},
             since=versions.EARLIEST),
        Case("remove-custom-key", "A repeat.key is removed by that name, with its hash and "
             "iteration repeat:<key>:<ms>.",
             (RemoveRepeatable("report", every=MINUTE, key="nightly"),), ("remove",),
             {**_scheduled("nightly"), "repeat:nightly": job_hash({"name": "report"}),
              **_delayed(f"repeat:nightly:{T + MINUTE}")}),
        Case("remove-colon-key-hash-left", "A repeat.key with colons is taken as "
             "concatenated: removed with its iteration, its hash left.",
             (RemoveRepeatable("report", every=MINUTE, key=colon.key),), ("legacy", "remove"),
             {**_scheduled(repeat_key(colon)),
              f"repeat:{colon.key}": job_hash({"name": "report"}), **_delayed(colon_next)}),
    ]


def _ranged(case: Case) -> Case:
    """The case claimed up to 6.0.0, from addRepeatableJob-2 unless it says otherwise."""
    return Case(case.name, case.description, case.when, case.flags, case.given,
                since=case.since or _ADD_SINCE, until=_UNTIL)


AREA = Area(
    "repeatable-jobs",
    "Legacy repeatable jobs of 5.x, gone at 6.0.0: addRepeatableJob-2, "
    "updateRepeatableJobMillis-1 and removeRepeatable-2/-3, with the client's keys.",
    NOTES,
    tuple(_ranged(case) for case in _add_cases() + _update_cases() + _remove_cases()),
    rule=(
        "A repeatable job is a member of `repeat` scored by its next fire time: the md5 of "
        "`name:jobId:endDate:tz:pattern-or-every` (from 5.10.0; before, that concatenation "
        "itself) or `repeat.key`, with a hash `repeat:<key>` of its options (from 5.12.13). Its "
        "iterations are delayed jobs `repeat:<key>:<fire time>` (a concatenated key's: "
        "`repeat:<md5(name + jobId + md5(key))>:<fire time>`). Adding again removes the "
        "previous iteration while it is delayed; a worker's next iteration only moves the "
        "score of a key the queue still holds; removal takes the key, its hash and its "
        "delayed iteration."
    ),
)
