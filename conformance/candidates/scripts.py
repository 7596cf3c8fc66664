"""`scripts:DIR`: drive a directory of BullMQ-convention Lua scripts through redis-py.

Scripts are found by name and key count (`<name>-<numkeys>.lua`) and loaded with
`register_script`, which caches the SHA and reloads on NOSCRIPT. Includes are resolved when
present; inlined files (as the PyPI package ships them) load as they are.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import redis
from redis.commands.core import Script

from conformance.candidates.base import Capabilities, QueueRef
from conformance.candidates.lua_includes import resolve
from conformance.errors import CandidateError
from reference_impl.keys import KeyProfile
from reference_impl.ops import (
    OP_NAMES,
    Add,
    ChangeDelay,
    ChangePriority,
    MoveToActive,
    MoveToDelayed,
    Op,
    Pause,
    Promote,
    Result,
    Resume,
    fetched,
)


@dataclass(frozen=True)
class Layout:
    """A script's file name and the queue key suffixes it takes as KEYS, in order."""

    name: str
    keys: tuple[str, ...]

    @property
    def file_name(self) -> str:
        """`<name>-<numkeys>.lua`."""
        return f"{self.name}-{len(self.keys)}.lua"


#: BullMQ 6.x KEYS layouts (PROTOCOL.md §7.2, §7.3).
LAYOUTS: dict[str, Layout] = {
    layout.name: layout
    for layout in (
        Layout("addStandardJob", ("wait", "paused", "meta", "id", "completed", "delayed",
                                  "active", "events", "marker")),
        Layout("addDelayedJob", ("marker", "meta", "id", "delayed", "completed", "events")),
        Layout("addPrioritizedJob", ("marker", "meta", "id", "prioritized", "delayed",
                                     "completed", "active", "events", "pc")),
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
    )
}
#: Other key layouts a release may ship under the same name (resolved by name and key count).
ALTERNATE_LAYOUTS: dict[str, tuple[Layout, ...]] = {
    # the v6.2.0 source tree: `paused` as KEYS[11], pc moved to KEYS[12]
    "moveToDelayed": (Layout("moveToDelayed", ("marker", "active", "prioritized", "delayed",
                                               "{job}", "events", "meta", "stalled", "wait",
                                               "limiter", "paused", "pc")),),
}
_ADD_SCRIPT = {"standard": "addStandardJob", "delayed": "addDelayedJob",
               "prioritized": "addPrioritizedJob"}


def _pack(value: Any) -> bytes:
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed


