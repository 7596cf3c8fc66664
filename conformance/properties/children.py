"""The `properties` items, checked in child processes while the vectors run in this one.

Both are Python-bound: in one process they take turns, and on two cores they can overlap. The
child is forked once the items are known, and checks each properties item's examples exactly as
the item would (same candidate, seed, examples and protocol); the item then takes the child's
`PropertyResult`, or re-raises the exception `check_candidate` raised there, so its verdict,
message and exit code are the same as in-process.

Only where the child can disturb nothing: a scripts candidate (no adapter process, whose pipe
would be shared), on a single server the suite started, outside xdist, on Linux (forked
children), and not under `BULLMQ_CONFORMANCE_SERIAL=1`. There is one child per CPU at most (the
items are shared out in turn; a default run has one). Child i works in database i + 1 and names
its queues `bmqc-<run id>-p<i>-NNNNNN` (`QueueNames.part`), which the batches' read-and-delete
pattern (`bmqc-<run id>-` and six digits) never matches. If a child dies or sends nothing, its
items run in-process as before.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, cast

from conformance.core import signals
from conformance.core.errors import HarnessError
from conformance.run import batch
from conformance.run.session import Run
from conformance.servers import url_with_db

if TYPE_CHECKING:
    from conformance.properties.check import PropertyResult

#: How often a waiting item checks that the child is still alive.
_POLL_S = 0.05
#: prctl(2) option: the signal the kernel sends this process when its parent dies.
_PR_SET_PDEATHSIG = 1


@dataclass
class _Child:
    process: Any  # multiprocessing's fork-context Process
    connection: Connection
    received: dict[str, tuple[str, Any]] = field(default_factory=dict)


@dataclass
class PropertiesChildren:
    """Children checking properties items; `take` each item's outcome, then `stop`."""

    children: list[_Child]
    #: Which child checks each item.
    by_item: dict[str, _Child]

    def take(self, name: str) -> PropertyResult | None:
        """The PropertyResult of item `name` (waiting for it), or None when the child sent
        none (the item then runs in-process). Re-raises what `check_candidate` raised."""
        child = self.by_item.get(name)
        if child is None:
            return None
        while name not in child.received:
            if not child.connection.poll(_POLL_S):
                if not child.process.is_alive() and not child.connection.poll():
                    return None
                continue
            try:
                item, kind, payload = child.connection.recv()
            except (EOFError, OSError):
                return None
            child.received[item] = (kind, payload)
        kind, payload = child.received.pop(name)
        if kind == "raised":
            raise payload
        return cast("PropertyResult", payload)

    def stop(self) -> None:
        """End the children (they may be mid-example: the server is ours and about to stop)."""
        for child in self.children:
            if child.process.is_alive():
                child.process.kill()
        for child in self.children:
            child.process.join()
            child.connection.close()


def usable(run: Run) -> bool:
    """Whether `run`'s properties items may run in a child (see the module doc)."""
    # Linux only: macOS offers fork but warns that system libraries may crash in the child.
    return batch.pipelined(run.candidate, run.server) and sys.platform.startswith("linux")


def start(run: Run, shards: Sequence[tuple[str, int, int]],
          into: PropertiesChildren | None = None) -> PropertiesChildren | None:
    """Fork the children for `shards` (name, examples, seed each): one per CPU at most, each
    checking its share in order. None when `run` does not allow them.

    `into`: where each child is put as soon as it is forked (returned). A caller that must
    stop the children whatever happens holds it before the call: a signal that lands between
    this function's return and the caller's assignment would otherwise leave them unstopped."""
    if not shards or not usable(run):
        return None
    started = into if into is not None else PropertiesChildren([], {})
    count = max(1, min(len(shards), os.cpu_count() or 1))
    for stream in (sys.stdout, sys.stderr):  # else a child would write their buffers again
        stream.flush()
    # A signal that arrived between a fork and the append below would raise in this loop and
    # leave a child no one stops. So the caught signals are only noted while the children are
    # forked, and raised again once every child is on the list; the children started so far
    # are then stopped on the way out.
    try:
        with signals.deferred():
            for index in range(count):
                share = list(shards[index::count])
                receiving, sending = multiprocessing.Pipe(duplex=False)
                process = multiprocessing.get_context("fork").Process(
                    target=_child, args=(sending, run, share, index, os.getpid()),
                    daemon=True)
                process.start()
                sending.close()
                started.children.append(_Child(process, receiving))
                started.by_item |= {name: started.children[-1] for name, _, _ in share}
    except BaseException:
        started.stop()
        raise
    return started


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when `parent` (the process that forked it) ends.

    `stop` kills the children, but the parent may not get there: a signal delivered again
    while it winds down (conformance.core.signals) can interrupt the stop itself, and a
    second signal ends the parent on the spot. The kernel's signal needs nothing of the parent.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return  # not Linux after all: `stop` remains
    if os.getppid() != parent:  # it died before the prctl: nobody would signal us
        os._exit(1)


def _child(sending: Connection, run: Run, shards: list[tuple[str, int, int]],
           index: int, parent: int) -> None:
    die_with_parent(parent)
    from conformance.properties.check import check_candidate

    # A signal to the terminal's process group ends the child at once; the parent stops it
    # anyway, and the server it writes to is the suite's own.
    for signum in signals.CAUGHT:
        signal.signal(signum, signal.SIG_DFL)
    assert run.server is not None  # usable() checked that the suite owns one
    names = run.names.part(f"p{index}")
    # A database of its own: the vectors' snapshots and the child's each find the keys a
    # candidate wrote outside its queues, which must not be each other's.
    url = url_with_db(run.server.url, 1 + index % 15)
    for name, examples, seed in shards:
        try:
            message: tuple[str, str, Any] = (name, "result", check_candidate(
                run.candidate, url, run.profile, examples, seed,
                start_candidate=False, names=names, cluster=False,
                protocol=run.properties_protocol, private=True))
        except BaseException as exc:  # sent to the item, which raises it as in-process
            message = (name, "raised", exc)
        try:
            sending.send(message)
        except Exception as exc:  # an exception that does not pickle
            sending.send((name, "raised", HarnessError(f"properties child: {exc}")))
        if message[1] == "raised":
            break
    sending.close()
