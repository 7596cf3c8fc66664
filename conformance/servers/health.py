"""Whether the server can still give a fair verdict.

A vector that failed or errored is first held against the server: a read-only replica, a full
`maxmemory` with the noeviction policy, an ACL user that may not run scripts, a server busy in
someone's script, or one that restarted or dropped our connection mid-vector (a `FLUSHALL` and
`CLIENT KILL`, say) make every candidate look broken. `problem` names such a fault; the runner
then stops the run as an infrastructure error instead of blaming the candidate. The same check
runs once before the first vector, so a server that cannot work is refused up front.

The probe writes one key, a queue of the run's own under the profile's prefix, and deletes it.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import redis
from redis.exceptions import RedisClusterException

from conformance.core import queues
from reference_impl.keys import KeyProfile

#: Reply prefixes that are the server's state, never the candidate's doing.
_SERVER_STATES = {
    "READONLY": "the server is a read-only replica",
    "OOM": "the server is out of memory (maxmemory reached with the noeviction policy)",
    "NOPERM": "the Redis user lacks a permission the suite needs",
    "BUSY": "the server is busy running a script",
    "LOADING": "the server is loading its dataset",
    "MASTERDOWN": "the replica lost its primary",
    "MISCONF": "the server refuses writes after a failed snapshot (MISCONF)",
    "NOAUTH": "the server asks for a password",
    "CLUSTERDOWN": "the cluster is down",
}
_PROBE_SCRIPT = "return 1"
_PROBE_SHA = hashlib.sha1(_PROBE_SCRIPT.encode()).hexdigest()
T = TypeVar("T")


@dataclass(frozen=True)
class Identity:
    """Who we are talking to: the server process (`run_id`) and our connection (`client_id`).

    Not tracked on a cluster (empty run_id, no client id): each node has its own.
    """

    run_id: str
    client_id: int | None


#: redis-py strips the reply's first word for these, and names it by the exception's class.
_BY_CLASS: tuple[tuple[type[Exception], str], ...] = (
    (redis.exceptions.ReadOnlyError, "READONLY"),
    (redis.exceptions.OutOfMemoryError, "OOM"),
    (redis.exceptions.NoPermissionError, "NOPERM"),
    (redis.exceptions.BusyLoadingError, "LOADING"),
    (redis.exceptions.AuthenticationError, "NOAUTH"),
)


def server_state(exc: BaseException) -> str | None:
    """The server-side fault a Redis error reply stands for, or None (e.g. a script's error)."""
    text = str(exc)
    for kind, state in _BY_CLASS:
        if isinstance(exc, kind):
            return f"{_SERVER_STATES[state]}: {_first_line(text)}"
    word = text.split(" ", 1)[0].upper().lstrip("-")
    reason = _SERVER_STATES.get(word)
    if reason is None:
        # A script's error reply quotes the command that failed inside it.
        for state, why in _SERVER_STATES.items():
            if f"-{state} " in text or f"{state} You" in text or f": {state} " in text:
                return f"{why}: {_first_line(text)}"
        return None
    return f"{reason}: {_first_line(text)}"


def probe_key(profile: KeyProfile, run_id: str) -> str:
    """The probe's key: a queue of the run's own (`queues.probe_name`), under the profile's
    prefix, so that a Redis user allowed only the profile's keys (`~bull:*`) may write it."""
    return profile.key(queues.probe_name(run_id), "probe")


def is_busy(fault: str) -> bool:
    """Whether `problem` found the server busy in a script."""
    return fault.startswith(_SERVER_STATES["BUSY"])


#: Whose a busy server's script is, when no call of the candidate's can have left it running:
#: a scripts candidate's call that runs past its limit is killed (`script_call`), and a
#: `BUSY` reply means the script runs on another client's connection.
NOT_OURS = ("that is not the suite's or the candidate's (the candidate's calls end at their "
            "limit, and Redis answers BUSY only while another client's script runs); the run "
            "cannot go on until it ends")
#: Whose it is after an adapter sent no reply while the server was busy: its own script, or
#: someone else's that held up the adapter's commands. The suite cannot tell.
EITHER = ("that is either the candidate's own (its adapter sent no reply, as it would while its "
          "script runs; a script that never ends is a defect of the candidate) or someone "
          "else's that held up the adapter's commands: the suite cannot tell which, and does "
          "not kill a script on a server it did not start")


def attributed(fault: str, whose: str) -> str:
    """A busy fault (`is_busy`), saying whose script it is (`NOT_OURS`, `EITHER`)."""
    reason = _SERVER_STATES["BUSY"]
    detail = fault[len(reason):].removeprefix(": ")
    return f"{reason} {whose} ({detail})"


def identity(client: redis.Redis, cluster: bool) -> Identity:
    """The server's run_id and, off a cluster, our connection's id; what the Redis user may
    not ask (INFO and CLIENT are often denied on shared servers) is left unknown."""
    if cluster:
        return Identity("", None)  # not tracked: each node has its own run_id and client ids
    info: dict[str, Any] = _unless_denied(lambda: client.info("server"), {})
    connection = _unless_denied(client.client_id, None)
    return Identity(str(info.get("run_id", "")), None if connection is None else int(connection))


def problem(client: redis.Redis, probe_key: str, since: Identity | None = None,
            cluster: bool = False) -> str | None:
    """Why the server cannot give a fair verdict now, or None when it can.

    `since` is the identity of an earlier moment (the run's start, a vector's seed): a new
    run_id means Redis restarted, a new client id (the old one gone) that our connection was
    dropped and made again. A lost connection is reported too. The probe needs what a run
    needs: a write, EVAL and EVALSHA.
    """
    try:
        now = identity(client, cluster)
        if since is not None and since.run_id and now.run_id and now.run_id != since.run_id:
            return "Redis restarted during the run (its run_id changed); keys were lost"
        old = since.client_id if since is not None else None
        if (old is not None and now.client_id is not None and now.client_id != old
                and not _unless_denied(lambda: bool(client.client_list(client_id=[old])),
                                       True)):
            return ("the connection to Redis was dropped and made again during a vector (clients "
                    "killed, e.g. after a FLUSHALL); its keys cannot be trusted")
        client.set(probe_key, "1", px=60_000)
        client.eval(_PROBE_SCRIPT, 1, probe_key)  # which also caches it for EVALSHA
        # NOSCRIPT is a right answer to EVALSHA when another client flushed the script cache
        # since the EVAL (a shared server, a fault test): the run loads its scripts again.
        with contextlib.suppress(redis.exceptions.NoScriptError):
            client.evalsha(_PROBE_SHA, 1, probe_key)
        client.delete(probe_key)
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        return connection_lost(exc)
    except redis.ResponseError as exc:
        return server_state(exc) or f"Redis refused the suite's probe: {_first_line(str(exc))}"
    except (redis.RedisError, RedisClusterException) as exc:
        return f"Redis is not usable: {_first_line(str(exc))}"
    return None


def connection_lost(exc: BaseException) -> str:
    """The one line of a lost connection or a reply that never came (redis-py's
    ConnectionError or TimeoutError)."""
    if isinstance(exc, redis.TimeoutError):
        return (f"Redis did not answer in time ({_first_line(str(exc))}): a stalled link, or a "
                "paused or overloaded server")
    return f"Redis connection lost: {_first_line(str(exc))}"


def _unless_denied(ask: Callable[[], T], otherwise: T) -> T:
    """`ask()`, or `otherwise` when the Redis user may not run that command."""
    try:
        return ask()
    except redis.exceptions.NoPermissionError:
        return otherwise


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "(no message)"
