"""One op's script call for `scripts:DIR`, planned before it is sent, and the normalizing of
raw script replies into op results."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from reference_impl.ops import Result, fetched


def decoded(reply: Any) -> Any:
    """A Redis reply with bytes decoded as UTF-8 (undecodable bytes kept), in arrays too."""
    if isinstance(reply, bytes):
        try:
            return reply.decode()
        except UnicodeDecodeError:
            return reply
    if isinstance(reply, list):
        return [decoded(item) for item in reply]
    return reply


def as_result(reply: Any) -> Result:
    """A reply as it came (decoded): one that is not the op's result (nil, an array) is a
    return difference for the runner to show beside the state diff, not a reason to skip
    judging."""
    return cast(Result, decoded(reply))


def fetched_or_raw(reply: Any) -> Result:
    """moveToActive's `[hash, id or 0, ttl, next]` normalized, or any other reply as it is."""
    if isinstance(reply, list) and len(reply) == 4:
        _, job, ttl, next_ms = reply
        try:
            return fetched(None if job in (0, "0", None) else str(job), int(ttl), int(next_ms))
        except (TypeError, ValueError):
            pass  # e.g. a non-numeric ttl: shown as it came
    return cast(Result, reply)


def added(reply: Any) -> Result:
    """An add script's reply: auto ids come back as Lua numbers; error codes are negative."""
    result = as_result(reply)
    return str(result) if isinstance(result, int) and result >= 0 else result


def fetched_reply(reply: Any) -> Result:
    """A fetching script's reply (`fetched_or_raw`)."""
    return fetched_or_raw(as_result(reply))


def script_sha(text: str) -> str:
    """The SHA1 Redis names a script by (EVALSHA, SCRIPT LOAD)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ScriptCall:
    """One op's script call, before it is sent: the script (`text`, its `sha`), ARGV, what
    fills its KEYS layout (`ScriptsCandidate.script_call_keys`), and `finish`, which turns the
    raw reply into the op's result."""

    name: str
    file_name: str
    text: str
    sha: str
    args: tuple[Any, ...]
    job_id: str = ""
    swap: bool = False
    fill: Mapping[str, str] = field(default_factory=dict)
    finish: Callable[[Any], Result] = as_result
