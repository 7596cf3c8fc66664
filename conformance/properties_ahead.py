"""The `properties` items, run ahead in a child process while the vectors run in this one.

Both are Python-bound: in one process they take turns, and on two cores they can overlap. The
child is forked once the items are known, and checks each properties item's examples exactly
as the item would (same candidate, seed, examples and protocol); the item then takes the
child's `PropertyResult`, or re-raises the exception `check_candidate` raised there, so its
verdict, message and exit code are the same as in-process.

Only where the child can disturb nothing: a scripts candidate (no adapter process, whose pipe
would be shared), on a single server the suite started, outside xdist, where `fork` exists,
and not under `BULLMQ_CONFORMANCE_SERIAL=1`. The child names its queues `bmqc-<run id>-p-N`,
which the batches' read-and-delete pattern (`bmqc-<run id>-` and six digits) never matches.
If the child dies or sends nothing, the item runs in-process as before.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from conformance import batch, signals
from conformance.errors import HarnessError
from conformance.runner import QueueNames
from conformance.session import Run
from reference_impl import versions

#: How often a waiting item checks that the child is still alive.
_POLL_S = 0.05


@dataclass
class Ahead:
    """A child checking properties items; `take` each item's outcome, then `stop`."""

    process: Any  # multiprocessing's fork-context Process
    connection: Connection
    received: dict[str, tuple[str, Any]] = field(default_factory=dict)

    def take(self, name: str) -> Any:
        """The PropertyResult of item `name` (waiting for it), or None when the child sent
        none (the item then runs in-process). Re-raises what `check_candidate` raised."""
        while name not in self.received:
            if not self.connection.poll(_POLL_S):
                if not self.process.is_alive() and not self.connection.poll():
                    return None
                continue
            try:
                item, kind, payload = self.connection.recv()
            except (EOFError, OSError):
                return None
            self.received[item] = (kind, payload)
        kind, payload = self.received.pop(name)
        if kind == "raised":
            raise payload
        return payload

    def stop(self) -> None:
        """End the child (it may be mid-example: the server is ours and about to stop)."""
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.connection.close()


def usable(run: Run) -> bool:
    """Whether `run`'s properties items may run in a child (see the module doc)."""
    return (batch.pipelined(run.candidate, run.server)
            and "fork" in multiprocessing.get_all_start_methods())


def start(run: Run, shards: Sequence[tuple[str, int, int]]) -> Ahead | None:
    """Fork the child for `shards` (name, examples, seed each), or None when `run` does not
    allow one."""
    if not shards or not usable(run):
        return None
    receiving, sending = multiprocessing.Pipe(duplex=False)
    for stream in (sys.stdout, sys.stderr):  # else the child would write their buffers again
        stream.flush()
    process = multiprocessing.get_context("fork").Process(
        target=_child, args=(sending, run, list(shards)), daemon=True)
    process.start()
    sending.close()
    return Ahead(process, receiving)


def _child(sending: Connection, run: Run, shards: list[tuple[str, int, int]]) -> None:
    from conformance.properties import check_candidate

    # A signal to the terminal's process group ends the child at once; the parent stops it
    # anyway, and the server it writes to is the suite's own.
    for signum in signals.CAUGHT:
        signal.signal(signum, signal.SIG_DFL)
    assert run.server is not None  # usable() checked that the suite owns one
    names = QueueNames(f"{run.names.run_id}-p")
    for name, examples, seed in shards:
        try:
            message: tuple[str, str, Any] = (name, "result", check_candidate(
                run.candidate, run.server.url, run.profile, examples, seed,
                start_candidate=False, names=names, cluster=False,
                protocol=run.protocol or versions.CURRENT, owned=True))
        except BaseException as exc:  # sent to the item, which raises it as in-process
            message = (name, "raised", exc)
        try:
            sending.send(message)
        except Exception as exc:  # an exception that does not pickle
            sending.send((name, "raised", HarnessError(f"properties child: {exc}")))
        if message[1] == "raised":
            break
    sending.close()
