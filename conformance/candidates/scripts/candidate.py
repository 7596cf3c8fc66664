"""`scripts:DIR`: drive a directory of BullMQ-convention Lua scripts through redis-py.

Scripts are found by name and key count (`<name>-<numkeys>.lua`) and loaded with
`register_script`, which caches the SHA and reloads on NOSCRIPT. Includes are resolved when
present; inlined files (as the PyPI package ships them) load as they are.

A directory holding none of the scripts is refused when the candidate is built (UsageError),
naming folders below it that do hold some. A script that raises, or is missing while others are
there, is a CandidateError (the vector is errored). A reply of another shape than the op's
result (e.g. nil from a pause script that returns nothing) is passed on as it is: the runner
compares it with the expected return and still judges the state.

Each call has a limit (`--adapter-timeout`, kept above the server's busy threshold, see
`script_call`): a script still running then is killed with SCRIPT KILL and its vector errored
(RunawayScript), or, when it has written and cannot be killed, UnkillableScript. A `BUSY` reply
to our call is someone else's script: the server's state, raised as it came, never the
candidate's error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import redis
from redis.commands.core import Script

from conformance.candidates.base import Capabilities
from conformance.candidates.scripts import (
    getter_calls,
    maintenance_calls,
    repeatable_calls,
    scheduler_calls,
    worker_calls,
)
from conformance.candidates.scripts.call import (
    RunawayScript,
    ScriptCall,
    UnkillableScript,
    added,
    as_result,
    busy_threshold,
    call_limit,
    fetched_or_raw,
    fetched_reply,
    is_busy_reply,
    is_unkillable,
    kill_runaway,
    limited_client,
    runaway_text,
    script_sha,
    unkillable_text,
)
from conformance.candidates.scripts.includes import resolve
from conformance.candidates.scripts.worker_calls import pack as _pack
from conformance.candidates.scripts.worker_calls import packed_fields, worker_opts
from conformance.core.errors import CandidateError, UsageError
from conformance.core.options import ADAPTER_TIMEOUT_S
from conformance.core.queues import QueueRef
from reference_impl import flows, scheduler_upsert, scores, versions, worker_iteration
from reference_impl.getter_ops import PLAIN_READS
from reference_impl.keys import KeyProfile
from reference_impl.ops import (
    OP_NAMES,
    Add,
    AddFlow,
    AddParentJob,
    ChangeDelay,
    ChangePriority,
    MoveToActive,
    MoveToDelayed,
    Op,
    Pause,
    Promote,
    Result,
    Resume,
)
from reference_impl.scheduler_ops import CLIENT_SIDE, PickUpIteration, UpsertJobScheduler
from reference_impl.worker_ops import MoveToFinished


@dataclass(frozen=True)
class Layout:
    """A script's file name and the queue key suffixes it takes as KEYS, in order."""

    name: str
    keys: tuple[str, ...]

    @property
    def file_name(self) -> str:
        """`<name>-<numkeys>.lua`."""
        return f"{self.name}-{len(self.keys)}.lua"


