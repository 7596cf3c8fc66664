"""Flows: a child job's link to its parent, and what the child's end does to the parent.

A client adds a child with `opts.parent = {id, queue}` (`queue` is the parent queue's qualified
name, `<prefix>:<name>`) and the failure policy flags `fpof`, `cpof`, `idof`, `rdof` in its
opts. From them it sends the add script three more arguments: the parent's key
`<queue>:<id>`, that key's `:dependencies` set, and the parent record `{id, queueKey, fpof?,
rdof?, idof?, cpof?}` (a flag only when set). The script stores the key and the record (as
JSON) on the child (`parentKey`, `parent`) and adds the child's full key to the parent's
`:dependencies`. When the child ends, its parent record says what happens, never the options
of the finishing call.

In vectors a queue's qualified name is written `QUEUE_REF` (`<q>`); the runner puts the real
name in before seeding and applying, so keys such as `<q>:1` stay the same under every key
profile. A flow may span two queues (`<q>` and `<q2>`, `QueueCore.world`): every step on a
parent runs on the parent's queue (its keys, its meta, its marker, its events), as the scripts
build them from the parent's queue key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reference_impl import versions
from reference_impl.ops import Add, AddFlow, AddParentJob
from reference_impl.queue_core import JOB_HAS_FAILED_CHILDREN, JOB_NOT_EXIST, JOB_NOT_IN_STATE
from reference_impl.store import JsonText
from reference_impl.worker_ops import (
    GetDependencyCounts,
    MoveToWaitingChildren,
    RemoveChildDependency,
)

if TYPE_CHECKING:
    from reference_impl.queue_core import QueueCore

#: The parent policy flags, in the order the Node client puts them in the record.
POLICY_FLAGS = ("fpof", "rdof", "idof", "cpof")
#: addParentJob and the add scripts answer this when the parent's hash is missing.
PARENT_JOB_NOT_EXIST = -5
#: The add scripts answer this for a custom id that exists under another, existing parent.
PARENT_JOB_CANNOT_BE_REPLACED = -7
#: The parent's field a flow insert sets when one of its children could not attach (-7).
FLOW_ATTACHMENT_FAILED = "flowAttachmentFailed"


@dataclass(frozen=True)
class ParentLink:
    """What a client sends for a child: the parent's key, its `:dependencies` key and the
    record stored on the child."""

    key: str
    dependencies: str
    record: Mapping[str, Any]


def parent_link(opts: Mapping[str, Any]) -> ParentLink | None:
    """The parent arguments a client derives from a child's opts, or None without a parent."""
    parent = opts.get("parent")
    if not parent:
        return None
    key = f"{parent['queue']}:{parent['id']}"
    record: dict[str, Any] = {"id": parent["id"], "queueKey": parent["queue"]}
    record.update({flag: True for flag in POLICY_FLAGS if opts.get(flag)})
    return ParentLink(key, f"{key}:dependencies", record)


@dataclass(frozen=True)
class FlowEntry:
    """One add of a flow: the qualified name (or ref) of the queue it goes to, and the add."""

    queue: str
    op: Add | AddParentJob


def flow_entries(op: AddFlow, queue: str) -> list[FlowEntry]:
    """The adds FlowProducer.add sends for `op.flow`, in its order: the root, then each level
    of the tree left to right (a node's children are queued after its whole level; this is
    the Node client's order for trees of two levels and for chains). `queue` is the qualified
    name of the op's queue, where the root lives and every node without a `queue` of its own
    (a child in another queue names it, `<q2>` in vectors); each child's opts get `parent` =
    {id, queue} of its node."""
    entries: list[FlowEntry] = []
    level: list[tuple[Mapping[str, Any], FlowEntry | None]] = [(op.flow, None)]
    while level:
        below: list[tuple[Mapping[str, Any], FlowEntry | None]] = []
        for node, parent in level:
            opts = dict(node.get("opts", {}))
            if parent is not None:
                opts["parent"] = {"id": parent.op.job_id, "queue": parent.queue}
            children = node.get("children", ())
            kind = AddParentJob if children else Add
            entry = FlowEntry(str(node.get("queue", queue)) if parent is not None else queue,
                              kind(node["name"], op.timestamp, node.get("data", {}), opts,
                                   node["jobId"]))
            entries.append(entry)
            below += [(child, entry) for child in children]
        level = below
    return entries


