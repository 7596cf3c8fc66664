"""Queue identity: the queue a vector runs in, and the one home of the run prefix.

Every queue the suite writes is named `bmqc-<run id>-NNNNNN` (six digits, counting up), so a
run's keys are found, swept and told from everyone else's by name alone: `bmqc-<run id>-` is
the run prefix, and no queue name is a substring of another. Other names of the run hang off
the same prefix: the health probe (`bmqc-<run id>-probe`) and the queues of the properties
children (`bmqc-<run id>-pi-N`), which the six-digit pattern never matches. Checks outside a
run (the adapter check, concurrency, crash) name a queue for one purpose with `one_off`.
"""

from __future__ import annotations

import itertools
import re
import secrets
from dataclasses import dataclass
from functools import cached_property

from reference_impl.keys import KeyProfile
from reference_impl.versions import Version

#: The brand every queue name of ours starts with.
_BRAND = "bmqc-"
#: Digits of a queue's number within its run.
QUEUE_DIGITS = 6
#: A run prefix anywhere in a text (reports compare messages of two runs with it masked).
RUN_PREFIX_RE = re.compile(re.escape(_BRAND) + r"[0-9a-f]+(?:-w\d+)?-")
#: What `RUN_PREFIX_RE` is replaced with.
RUN_PREFIX_MASK = f"{_BRAND}<run>-"


def run_prefix(run_id: str) -> str:
    """What every queue name of the run `run_id` starts with."""
    return f"{_BRAND}{run_id}-"


def new_run_id() -> str:
    """A fresh run id: 8 hex digits."""
    return secrets.token_hex(4)


def one_off(purpose: str) -> str:
    """A queue name for one check outside a run, unique on a shared server:
    `bmqc-<purpose>-<8 hex>`."""
    return f"{_BRAND}{purpose}-{new_run_id()}"


def probe_name(run_id: str) -> str:
    """The health probe's queue name: the run's own, never a vector's."""
    return f"{run_prefix(run_id)}probe"


@dataclass(frozen=True)
class QueueRef:
    """The queue a vector runs in: a run-unique name under the chosen key profile, and the
    protocol version the vector is judged at (a candidate that speaks several, like a
    scripts directory, calls its scripts in that version's convention)."""

    profile: KeyProfile
    name: str
    protocol: Version

    @cached_property
    def base(self) -> str:
        """`BASE`, e.g. `bull:<name>:`."""
        return self.profile.base(self.name)

    def key(self, suffix: str) -> str:
        """The full Redis key of a suffix (or job id)."""
        return self.base + suffix


class QueueNames:
    """Run-unique, fixed-width queue names, so no name is a substring of another."""

    def __init__(self, run_id: str | None = None, root: str | None = None) -> None:
        self.run_id = run_id or new_run_id()
        #: What every queue name of these names starts with.
        self.prefix = run_prefix(self.run_id)
        #: What every queue name of the whole run starts with (its properties children and
        #: xdist workers name their queues under a longer prefix of their own): a key without
        #: it is not the run's.
        self.root = root or self.prefix
        self._counter = itertools.count(1)

    def next(self) -> str:
        """A fresh queue name."""
        return f"{self.prefix}{next(self._counter):0{QUEUE_DIGITS}d}"

    def part(self, suffix: str) -> QueueNames:
        """The names of one part of this run (an xdist worker, a properties child): their own
        prefix, under this run's root."""
        return QueueNames(f"{self.run_id}-{suffix}", root=self.root)

    @property
    def glob(self) -> str:
        """A SCAN pattern for every key holding a queue name of these names (not the probe's)."""
        return f"*{glob_escape(self.prefix)}{'[0-9]' * QUEUE_DIGITS}*"

    @property
    def any_glob(self) -> str:
        """A SCAN pattern for every key holding the prefix (the probe's too): the final sweep."""
        return f"*{glob_escape(self.prefix)}*"

    @property
    def pattern(self) -> re.Pattern[str]:
        """The queue names of these names, as they appear inside keys."""
        return re.compile(re.escape(self.prefix) + f"[0-9]{{{QUEUE_DIGITS}}}")


def glob_escape(text: str) -> str:
    """`text` as a literal inside a Redis glob pattern."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)