#: BullMQ 6.x KEYS layouts (RESEARCH.md §7.2, §7.3).
LAYOUTS: dict[str, Layout] = {
    layout.name: layout
    for layout in (
        Layout("addStandardJob", ("wait", "paused", "meta", "id", "completed", "delayed",
                                  "active", "events", "marker")),
        Layout("addDelayedJob", ("marker", "meta", "id", "delayed", "completed", "events")),
        Layout("addPrioritizedJob", ("marker", "meta", "id", "prioritized", "delayed",
                                     "completed", "active", "events", "pc")),
        Layout("addParentJob", ("meta", "id", "delayed", "waiting-children", "completed",
                                "events")),
        # A parent's own key and its dependencies; "{parent}" is the parent's id.
        Layout("releaseParentIfNoPendingDependencies", ("{parent}", "{parent}:dependencies")),
        Layout("moveToActive", ("wait", "active", "prioritized", "events", "stalled", "limiter",
                                "delayed", "paused", "meta", "pc", "marker")),
        Layout("promote", ("delayed", "wait", "paused", "meta", "prioritized", "active", "pc",
                           "events", "marker")),
        Layout("changeDelay", ("delayed", "meta", "marker", "events")),
        Layout("changePriority", ("wait", "paused", "meta", "prioritized", "active", "pc",
                                  "marker")),
        # KEYS[1] and KEYS[2] are swapped for resume; "{job}" is the job's own key.
        Layout("pause", ("wait", "paused", "meta", "prioritized", "events", "delayed", "marker")),
        Layout("moveToDelayed", ("marker", "active", "prioritized", "delayed", "{job}", "events",
                                 "meta", "stalled", "wait", "limiter", "pc")),
        *(Layout(name, keys) for name, keys in worker_calls.WORKER_KEYS.items()),
        *(Layout(name, keys) for name, keys in scheduler_calls.SCHEDULER_KEYS.items()),
        *(Layout(name, keys) for name, keys in repeatable_calls.REPEATABLE_KEYS.items()),
        *(Layout(name, keys) for name, keys in getter_calls.GETTER_KEYS.items()),
        *(Layout(name, keys) for name, keys in maintenance_calls.MAINTENANCE_KEYS.items()),
    )
}
#: The shapes of earlier 5.x and 6.x releases (docs/RESEARCH.md §1.1): each new key was inserted
#: in the middle, so the order comes from the file's key count, never from the name alone.
ALTERNATE_LAYOUTS: dict[str, tuple[Layout, ...]] = {
    "addStandardJob": (
        Layout("addStandardJob", ("wait", "paused", "meta", "id", "completed", "active",
                                  "events", "marker")),  # 5.9.0 up to 5.56.0
        Layout("addStandardJob", ("wait", "paused", "meta", "id", "completed", "events",
                                  "marker")),  # 5.0.0 up to 5.9.0
    ),
    "addPrioritizedJob": (
        Layout("addPrioritizedJob", ("marker", "meta", "id", "prioritized", "completed",
                                     "active", "events", "pc")),
        Layout("addPrioritizedJob", ("marker", "meta", "id", "prioritized", "completed",
                                     "events", "pc")),
    ),
    "promote": (Layout("promote", ("delayed", "wait", "paused", "meta", "prioritized", "pc",
                                   "events", "marker")),),
    "changeDelay": (Layout("changeDelay", ("delayed", "{job}", "events")),),  # before 5.1.9
    "changePriority": (Layout("changePriority", ("wait", "paused", "meta", "prioritized", "pc",
                                                 "marker")),),
    "removeRepeatable": (Layout("removeRepeatable", repeatable_calls.OLDER_REMOVE_KEYS),),
    # 5.8.2 up to 6.1.1: paused and meta between them (read only while 5.x paused a queue)
    "getCountsPerPriority": (Layout("getCountsPerPriority", ("wait", "paused", "meta",
                                                             "prioritized")),),
    "reprocessJob": tuple(Layout("reprocessJob", keys)
                          for keys in maintenance_calls.OLDER_REPROCESS_KEYS),
    "moveToDelayed": (
        # 5.73.3 up to 6.3.5 (and the v6.2.0 source tree): `paused` as KEYS[11]
        Layout("moveToDelayed", ("marker", "active", "prioritized", "delayed", "{job}",
                                 "events", "meta", "stalled", "wait", "limiter", "paused",
                                 "pc")),
        Layout("moveToDelayed", ("marker", "active", "prioritized", "delayed", "{job}",
                                 "events", "meta", "stalled")),  # 5.5.4 up to 5.73.3
        Layout("moveToDelayed", ("marker", "active", "prioritized", "delayed", "{job}",
                                 "events", "meta")),  # before 5.5.4
    ),
}
#: Files that only BullMQ 4.x and earlier ship (no marker zset): older than supported.
PRE_5_FILES = ("moveToActive-10.lua", "addStandardJob-6.lua", "addDelayedJob-7.lua",
               "addPrioritizedJob-8.lua", "pause-5.lua", "promote-7.lua")
_ADD_SCRIPT = {"standard": "addStandardJob", "delayed": "addDelayedJob",
               "prioritized": "addPrioritizedJob"}
#: How far below a directory without scripts to look for one with them: levels, and folders.
SEARCH_DEPTH = 4
SEARCH_LIMIT = 2000


def find_layout(directory: Path, name: str) -> Layout | None:
    """The layout of `name` whose file is in `directory`: the 6.x one first, then variants."""
    for layout in (LAYOUTS[name], *ALTERNATE_LAYOUTS.get(name, ())):
        # os.path.isfile: False, not an exception, in a folder we may not read
        if os.path.isfile(directory / layout.file_name):
            return layout
    return None