def flow_parents(entries: list[FlowEntry]) -> list[ParentLink]:
    """The parents a flow's entries name, each once, in the order of their first child: the
    ones FlowProducer asks to release once every entry is in."""
    seen: dict[str, ParentLink] = {}
    for entry in entries:
        link = parent_link(entry.op.opts)
        if link is not None and link.key not in seen:
            seen[link.key] = link
    return list(seen.values())


def release_after_flow(model: QueueCore, link: ParentLink, now: int) -> None:
    """releaseParentIfNoPendingDependencies: a parent a child could not attach to
    (`flowAttachmentFailed`) loses the mark and stays; any other is released when nothing
    is pending."""
    parent, parent_id = model.locate(link.key)
    if parent.store.hget(parent_id, FLOW_ATTACHMENT_FAILED) is not None:
        parent.store.hdel(parent_id, FLOW_ATTACHMENT_FAILED)
        return
    release_if_no_pending(parent, parent_id, now)


def parent_exists(model: QueueCore, key: str) -> bool:
    """Whether the job of a full key (a parent's, `<q>:<id>`) has its hash."""
    parent, parent_id = model.locate(key)
    return parent.store.exists(parent_id)


def stored_record(model: QueueCore, job_id: str) -> dict[str, Any] | None:
    """The parent record stored on a job (`parent`), parsed, or None."""
    raw = model.store.hget(job_id, "parent")
    if raw is None:
        return None
    value = raw.value if isinstance(raw, JsonText) else json.loads(raw)
    return dict(value)


def record_text(record: Mapping[str, Any]) -> JsonText:
    """The `parent` field as the script writes it: cjson of the record (key order free)."""
    return JsonText(dict(record))


def add_child(model: QueueCore, link: ParentLink, job_id: str) -> None:
    """The add scripts' last step: the child's full key joins the parent's dependencies."""
    parent, parent_id = model.locate(link.key)
    parent.store.sadd(f"{parent_id}:dependencies", model.job_key(job_id))


def duplicated(model: QueueCore, job_id: str, link: ParentLink | None, now: int,
               defer: bool = False) -> str | int:
    """handleDuplicatedJob: an add whose custom id exists. A job with no parent, the same
    parent, or a parent that is gone takes the new parent (`updateExistingJobsParent`); one
    whose other parent still exists refuses a new parent with -7. Else `duplicated` (before
    6.5.1 a gone parent was not replaced: the job kept it)."""
    store = model.store
    existed = store.hget(job_id, "parentKey")
    gone = model.since(versions.FLOW_DEFERRED_RELEASE) and existed is not None \
        and not parent_exists(model, str(existed))
    if existed is None or existed == (link.key if link else None) or gone:
        if link is not None:
            _adopt(model, job_id, link, now, defer)
    elif link is not None and parent_exists(model, str(existed)):
        if defer:
            parent, parent_id = model.locate(link.key)
            parent.store.hset(parent_id, FLOW_ATTACHMENT_FAILED, "1")
        return PARENT_JOB_CANNOT_BE_REPLACED
    model.event("event", "duplicated", "jobId", job_id)
    return job_id


def _adopt(model: QueueCore, job_id: str, link: ParentLink, now: int, defer: bool) -> None:
    """updateExistingJobsParent: a completed job counts as processed at once (its return
    value; unless `defer`, a flow insert's, the parent is released when nothing else is
    pending); any other joins the dependencies. The job then names the new parent."""
    store = model.store
    parent, parent_id = model.locate(link.key)
    if store.zscore("completed", job_id) is not None:
        value = store.hget(job_id, "returnvalue")
        if value is None:
            raise NotImplementedError("HSET of a nil returnvalue is a Lua error")
        parent.store.hset(f"{parent_id}:processed", model.job_key(job_id), value)
        if not defer:
            release_if_no_pending(parent, parent_id, now)
    else:
        parent.store.sadd(f"{parent_id}:dependencies", model.job_key(job_id))
    store.hset(job_id, "parentKey", link.key)
    store.hset(job_id, "parent", record_text(link.record))


