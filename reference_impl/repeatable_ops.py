"""The legacy repeatable job ops of 5.x (removed at 6.0.0, where job schedulers replace them):
what `Queue.add` with `opts.repeat`, a worker's next iteration and `Queue.removeRepeatable`
ask of the scripts addRepeatableJob-2, updateRepeatableJobMillis-1 and removeRepeatable-2 or
-3. Each mirrors one client call; the client's computations (the keys) are in this module too.

A repeatable job lives in the `repeat` zset: its key scored by the fire time of its next
iteration, and (from 5.12.13) a hash `repeat:<key>` of its options. Its iterations are
delayed jobs. The key is the client's:

- the concatenation `name:jobId:endDate:tz:pattern-or-every` (the only key before 5.10.0,
  and the "legacy" key after, still honoured when a queue holds one),
- its md5 in hex (from 5.10.0), or `repeat.key` when the caller gives one.

The next iteration of an md5 key is the job `repeat:<key>:<fire time>`; that of a
concatenated key `repeat:<md5(name + jobId + md5(key))>:<fire time>`, which removal still
looks for. Normalized results: the stored key (addRepeatableJob), the key whose score moved
or "" (updateRepeatableJobMillis), 0 removed or 1 missing (removeRepeatable).
"""

from __future__ import annotations

import hashlib
from dataclasses import KW_ONLY, dataclass


@dataclass(frozen=True)
class RepeatOpts:
    """The repeat options a 5.x client builds its keys from. Exactly one of `every` and
    `pattern`; `end_date` in ms; `custom_id` the custom id the job was first added with
    (`opts.jobId`, kept as `repeat.jobId`); `key` the caller's own key (`repeat.key`), used in
    place of the md5. Every repeatable job op carries them (keyword-only, after its own
    fields)."""

    name: str
    _: KW_ONLY
    every: int | None = None
    pattern: str | None = None
    tz: str | None = None
    end_date: int | None = None
    custom_id: str | None = None
    key: str | None = None


def md5_hex(text: str) -> str:
    """The client's default repeatKeyHashAlgorithm: md5, in lowercase hex."""
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def concat_key(opts: RepeatOpts) -> str:
    """getRepeatConcatOptions: `name:jobId:endDate:tz:suffix`, empty where an option is
    missing; the suffix is the pattern, else `every` as text."""
    suffix = opts.pattern if opts.pattern else str(opts.every)
    end = "" if opts.end_date is None else str(opts.end_date)
    return f"{opts.name}:{opts.custom_id or ''}:{end}:{opts.tz or ''}:{suffix}"


def repeat_key(opts: RepeatOpts) -> str:
    """The key a 5.10.0-or-later client stores: `repeat.key`, else md5 of the concatenation."""
    return opts.key if opts.key is not None else md5_hex(concat_key(opts))


def legacy_job_id_prefix(opts: RepeatOpts) -> str:
    """getRepeatJobId with no fire time: `repeat:<checksum>:`, the checksum being `repeat.key`
    or md5(name + jobId + md5(concatenation)). A concatenated key's iterations carry it;
    removal looks for `<prefix><fire time>` in delayed."""
    checksum = opts.key if opts.key is not None else md5_hex(
        f"{opts.name}{opts.custom_id or ''}{md5_hex(concat_key(opts))}")
    return f"repeat:{checksum}:"


def removal_member(opts: RepeatOpts) -> str:
    """removeRepeatable's ARGV[2] (getRepeatConcatOptions of Scripts): the repeat key itself
    when it looks concatenated (more than two `:`-separated parts), else the concatenation."""
    key = repeat_key(opts)
    return key if len(key.split(":")) > 2 else concat_key(opts)


@dataclass(frozen=True)
class AddRepeatableJob(RepeatOpts):
    """Queue.add with `opts.repeat` (Repeat.updateRepeatableJob with override, addRepeatableJob-2,
    5.12.13 up to 6.0.0), at the fire time `next_millis` the client computed: the key scored,
    its options hashed, and the previous iteration, still delayed, removed."""

    next_millis: int


@dataclass(frozen=True)
class UpdateRepeatableJobMillis(RepeatOpts):
    """A worker's next iteration of a repeatable job (Repeat.updateRepeatableJob without
    override, updateRepeatableJobMillis-1, 5.12.13 up to 6.0.0): the key's score moved to
    `next_millis`, only when the queue still holds the key."""

    next_millis: int


@dataclass(frozen=True)
class RemoveRepeatable(RepeatOpts):
    """Queue.removeRepeatable (removeRepeatable-3 from 5.10.4; removeRepeatable-2 before, with
    another ARGV before 5.10.0): the concatenated key and its delayed iteration, else the
    repeat key, its hash and its delayed iteration."""


RepeatableOp = AddRepeatableJob | UpdateRepeatableJobMillis | RemoveRepeatable

#: Vector spelling of each repeatable job op.
REPEATABLE_OPS: dict[str, type] = {
    "addRepeatableJob": AddRepeatableJob,
    "updateRepeatableJobMillis": UpdateRepeatableJobMillis,
    "removeRepeatable": RemoveRepeatable,
}
#: Vector spelling of their fields, where it differs from the Python name.
REPEATABLE_FIELDS = {"next_millis": "nextMillis", "end_date": "endDate",
                     "custom_id": "customId"}

