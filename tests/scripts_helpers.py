"""Lua scripts broken on purpose, for the negative controls: one edit in a copy of the scripts,
and a candidate that wraps a scripts directory to misbehave in `apply`."""

from __future__ import annotations

from pathlib import Path

import redis

from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.core.queues import QueueRef
from reference_impl.keys import BULLMQ
from reference_impl.ops import Op, Result

#: The line of includes/getDelayedScore.lua that bumps a score within its millisecond's band.
BAND_BUMP = "return topScore + 1, fireAt"


def replace_once(path: Path, old: str, new: str) -> None:
    """Replace `old` by `new` in the file at `path`, where `old` stands exactly once: anything
    else means the script changed under the test, which must then be updated."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path.name}: {old!r} stands {text.count(old)} times, not once"
    path.write_text(text.replace(old, new), encoding="utf-8")


class WrappedScripts:
    """The scripts of `directory` as a candidate, always under the bullmq profile: a subclass
    overrides `apply` to misbehave on purpose."""

    def __init__(self, directory: Path, label: str) -> None:
        self.inner = ScriptsCandidate(directory, label=label)

    name = property(lambda self: self.inner.name)
    version = property(lambda self: self.inner.version)
    capabilities = property(lambda self: self.inner.capabilities)

    def start(self, redis_url: str, profile: object) -> None:
        self.inner.start(redis_url, BULLMQ)

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        return self.inner.apply(client, queue, op)

    def close(self) -> None:
        self.inner.close()