def count_scripts(directory: Path) -> int:
    """How many of the scripts the ops need `directory` holds."""
    return sum(1 for name in LAYOUTS if find_layout(directory, name) is not None)


#: Scripts a release ships that are not the queue's protocol: npm bullmq 6.7.0's relay, a
#: message transport beside the queue.
NOT_QUEUE_SCRIPTS = ("relay",)


@dataclass(frozen=True)
class Coverage:
    """Which of a directory's queue scripts the vectors call (`scripts_covered`)."""

    covered: tuple[str, ...]
    uncovered: tuple[str, ...]

    @property
    def total(self) -> int:
        """How many queue scripts the directory holds."""
        return len(self.covered) + len(self.uncovered)


def scripts_covered(directory: Path) -> Coverage:
    """The queue scripts of `directory` (its top-level `<name>-<keys>.lua` files, the relay's
    aside), by name: those the suite calls in a layout the directory holds, and the others."""
    names = sorted({path.name.removesuffix(".lua").rsplit("-", 1)[0]
                    for path in directory.glob("*-*.lua")
                    if not path.name.startswith(NOT_QUEUE_SCRIPTS)})
    called = [name for name in names if name in LAYOUTS
              and find_layout(directory, name) is not None]
    return Coverage(tuple(called), tuple(name for name in names if name not in called))


def folders_with_scripts(directory: Path) -> list[Path]:
    """Folders below `directory` (at most SEARCH_DEPTH levels, SEARCH_LIMIT folders, no hidden
    ones, no symlinks) that hold some of the needed scripts: most scripts first, then nearest."""
    found: list[tuple[int, int, str, Path]] = []
    level, depth, visited = [directory], 0, 0
    while level and depth < SEARCH_DEPTH and visited < SEARCH_LIMIT:
        depth += 1
        below: list[Path] = []
        for parent in level:
            try:
                with os.scandir(parent) as entries:
                    below += sorted(Path(e.path) for e in entries if not e.name.startswith(".")
                                    and e.is_dir(follow_symlinks=False))
            except OSError:
                continue  # unreadable: nothing to suggest from there
        below = below[:SEARCH_LIMIT - visited]
        visited += len(below)
        found += [(-count, depth, str(path), path) for path in below
                  if (count := count_scripts(path))]
        level = below
    return [path for *_, path in sorted(found)]


def pre_5_files(directory: Path) -> list[str]:
    """The BullMQ 4.x script files in `directory`, when it holds no 5.x moveToActive."""
    if os.path.isfile(directory / LAYOUTS["moveToActive"].file_name):
        return []
    return [name for name in PRE_5_FILES if os.path.isfile(directory / name)]


def check_directory(directory: Path) -> None:
    """Raise UsageError (one line) unless `directory` holds at least one needed script.

    The message names the files looked for, files of the same names with other KEYS counts (an
    older release), and the folders below that hold some (e.g. a package's `commands/`).
    """
    if count_scripts(directory) > 0:
        return
    wanted = [layout.file_name for name in LAYOUTS
              for layout in (LAYOUTS[name], *ALTERNATE_LAYOUTS.get(name, ()))]
    text = f"{directory} holds none of the scripts the ops need ({', '.join(wanted)})"
    old = pre_5_files(directory)
    others = sorted(p.name for name in LAYOUTS for p in directory.glob(f"{name}-*.lua"))
    if old:
        text += (f"; it has {', '.join(old)}: BullMQ 4.x scripts, older than the earliest "
                 f"supported protocol ({versions.text(versions.EARLIEST)})")
    elif others:
        text += (f"; it has {', '.join(others)}: other KEYS counts than any BullMQ 5.x or 6.x "
                 "release's")
    below = folders_with_scripts(directory)
    if below:
        text += f"; did you mean {' or '.join(str(p) for p in below[:3])}?"
    raise UsageError(text)


