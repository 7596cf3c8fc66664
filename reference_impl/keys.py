"""Key naming: `<prefix>:<queue>:<suffix>`, with an optional hash tag around the queue name."""

from __future__ import annotations

from dataclasses import dataclass

#: Queue-level key suffixes that the scripts in this protocol subset touch (RESEARCH.md §2.1).
QUEUE_SUFFIXES: tuple[str, ...] = (
    "wait",
    "active",
    "paused",
    "prioritized",
    "pc",
    "delayed",
    "marker",
    "meta",
    "id",
    "events",
    "stalled",
    "limiter",
    "completed",
    "failed",
    "waiting-children",
    "repeat",
)


#: A vector's queue in values: its qualified name, `<prefix>:<queue>` (BASE without its last
#: colon), which the runner puts in before a vector runs. Parent keys are `<q>:<id>`.
QUEUE_REF = "<q>"
#: A vector's second queue (flows across queues), written as `QUEUE_REF` is; its keys are
#: named `<q2>:<suffix>` in the vector's `given` and `expect.keys`.
QUEUE2_REF = "<q2>"
#: Every queue a vector may name, the vector's own first.
QUEUE_REFS = (QUEUE_REF, QUEUE2_REF)


@dataclass(frozen=True)
class KeyProfile:
    """How a port spells its keys: a prefix, and whether the queue name is hash-tagged."""

    name: str
    prefix: str
    hash_tag: bool = False

    def queue_part(self, queue: str) -> str:
        """The queue segment as it appears in keys (`q` or `{q}`)."""
        if ":" in queue:
            raise ValueError(f"queue name {queue!r} contains ':', which BullMQ forbids")
        return "{" + queue + "}" if self.hash_tag else queue

    def base(self, queue: str) -> str:
        """`BASE`: the `<prefix>:<queue>:` string scripts prepend to job ids and suffixes."""
        return f"{self.prefix}:{self.queue_part(queue)}:"

    def key(self, queue: str, suffix: str) -> str:
        """The full key for a queue-level suffix or a job id."""
        return self.base(queue) + suffix

    def job_key(self, queue: str, job_id: str) -> str:
        """The job hash key `BASE .. jobId`."""
        return self.base(queue) + job_id

    def queue_of(self, qualified: str) -> str:
        """The queue name of a qualified name (`<prefix>:<queue>`, BASE without its last
        colon): what a flow node in another queue names, back to the name a client takes."""
        head = f"{self.prefix}:"
        if not qualified.startswith(head):
            raise ValueError(f"{qualified!r} is not a queue of prefix {self.prefix!r}")
        part = qualified[len(head):]
        if self.hash_tag:
            if not (part.startswith("{") and part.endswith("}")):
                raise ValueError(f"{qualified!r} lacks the hash tag of profile {self.name}")
            part = part[1:-1]
        return part


BULLMQ = KeyProfile("bullmq", "bull")
ECHOMQ = KeyProfile("echomq", "emq", hash_tag=True)

PROFILES: dict[str, KeyProfile] = {p.name: p for p in (BULLMQ, ECHOMQ)}


def custom_profile(prefix: str, hash_tag: bool = False) -> KeyProfile:
    """A profile with a user-chosen prefix (BullMQ's `prefix` option)."""
    if not prefix or ":" in prefix:
        raise ValueError(f"prefix {prefix!r} must be non-empty and contain no ':'")
    return KeyProfile(f"custom:{prefix}", prefix, hash_tag)