class ScriptsCandidate:
    """A directory of BullMQ-convention scripts (ours in `lua/`, or an official release's)."""

    def __init__(self, directory: Path, label: str | None = None) -> None:
        self.directory = directory
        self._label = label or f"scripts:{directory}"
        self._texts: dict[str, str] = {}
        self._layouts: dict[str, Layout] = {}
        self._scripts: dict[tuple[int, str], Script] = {}

    @property
    def name(self) -> str:
        """Label used in reports."""
        return self._label

    @property
    def version(self) -> str:
        """The directory, how many of the needed scripts it holds, and which variants."""
        found = [lay for lay in map(self._find, LAYOUTS) if lay is not None]
        variants = [lay.file_name for lay in found if lay != LAYOUTS[lay.name]]
        extra = f", using {', '.join(variants)}" if variants else ""
        return f"{self.directory} ({len(found)}/{len(LAYOUTS)} scripts{extra})"

    @property
    def capabilities(self) -> Capabilities:
        """Every op (a missing script errors the vectors that need it); runs on a cluster,
        since its scripts go through the suite's client."""
        return Capabilities(cluster=True, ops=frozenset(OP_NAMES))

    def _find(self, name: str) -> Layout | None:
        """The layout whose file exists: the 6.x registry layout first, then the variants."""
        for layout in (LAYOUTS[name], *ALTERNATE_LAYOUTS.get(name, ())):
            if (self.directory / layout.file_name).is_file():
                return layout
        return None

    def start(self, redis_url: str, profile: KeyProfile) -> None:
        """Nothing to start: scripts run through the client passed to apply()."""

    def close(self) -> None:
        """Nothing to stop."""

    def _layout(self, name: str) -> Layout:
        if name not in self._layouts:
            layout = self._find(name)
            if layout is None:
                wanted = LAYOUTS[name]
                others = sorted(p.name for p in self.directory.glob(f"{name}-*.lua"))
                hint = f"; found {', '.join(others)}, but 6.x takes {len(wanted.keys)} KEYS" \
                    if others else ""
                raise CandidateError(f"missing script {wanted.file_name} in {self.directory}"
                                     f"{hint}")
            self._texts[name] = resolve(self.directory / layout.file_name)
            self._layouts[name] = layout
        return self._layouts[name]

    def _call(self, client: redis.Redis, queue: QueueRef, name: str, args: list[Any],
              job_id: str = "", swap: bool = False) -> Any:
        layout = self._layout(name)
        cache_key = (id(client), name)
        script = self._scripts.get(cache_key)
        if script is None:
            script = client.register_script(self._texts[name])
            self._scripts[cache_key] = script
        suffixes = list(layout.keys)
        if swap:
            suffixes[0], suffixes[1] = suffixes[1], suffixes[0]
        keys = [queue.key(job_id if suffix == "{job}" else suffix) for suffix in suffixes]
        try:
            try:
                return script(keys=keys, args=args, client=client)
            except redis.exceptions.NoScriptError:
                # Flushed again between redis-py's reload and its retry (SCRIPT FLUSH is not
                # the candidate's doing): send the body itself.
                return client.eval(self._texts[name], len(keys), *keys, *args)
        except redis.ResponseError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise CandidateError(f"{layout.file_name} raised: {first}") from None

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        """Run the script(s) for one op and normalize the reply."""
        handlers: dict[type[Op], Callable[[redis.Redis, QueueRef, Any], Result]] = {
            Add: self._add,
            MoveToActive: self._move_to_active,
            Promote: self._promote,
            ChangeDelay: self._change_delay,
            ChangePriority: self._change_priority,
            MoveToDelayed: self._move_to_delayed,
            Pause: self._pause,
            Resume: self._pause,
        }
        return handlers[type(op)](client, queue, op)

    def _add(self, client: redis.Redis, queue: QueueRef, op: Add) -> Result:
        packed = [queue.base, op.job_id or "", op.name, op.timestamp, None, None, None, None,
                  None]
        args = [_pack(packed), json.dumps(op.data, separators=(",", ":")), _pack(dict(op.opts))]
        reply = _as_result(self._call(client, queue, _ADD_SCRIPT[op.route()], args))
        # Auto ids come back as Lua numbers; error codes are negative.
        return reply if isinstance(reply, int) and reply < 0 else str(reply)

    def _move_to_active(self, client: redis.Redis, queue: QueueRef, op: MoveToActive) -> Result:
        opts = {"token": op.token, "lockDuration": op.lock_duration}
        reply = self._call(client, queue, "moveToActive", [queue.base, op.now, _pack(opts)])
        if not isinstance(reply, list) or len(reply) != 4:
            raise CandidateError(f"moveToActive returned {reply!r}, expected a 4-element array")
        _, job, ttl, next_ms = reply
        job_id = None if job in (0, "0", None) else str(job)
        return fetched(job_id, int(ttl), int(next_ms))

    def _promote(self, client: redis.Redis, queue: QueueRef, op: Promote) -> Result:
        return _as_result(self._call(client, queue, "promote", [queue.base, op.job_id]))

    def _change_delay(self, client: redis.Redis, queue: QueueRef, op: ChangeDelay) -> Result:
        args = [op.delay, str(op.now), op.job_id, queue.key(op.job_id)]
        return _as_result(self._call(client, queue, "changeDelay", args))

    def _change_priority(self, client: redis.Redis, queue: QueueRef, op: ChangePriority) -> Result:
        args = [op.priority, queue.base, op.job_id, "1" if op.lifo else "0"]
        return _as_result(self._call(client, queue, "changePriority", args))


    def _move_to_delayed(self, client: redis.Redis, queue: QueueRef, op: MoveToDelayed) -> Result:
        args = [queue.base, op.now, op.job_id, op.token, op.delay,
                "1" if op.skip_attempt else "0", "", "0"]
        return _as_result(self._call(client, queue, "moveToDelayed", args, job_id=op.job_id))

    def _pause(self, client: redis.Redis, queue: QueueRef, op: Pause | Resume) -> Result:
        pausing = isinstance(op, Pause)
        return _as_result(self._call(client, queue, "pause", ["paused" if pausing else "resumed"],
                                     swap=not pausing))


def _as_result(reply: Any) -> Result:
    if isinstance(reply, bool) or not isinstance(reply, int | str | bytes):
        raise CandidateError(f"unexpected script reply {reply!r}")
    if isinstance(reply, bytes):
        return reply.decode()
    return reply
