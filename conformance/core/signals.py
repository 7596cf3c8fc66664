"""SIGINT, SIGTERM and SIGHUP during `bullmq-conformance run`: stop within a second, clean up,
and exit 128 + the signal's number.

Python turns only SIGINT into KeyboardInterrupt; SIGTERM (what `timeout` and CI cancellation
send) and SIGHUP would end the process on the spot, skipping every `finally`: run keys stay on
a `url:` server and a spawned redis-server or adapter outlives the suite. Here all three raise
KeyboardInterrupt, which pytest answers by finishing the session (the plugin's cleanup runs).
xdist workers get the signal too, so that each cleans up its own candidate at once instead of
finishing its vector first. A second signal while cleaning up ends the process at once.

The command line ends a stopped run with `os._exit(128 + n)`, after flushing: CPython 3.11 may
otherwise turn the exit status into "killed by SIGINT" when a KeyboardInterrupt passed through
code it ran from a string, even one that was caught.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import NoReturn

CAUGHT = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_ACTIVE: SignalGuard | None = None
#: How long an interrupt may go unseen before the signal is delivered again.
_REDELIVER_S = 0.25


def active() -> SignalGuard:
    """The guard installed now, or a fresh one installed by nobody (a run started by code
    rather than the command line)."""
    return _ACTIVE or SignalGuard()


class SignalGuard:
    """The handlers of the caught signals; `worker_pids` are processes to pass a signal on to
    (a run's xdist workers)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.worker_pids: list[int] = []
        self.acknowledged = False
        self._redeliver = False
        self._quiet = False

    @contextlib.contextmanager
    def installed(self, *, worker: bool = False) -> Iterator[SignalGuard]:
        """Handle the signals while the block runs (`active()` returns this guard); restore
        the previous handlers after.

        `worker`: an xdist worker, whose controller prints the one stop line. Once a signal
        came, nothing the worker's interrupted code reports as it winds down is printed, even
        after the block (pytest's capture hook, closed by the garbage collector after capture
        stopped, raises AssertionError on the shared stderr)."""
        global _ACTIVE
        previous = {signum: signal.signal(signum, self._handle) for signum in CAUGHT}
        outer, _ACTIVE = _ACTIVE, self
        outer_hook = sys.unraisablehook

        def unraisable(info: sys.UnraisableHookArgs) -> None:
            # Our interrupt raised in a finalizer is dropped by Python and delivered again
            # (`_again`); printing "Exception ignored in ..." with its traceback would only be
            # noise on the one-line stop message.
            if self.received is not None and (worker
                                              or isinstance(info.exc_value, KeyboardInterrupt)):
                return
            outer_hook(info)

        sys.unraisablehook = unraisable
        try:
            yield self
        finally:
            _ACTIVE = outer
            if not (worker and self.received is not None):
                sys.unraisablehook = outer_hook
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._redeliver:
            self._redeliver = False
            if self.acknowledged or self._quiet:
                # The watchdog decided to send it again, then the interrupt landed or cleanup
                # that must finish began: raising now would cut that cleanup short (a server we
                # started left running). Checked here, in the main thread, because the
                # watchdog's own check races with both.
                return
        elif self.received is not None:
            # Cleaning up after the first signal took too long for the user: go now.
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if self.received is None:
            for pid in self.worker_pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGINT)
        self.received = signum
        # An exception raised in a finalizer or a gc callback (hypothesis has one) is printed
        # and dropped, and the run would go on. Until the interrupt is seen to have landed
        # (`acknowledge`), deliver the signal again in a moment.
        watchdog = threading.Timer(_REDELIVER_S, self._again, (signum,))
        watchdog.daemon = True
        watchdog.start()
        raise KeyboardInterrupt

    def _again(self, signum: int) -> None:
        if not self.acknowledged and not self._quiet:
            self._redeliver = True
            os.kill(os.getpid(), signum)

    @contextlib.contextmanager
    def closing(self) -> Iterator[None]:
        """Deliver no signal again while the block runs: cleanup that must finish (stopping a
        server we started) is not interrupted twice."""
        outer, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = outer

    def acknowledge(self) -> None:
        """The interrupt reached code that stops the run (pytest's session, the command
        line): no need to deliver it again."""
        self.acknowledged = True

    def report(self) -> int:
        """Say which signal stopped the run (one stderr line); return the exit code."""
        assert self.received is not None
        name = signal.Signals(self.received).name
        print(f"bullmq-conformance: stopped by {name}", file=sys.stderr)
        return 128 + self.received


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold the caught signals while the block runs and deliver them as it ends.

    For a block that starts a process we must stop (a fork, a spawned server or adapter): a
    signal raising inside `subprocess.Popen`, after its child exists but before Popen returns,
    leaves a child nobody holds. Deferred, the interrupt is raised once the caller holds the
    child, and its own cleanup stops it. Outside the main thread, where no handler can be set,
    the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    # A handler, not a signal mask: a mask covers only the calling thread, and the kernel
    # hands a process's signal to any thread that does not block it.
    previous = {signum: signal.signal(signum, lambda signum, frame: noted.append(signum))
                for signum in CAUGHT}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for number in dict.fromkeys(noted):
            signal.raise_signal(number)


def exit_now(code: int) -> NoReturn:
    """End the process with `code` (a stopped run's 128 + n), its output flushed."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