class ScriptsCandidate:
    """A directory of BullMQ-convention scripts (ours in `lua/`, or an official release's)."""

    def __init__(self, directory: Path, label: str | None = None,
                 limit: float = ADAPTER_TIMEOUT_S,
                 texts: Mapping[str, str] | None = None) -> None:
        """Raises UsageError when `directory` holds none of the scripts (`check_directory`).
        `limit`: seconds a script call may run (raised above the server's busy threshold).
        `texts`: resolved script texts by file name, sent in place of what the directory's
        files would give (a mutant of the directory, which `mutants` keeps in memory)."""
        check_directory(directory)
        old = pre_5_files(directory)
        if old:
            raise UsageError(f"{directory} holds BullMQ 4.x scripts ({', '.join(old)}), older "
                             f"than the earliest supported protocol "
                             f"({versions.text(versions.EARLIEST)})")
        self.directory = directory
        self._label = label or f"scripts:{directory}"
        self._given = dict(texts or {})
        self._texts: dict[str, str] = {}
        self._shas: dict[str, str] = {}
        self._layouts: dict[str, Layout] = {}
        self._scripts: dict[tuple[int, str], Script] = {}
        self.limit = limit
        #: Per client given to apply(): its limited twin for script calls, and that limit.
        self._limited: dict[int, tuple[redis.Redis, float]] = {}

    @property
    def name(self) -> str:
        """Label used in reports."""
        return self._label

    @property
    def version(self) -> str:
        """The directory, how many of the needed scripts it holds, and which variants."""
        found = [lay for name in LAYOUTS if (lay := find_layout(self.directory, name))]
        variants = [lay.file_name for lay in found if lay != LAYOUTS[lay.name]]
        extra = f", using {', '.join(variants)}" if variants else ""
        return f"{self.directory} ({len(found)}/{len(LAYOUTS)} scripts{extra})"

    @property
    def capabilities(self) -> Capabilities:
        """Every op (a missing script errors the vectors that need it); runs on a cluster,
        since its scripts go through the suite's client; its ARGV layout changes at 5.8.6
        (scores computed by the caller before), 5.10.0 (removeRepeatable's) and 5.13.2
        (changePriority's ARGV[2])."""
        return _CAPABILITIES

    def start(self, redis_url: str, profile: KeyProfile) -> None:
        """Nothing to start: scripts run through the client passed to apply()."""

    def close(self) -> None:
        """Close the connections made for limited script calls."""
        limited, self._limited = list(self._limited.values()), {}
        for client, _ in limited:
            client.connection_pool.disconnect()

    def limited(self, client: redis.Redis) -> tuple[redis.Redis, float]:
        """The client that script calls for `client` go through (the same server and
        database, every reply due within the limit), and that limit in seconds. On a cluster,
        `client` itself and the limit asked for: its nodes' connections are its own."""
        known = self._limited.get(id(client))
        if known is not None:
            return known
        if not hasattr(client, "connection_pool"):  # a RedisCluster
            return client, self.limit
        limit = call_limit(self.limit, busy_threshold(client))
        made = (limited_client(client, limit), limit)
        self._limited[id(client)] = made
        return made

    def _layout(self, name: str) -> Layout:
        if name not in self._layouts:
            layout = find_layout(self.directory, name)
            if layout is None:
                wanted = LAYOUTS[name]
                others = sorted(p.name for p in self.directory.glob(f"{name}-*.lua"))
                counts = sorted({len(lay.keys) for lay in (wanted, *ALTERNATE_LAYOUTS.get(
                    name, ()))})
                takes = " or ".join(str(count) for count in counts)
                # Only the layouts the suite calls are named: the releases' own differ more
                # (moveStalledJobsToWait has 8 KEYS in npm 5.0.0-5.1.3 and 5.53.2-5.78.0).
                hint = (f"; found {', '.join(others)}, but the suite calls {name} with "
                        f"{takes} KEYS only") if others else ""
                raise CandidateError(f"missing script {wanted.file_name} in {self.directory}"
                                     f"{hint}")
            given = self._given.get(layout.file_name)
            self._texts[name] = (given if given is not None
                                 else resolve(self.directory / layout.file_name))
            self._shas[name] = script_sha(self._texts[name])
            self._layouts[name] = layout
        return self._layouts[name]

    def _keys(self, queue: QueueRef, name: str, job_id: str = "", swap: bool = False,
              fill: Mapping[str, str] | None = None) -> list[str]:
        suffixes = list(self._layout(name).keys)
        if swap:
            suffixes[0], suffixes[1] = suffixes[1], suffixes[0]
        values = {"job": job_id, **(fill or {})}
        return [queue.key(suffix.format_map(values) if "{" in suffix else suffix)
                for suffix in suffixes]

    def _call(self, client: redis.Redis, queue: QueueRef, name: str, args: list[Any],
              job_id: str = "", swap: bool = False, fill: Mapping[str, str] | None = None
              ) -> Any:
        layout = self._layout(name)
        calls, limit = self.limited(client)
        cache_key = (id(calls), name)
        script = self._scripts.get(cache_key)
        if script is None:
            script = calls.register_script(self._texts[name])
            self._scripts[cache_key] = script
        keys = self._keys(queue, name, job_id, swap, fill)
        try:
            try:
                return script(keys=keys, args=args, client=calls)
            except redis.exceptions.NoScriptError:
                # Flushed again between redis-py's reload and its retry (SCRIPT FLUSH is not
                # the candidate's doing): send the body itself.
                return calls.eval(self._texts[name], len(keys), *keys, *args)
        except redis.TimeoutError:
            if calls is client:  # a cluster: no limit of ours, so no telling whose it is
                raise
            # No reply by the limit: our script still runs (someone else's would have made
            # Redis answer BUSY by now). redis-py has closed the connection that waited.
            raise self.runaway(calls, layout.file_name, limit) from None
        except redis.ResponseError as exc:
            if is_busy_reply(exc):
                raise  # someone else's script: the server's state, for the runner to hold
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise CandidateError(f"{layout.file_name} raised: {first}") from None

    @staticmethod
    def runaway(client: redis.Redis, file_name: str, limit: float) -> CandidateError:
        """Kill the runaway script of a call to `file_name` that had no reply within `limit`
        seconds; the error that errors its vector (UnkillableScript when it has written)."""
        try:
            killed = kill_runaway(client, limit)
        except redis.ResponseError as exc:
            if is_unkillable(exc):
                return UnkillableScript(unkillable_text(file_name, limit))
            raise
        return RunawayScript(runaway_text(file_name, limit, killed))

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        """Run the script for one op and normalize the reply."""
        if isinstance(op, AddFlow):
            return self._apply_flow(client, queue, op)
        calls = self.plan(queue, op)
        if not calls:
            return None
        (call,) = calls
        reply = self._call(client, queue, call.name, list(call.args), job_id=call.job_id,
                           swap=call.swap, fill=call.fill)
        return call.finish(reply)

    def plan(self, queue: QueueRef, op: Op) -> tuple[ScriptCall, ...]:
        """The script calls `op` makes on `queue`, in order, and how the first one's raw reply
        becomes the op's result; nothing is sent. One call for every op but addFlow, whose
        result is its root's reply (`flow_calls`). Raises CandidateError for a missing script.

        The calls' KEYS and ARGV depend on the op and the queue alone, never on an earlier
        reply: the calls of many vectors may share a pipeline. A worker picking up an iteration
        may call nothing (`worker_iteration.next_call`), and so may a caller's upsert
        (`scheduler_upsert.upsert_call`): no calls, and the op's result is None.
        """
        if isinstance(op, AddFlow):
            return tuple(self.flow_calls(queue, op))
        if isinstance(op, PickUpIteration):
            call = worker_iteration.next_call(op)
            return () if call is None else (self._plan_one(queue, call),)
        if isinstance(op, UpsertJobScheduler):
            upsert = scheduler_upsert.upsert_call(op)
            return () if upsert is None else (self._plan_one(queue, upsert),)
        return (self._plan_one(queue, op),)

    def _plan_one(self, queue: QueueRef, op: Op) -> ScriptCall:
        handler = _HANDLERS.get(type(op))
        if handler is not None:
            return handler(self, queue, op)
        recorded: list[ScriptCall] = []

        def record(name: str, args: list[Any], fill: Mapping[str, str]) -> Any:
            recorded.append(self._script_call(name, args, fill=dict(fill)))

        if type(op) in repeatable_calls.CALLS:  # their ARGV depends on the protocol
            calls: Any = repeatable_calls
            repeatable_calls.CALLS[type(op)](record, queue, op)
        else:
            calls = next((module for module in (scheduler_calls, getter_calls,
                                                maintenance_calls)
                          if type(op) in module.CALLS), worker_calls)
            calls.CALLS[type(op)](record, queue.base, op)
        (call,) = recorded

        def finish(reply: Any) -> Result:
            result = calls.normalized(op, as_result(reply))
            # Only moveToFinished can answer a fetch-next array; four ids are just that.
            return fetched_or_raw(result) if isinstance(op, MoveToFinished) else result

        return replace(call, finish=finish)

    def script_call_keys(self, queue: QueueRef, call: ScriptCall) -> list[str]:
        """The KEYS `call` passes for an op on `queue` (on the call's own queue, if it has
        one)."""
        return self._keys(call.queue or queue, call.name, call.job_id, call.swap, call.fill)

    def _script_call(self, name: str, args: list[Any], job_id: str = "", swap: bool = False,
                     fill: dict[str, str] | None = None,
                     finish: Callable[[Any], Result] = as_result,
                     queue: QueueRef | None = None) -> ScriptCall:
        layout = self._layout(name)
        return ScriptCall(name, layout.file_name, self._texts[name], self._shas[name], tuple(args),
                          job_id, swap, fill or {}, finish, queue)

    def flow_calls(self, queue: QueueRef, op: AddFlow) -> list[ScriptCall]:
        """The calls FlowProducer.add makes: each entry's add (`flows.flow_entries`), with the
        defer-parent-release flag from 6.5.1, then each parent's release check."""
        entries = flows.flow_entries(op, queue.base[:-1])
        defer = queue.protocol >= versions.FLOW_DEFERRED_RELEASE
        calls = []
        for entry in entries:
            target = self._named(queue, entry.queue)
            calls.append(replace(self._add(target, entry.op, defer), queue=target))
        if defer:
            for link in flows.flow_parents(entries):
                parent_id = str(link.record["id"])
                calls.append(self._script_call(
                    "releaseParentIfNoPendingDependencies",
                    [link.record["queueKey"], parent_id, op.timestamp],
                    fill={"parent": parent_id}, queue=self._named(queue, link.record["queueKey"])))
        return calls

    @staticmethod
    def _named(queue: QueueRef, qualified: str) -> QueueRef:
        """The queue of a qualified name in a flow of an op on `queue`: `queue` itself, or
        another of the same profile and protocol (a node in another queue)."""
        if qualified == queue.base[:-1]:
            return queue
        return QueueRef(queue.profile, queue.profile.queue_of(qualified), queue.protocol)

    def _apply_flow(self, client: redis.Redis, queue: QueueRef, op: AddFlow) -> Result:
        """addFlow's calls in one pipeline (FlowProducer sends them in one MULTI; a vector's
        lone client cannot tell the two apart), or one by one through a cluster client,
        whose pipelines take no EVAL. The result is the root's reply, as FlowProducer reads
        only that one."""
        planned = self.flow_calls(queue, op)
        calls, limit = self.limited(client)
        sequenced = [(call, self.script_call_keys(queue, call)) for call in planned]
        try:
            if not hasattr(calls, "connection_pool"):  # a RedisCluster
                replies = []
                for call, keys in sequenced:
                    try:
                        replies.append(calls.eval(call.text, len(keys), *keys, *call.args))
                    except redis.ResponseError as exc:
                        replies.append(exc)
                        break
            else:
                pipe = calls.pipeline(transaction=False)
                for call, keys in sequenced:
                    # EVAL with the body, not EVALSHA: a SCRIPT FLUSH between loading and
                    # running would fail a call in the middle, after the ones before it ran.
                    pipe.eval(call.text, len(keys), *keys, *call.args)
                replies = pipe.execute(raise_on_error=False)
        except redis.TimeoutError:
            if calls is client:
                raise
            raise self.runaway(calls, "addFlow's scripts", limit) from None
        for call, reply in zip(planned, replies, strict=False):
            if isinstance(reply, redis.ResponseError):
                if is_busy_reply(reply):
                    raise reply
                first = str(reply).splitlines()[0] if str(reply) else type(reply).__name__
                raise CandidateError(f"{call.file_name} raised: {first}")
        return planned[0].finish(replies[0])

    def _add(self, queue: QueueRef, op: Add | AddParentJob, defer: bool = False) -> ScriptCall:
        dedup = op.opts.get("de")
        dedup_key = queue.key(f"de:{dedup['id']}") if dedup else None
        # A child: the parent's key, its dependencies and the record, as the client derives
        # them from opts.parent and the policy flags (`reference_impl.flows`).
        link = flows.parent_link(op.opts)
        parent = [link.key, link.dependencies, dict(link.record)] if link else [None] * 3
        packed = [queue.base, op.job_id or "", op.name, op.timestamp, *parent, None,
                  dedup_key, *([1] if defer else [])]
        args = [_pack(packed), json.dumps(op.data, separators=(",", ":")), _pack(dict(op.opts))]
        script = "addParentJob" if isinstance(op, AddParentJob) else _ADD_SCRIPT[op.route()]
        return self._script_call(script, args, finish=added)

    def _move_to_active(self, queue: QueueRef, op: MoveToActive) -> ScriptCall:
        opts = worker_opts(op.token, op.lock_duration, op.limiter, op.name)
        return self._script_call("moveToActive", [queue.base, op.now, _pack(opts)],
                                 finish=fetched_reply)

    def _promote(self, queue: QueueRef, op: Promote) -> ScriptCall:
        return self._script_call("promote", [queue.base, op.job_id])

    def _change_delay(self, queue: QueueRef, op: ChangeDelay) -> ScriptCall:
        if queue.protocol >= versions.BAND_BUMP:
            args: list[Any] = [op.delay, str(op.now), op.job_id, queue.key(op.job_id)]
        else:  # the caller scored the job (changeDelay-3 ignores the 4th argument)
            args = [op.delay, client_score(op.job_id, op.now + op.delay), op.job_id,
                    queue.key(op.job_id)]
        return self._script_call("changeDelay", args, job_id=op.job_id)

    def _change_priority(self, queue: QueueRef, op: ChangePriority) -> ScriptCall:
        # Before 5.13.2 the script took the job's own key and appended nothing.
        where = queue.base if queue.protocol >= versions.CHANGE_PRIORITY_BASE \
            else queue.key(op.job_id)
        args = [op.priority, where, op.job_id, "1" if op.lifo else "0"]
        return self._script_call("changePriority", args)

    def _move_to_delayed(self, queue: QueueRef, op: MoveToDelayed) -> ScriptCall:
        skip = "1" if op.skip_attempt else "0"
        if queue.protocol >= versions.BAND_BUMP:
            fields = packed_fields(op.fields)
            args: list[Any] = [queue.base, op.now, op.job_id, op.token, op.delay, skip, fields]
            if op.fetch_next:
                args += ["1", _pack(worker_opts(op.token, None, None))]
            else:
                args.append("0")
        else:
            score = client_score(op.job_id, max(0, op.now + op.delay))
            args = [queue.base, op.now, score, op.job_id, op.token, op.delay, skip]
        return self._script_call("moveToDelayed", args, job_id=op.job_id,
                                 finish=fetched_reply)

    def _pause(self, queue: QueueRef, op: Pause | Resume) -> ScriptCall:
        pausing = isinstance(op, Pause)
        return self._script_call("pause", ["paused" if pausing else "resumed"],
                                 swap=not pausing)


