"""One op's script call for `scripts:DIR`, planned before it is sent, the normalizing of raw
script replies into op results, and the per-call limit that ends a script that never does.

The limit: a script call of ours that has no reply after `limit` seconds is the candidate's own
script still running. That holds because the limit is kept above the server's
`busy-reply-threshold` (`lua-time-limit` before Redis 7): past that threshold a script of
anyone else makes Redis answer our call with `BUSY` at once, so silence is ours alone. The
script is then killed with `SCRIPT KILL` on another connection, and the timed-out connection is
closed, so that its late reply is never read as another command's.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conformance.core.errors import CandidateError
from conformance.core.queues import QueueRef
from reference_impl.ops import Result, fetched

#: Redis's default `busy-reply-threshold` (`lua-time-limit`), in seconds: assumed when the
#: server will not say (CONFIG denied to the Redis user).
DEFAULT_BUSY_THRESHOLD_S = 5.0
#: How far above the server's busy threshold a call's limit must be: the `BUSY` reply comes a
#: little after the threshold, when the running script next lets Redis handle events.
BUSY_MARGIN_S = 0.5
#: What `SCRIPT KILL` answers for a script that has written (and so must run to its end).
UNKILLABLE = "UNKILLABLE"


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


def hash_fields(flat: list[Any]) -> dict[Any, Any]:
    """HGETALL's flat reply (`[field, value, ...]`) as a mapping. Raises ValueError for an odd
    list and TypeError for a field that cannot be a key: the caller shows such a reply as it
    came."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


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
    #: The queue whose KEYS the call takes when it is not the op's: an add of a flow's node
    #: in another queue, or the release check of a parent there.
    queue: QueueRef | None = None


class RunawayScript(CandidateError):
    """A script of the candidate still ran at its call's limit; the suite killed it (or it
    ended just then). The vector is errored: a script that never ends is the candidate's
    defect."""


class UnkillableScript(CandidateError):
    """A script of the candidate still ran at its call's limit and `SCRIPT KILL` answered
    UNKILLABLE (it has written): only `SHUTDOWN NOSAVE` ends it, so the run cannot go on."""


def runaway_text(file_name: str, limit: float, killed: bool = True) -> str:
    """The reason a runaway call's vector is errored (`killed`: by the suite, else it ended
    by itself just as the suite went to kill it)."""
    how = ("the suite killed it with SCRIPT KILL" if killed
           else "it ended just as the suite went to kill it")
    return (f"{file_name} still ran after {limit:g} s; {how} (a script that never ends is a "
            "defect of the candidate)")


def unkillable_text(file_name: str, limit: float) -> str:
    """Why the run stops when a runaway script cannot be killed."""
    return (f"{file_name} still ran after {limit:g} s, and SCRIPT KILL answered {UNKILLABLE} "
            "(the script has written, so Redis lets only SHUTDOWN NOSAVE end it; a script "
            "that never ends is a defect of the candidate)")


def busy_threshold(client: redis.Redis) -> float:
    """The server's busy-reply threshold in seconds, or Redis's default when it will not say."""
    for name in ("busy-reply-threshold", "lua-time-limit"):  # the second before Redis 7
        try:
            value = client.config_get(name).get(name)
        except redis.RedisError:  # CONFIG denied (a shared server), or the server is busy
            return DEFAULT_BUSY_THRESHOLD_S
        if value is not None:
            try:
                return max(0.0, int(value) / 1000)
            except ValueError:
                break
    return DEFAULT_BUSY_THRESHOLD_S


def call_limit(limit: float, threshold: float) -> float:
    """The limit a script call gets: `limit`, raised to just above the busy threshold when it
    is not (below it, someone else's script would look like the candidate's)."""
    return max(limit, threshold + BUSY_MARGIN_S)


def limited_client(client: redis.Redis, limit: float, db: int | None = None) -> redis.Redis:
    """A client of `client`'s server and database (`db` if given) whose every reply must come
    within `limit` seconds, and that never sends a command again after a timeout (redis-py's
    retries would run the runaway script once more)."""
    pool = client.connection_pool
    kwargs = {**pool.connection_kwargs, "socket_timeout": limit,
              "retry": Retry(NoBackoff(), 0), "retry_on_timeout": False}
    if db is not None:
        kwargs["db"] = db
    return redis.Redis(connection_pool=redis.ConnectionPool(
        connection_class=pool.connection_class, **kwargs))


def kill_runaway(client: redis.Redis, limit: float, wait: bool = True) -> bool:
    """SCRIPT KILL on a fresh connection to `client`'s server: True when a script was killed,
    False when none ran any more (it ended by itself just then). The error reply of a script
    that has written (`is_unkillable`) is raised as it came.

    With `wait`, returns once the script has stopped (at most `limit` seconds). The
    connection uses database 0: a SELECT, like any command but a few, is refused with `BUSY`
    while the script runs (SCRIPT KILL acts on the whole server anyway).
    """
    killer = limited_client(client, limit, db=0)
    try:
        try:
            killer.script_kill()
        except redis.ResponseError as exc:
            if str(exc).startswith("NOTBUSY"):
                return False
            raise
        if not wait:
            return True
        # SCRIPT KILL is answered before the script stops (at its next check for events):
        # the next command may still get BUSY. The vector's cleanup must not.
        deadline = time.monotonic() + limit
        while True:
            try:
                killer.ping()
                return True
            except redis.ResponseError as exc:
                if not is_busy_reply(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.002)
    finally:
        killer.close()
        killer.connection_pool.disconnect()


def is_unkillable(exc: redis.ResponseError) -> bool:
    """Whether a SCRIPT KILL's error reply says the script has written."""
    return UNKILLABLE in str(exc)


def is_busy_reply(exc: redis.ResponseError) -> bool:
    """Whether an error reply is Redis's `BUSY`: a script not of this call is running."""
    return str(exc).startswith("BUSY")