def release_if_no_pending(model: QueueCore, parent_id: str, now: int) -> None:
    """moveParentToWaitIfNoPendingDependencies: with `:dependencies` empty, release the
    parent when it waits for its children."""
    if model.store.scard(f"{parent_id}:dependencies") == 0:
        release_if_waiting(model, parent_id, now)


def release_if_waiting(model: QueueCore, parent_id: str, now: int) -> None:
    """moveParentToWaitIfNeeded: a parent that still exists and is in `waiting-children`
    leaves it for wait, prioritized or delayed."""
    if model.store.exists(parent_id) and model.store.zrem("waiting-children", parent_id):
        move_parent_to_wait(model, parent_id, now)


def move_parent_to_wait(model: QueueCore, parent_id: str, now: int) -> None:
    """moveParentToWait: a parent with a delay goes to delayed at exactly (now + delay) *
    0x1000 (no same-millisecond band); else to the head of wait (RPUSH: next to be taken)
    or to prioritized, with the base marker unless paused or maxed."""
    store = model.store
    delay = _number(store.hget(parent_id, "delay"))
    priority = _number(store.hget(parent_id, "priority"))
    if delay > 0:
        fire = now + delay
        store.zadd("delayed", fire * 0x1000, parent_id)
        model.event("event", "delayed", "jobId", parent_id, "delay", str(fire))
        model.delay_marker()
        return
    paused_or_maxed = model.paused_or_maxed()
    if priority == 0:
        store.rpush("wait", parent_id)
        model.base_marker(paused_or_maxed)
    else:
        model.prioritize(parent_id, priority, paused_or_maxed)
    model.event("event", "waiting", "jobId", parent_id, "prev", "waiting-children")


def _number(raw: object) -> int:
    """A numeric job field as the script's tonumber() reads it (missing: 0)."""
    try:
        return int(str(raw)) if raw is not None else 0
    except ValueError:
        return 0


def child_completed(model: QueueCore, parent_key: str, job_id: str, value: str,
                    now: int) -> None:
    """A completed child: when it was still a dependency, its return value goes into the
    parent's `:processed` under the child's key, and the parent is released if it was the
    last one."""
    parent, parent_id = model.locate(parent_key)
    child = model.job_key(job_id)
    if parent.store.srem(f"{parent_id}:dependencies", child):
        parent.store.hset(f"{parent_id}:processed", child, value)
        release_if_no_pending(parent, parent_id, now)


def child_failed(model: QueueCore, record: Mapping[str, Any], job_id: str, reason: str,
                 now: int) -> None:
    """moveChildFromDependenciesIfNeeded: a failed child acts by its stored record alone;
    fpof wins over cpof, cpof over idof/rdof. Without a flag, or when the child is no longer
    a dependency, nothing happens to the parent."""
    parent, parent_id = model.locate(f"{record['queueKey']}:{record['id']}")
    child = model.job_key(job_id)
    store = parent.store
    if not any(record.get(flag) for flag in POLICY_FLAGS):
        return
    if not store.srem(f"{parent_id}:dependencies", child):
        return
    if record.get("fpof"):
        store.zadd(f"{parent_id}:unsuccessful", now, child)
        _fail_parent(parent, parent_id, child, now)
    elif record.get("cpof"):
        store.hset(f"{parent_id}:failed", child, reason)
        release_if_waiting(parent, parent_id, now)
    else:
        release_if_no_pending(parent, parent_id, now)
        if record.get("idof"):
            store.hset(f"{parent_id}:failed", child, reason)


