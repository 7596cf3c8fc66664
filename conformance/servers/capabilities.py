"""What a vector may need from the environment (`needs:`), and Redis Cluster key-slot facts.

A vector lists capabilities in `needs`; where one is missing the vector is *skipped* with the
reason, never failed. The vocabulary:

- ``hash-tag``: the key profile puts every key of a queue in one hash slot (a `{...}` tag
  around the queue, as EchoMQ does, or a hash-tagged prefix such as ``{bull}``);
- ``redis>=X[.Y[.Z]]``: the server speaks at least that Redis version (Valkey counts by the
  Redis version it reports compatibility with).

Slots are computed with redis-py's own CRC16 key-slot function, which hashes the first
non-empty `{...}` of a key as Redis Cluster does.
"""

from __future__ import annotations

import re

from redis.crc import key_slot

from conformance.servers import ServerInfo
from reference_impl.keys import QUEUE_SUFFIXES, KeyProfile

NEED_PATTERN = re.compile(r"^(hash-tag|redis>=\d+(\.\d+){0,2})$")
_SAMPLE_QUEUE = "q"


def slot_of(key: str) -> int:
    """The Redis Cluster hash slot of a key."""
    return int(key_slot(key.encode()))


def profile_slots(profile: KeyProfile, queue: str = _SAMPLE_QUEUE) -> dict[str, int]:
    """The slot of every queue-level key, and of a job hash, of `queue` under `profile`."""
    keys = [profile.key(queue, suffix) for suffix in QUEUE_SUFFIXES]
    keys.append(profile.job_key(queue, "1"))
    return {key: slot_of(key) for key in keys}


def not_cluster_safe(profile: KeyProfile) -> str | None:
    """Why `profile` cannot run on Redis Cluster, in words; None when all its keys share a slot."""
    slots = profile_slots(profile)
    if len(set(slots.values())) == 1:
        return None
    wait, meta = profile.key(_SAMPLE_QUEUE, "wait"), profile.key(_SAMPLE_QUEUE, "meta")
    return (
        f"profile {profile.name} is not cluster-safe: its keys carry no hash tag, so one queue's "
        f"keys fall in {len(set(slots.values()))} different hash slots (for queue "
        f"{_SAMPLE_QUEUE!r}: {wait} -> slot {slots[wait]}, {meta} -> slot {slots[meta]}), and "
        f"Redis Cluster rejects every BullMQ script that touches two of them with CROSSSLOT. "
        f"That is expected of untagged BullMQ keys, not a defect of the candidate. On a cluster "
        f"use --profile echomq (emq:{{<queue>}}:...) or a hash-tagged prefix (--prefix '{{bull}}')"
    )


def shared_slot(profile: KeyProfile, cluster: bool) -> bool:
    """Whether two queues' keys may meet in one script (a flow across queues): anywhere but
    on a cluster, where only a hash-tagged prefix puts every queue in one slot."""
    return not cluster or (not profile.hash_tag and "{" in profile.prefix)


def unmet(needs: tuple[str, ...], profile: KeyProfile, server: ServerInfo | None) -> str | None:
    """The first need this profile and server lack, as a skip reason; None when all are met."""
    for need in needs:
        if need == "hash-tag":
            if not_cluster_safe(profile) is not None:
                return (f"needs hash-tag: profile {profile.name} puts one queue's keys in "
                        f"several hash slots")
        elif need == "shared-slot":
            if not shared_slot(profile, server is not None and server.cluster):
                return (f"needs shared-slot: on a cluster, a flow across two queues needs both "
                        f"in one hash slot (a hash-tagged prefix, such as '{{bull}}'); profile "
                        f"{profile.name} puts each queue in its own")
        elif need.startswith("redis>="):
            wanted = need.removeprefix("redis>=")
            have = server.redis_version if server is not None else ""
            if not have or _version(have) < _version(wanted):
                engine = f"{server.engine} {server.version}" if server is not None else "unknown"
                return f"needs {need}: the server is {engine} (Redis {have or 'unknown'})"
        else:
            return f"needs {need!r}, which this suite version does not know"
    return None


def _version(text: str) -> tuple[int, ...]:
    parts = [int(p) if p.isdigit() else 0 for p in text.split(".")[:3]]
    return tuple(parts + [0] * (3 - len(parts)))