def client_score(job_id: str, fire: int) -> str:
    """The delayed score a pre-5.8.6 Node client sent (`scores.client_score`), as text that
    reads back as the same double."""
    score = scores.client_score(job_id, fire)
    return str(score) if abs(score) <= scores.EXACT_LIMIT else repr(float(score))


_CAPABILITIES = Capabilities(cluster=True, ops=frozenset(OP_NAMES) - frozenset(CLIENT_SIDE)
                             - frozenset(PLAIN_READS),
                             conventions=(versions.BAND_BUMP, versions.REPEAT_KEY_HASH,
                                          versions.CHANGE_PRIORITY_BASE))
#: The queue half's ops, each one script call planned by its method.
_HANDLERS: dict[type[Op], Callable[[ScriptsCandidate, QueueRef, Any], ScriptCall]] = {
    Add: ScriptsCandidate._add,
    AddParentJob: ScriptsCandidate._add,
    MoveToActive: ScriptsCandidate._move_to_active,
    Promote: ScriptsCandidate._promote,
    ChangeDelay: ScriptsCandidate._change_delay,
    ChangePriority: ScriptsCandidate._change_priority,
    MoveToDelayed: ScriptsCandidate._move_to_delayed,
    Pause: ScriptsCandidate._pause,
    Resume: ScriptsCandidate._pause,
}