def unlink_removed_child(model: QueueCore, job_id: str, parent_key: str) -> bool:
    """removeParentDependencyKey, soft (a finished child deleted at once, keepJobs count 0):
    a child still pending leaves `:dependencies`; when it was the last, a parent waiting for
    children goes to the head of wait, whatever its priority or delay, with `waiting`."""
    parent, parent_id = model.locate(parent_key)
    store = parent.store
    if not store.srem(f"{parent_id}:dependencies", model.job_key(job_id)):
        return False
    if store.scard(f"{parent_id}:dependencies") == 0 and store.zrem("waiting-children",
                                                                   parent_id):
        store.rpush("wait", parent_id)
        parent.base_marker(parent.paused_or_maxed())
        parent.event("event", "waiting", "jobId", parent_id, "prev", "waiting-children")
    return True


def _fail_parent(model: QueueCore, parent_id: str, child: str, now: int) -> None:
    """handleChildFailureAndMoveParentToWait: a parent waiting for children (or delayed, its
    delay then zeroed) is released with `defa` set, to fail when a worker takes it; any other
    parent that has not failed just gets `defa`."""
    store = model.store
    if not store.exists(parent_id):
        return
    deferred = f"child {child} failed"
    if store.zscore("waiting-children", parent_id) is not None:
        store.zrem("waiting-children", parent_id)
    elif store.zscore("delayed", parent_id) is not None:
        store.hset(parent_id, "delay", "0")
        store.zrem("delayed", parent_id)
    else:
        if store.zscore("failed", parent_id) is None:
            store.hset(parent_id, "defa", deferred)
        return
    store.hset(parent_id, "defa", deferred)
    move_parent_to_wait(model, parent_id, now)


def move_to_waiting_children(model: QueueCore, op: MoveToWaitingChildren) -> int:
    """moveToWaitingChildren-7 (see `MoveToWaitingChildren`)."""
    store = model.store
    if not store.exists(op.job_id):
        return JOB_NOT_EXIST
    if store.zcard(f"{op.job_id}:unsuccessful") != 0:
        return JOB_HAS_FAILED_CHILDREN
    dependencies = f"{op.job_id}:dependencies"
    if op.child is not None:
        pending = store.sismember(dependencies, f"{op.child['queue']}:{op.child['id']}")
    else:
        pending = store.scard(dependencies) != 0
    if not pending:
        return 1
    lock_error = model.remove_lock(op.job_id, op.token)
    if lock_error:
        return lock_error
    if not store.lrem_last("active", op.job_id):
        return JOB_NOT_IN_STATE
    store.zadd("waiting-children", op.now, op.job_id)
    model.event("event", "waiting-children", "jobId", op.job_id, "prev", "active")
    return 0


def get_dependency_counts(model: QueueCore, op: GetDependencyCounts) -> list[int]:
    """getDependencyCounts-4 (see `GetDependencyCounts`); an unknown type counts `failed`,
    as the script's last branch does."""
    store = model.store
    counts = []
    for kind in op.types:
        if kind == "processed":
            counts.append(len(store.hgetall(f"{op.job_id}:processed")))
        elif kind == "unprocessed":
            counts.append(store.scard(f"{op.job_id}:dependencies"))
        elif kind == "ignored":
            counts.append(len(store.hgetall(f"{op.job_id}:failed")))
        else:
            counts.append(store.zcard(f"{op.job_id}:unsuccessful"))
    return counts


def remove_child_dependency(model: QueueCore, op: RemoveChildDependency) -> int:
    """removeChildDependency-1 (see `RemoveChildDependency`): the soft unlink of a removed
    child (`unlink_removed_child`), then the job's parent fields go."""
    store = model.store
    if not store.exists(op.job_id):
        return JOB_NOT_EXIST
    if not parent_exists(model, op.parent_key):
        return PARENT_JOB_NOT_EXIST
    if not unlink_removed_child(model, op.job_id, op.parent_key):
        return 1
    store.hdel(op.job_id, "parentKey")
    store.hdel(op.job_id, "parent")
    return 0
