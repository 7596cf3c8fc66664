"""`bench`'s figures of scale: the pipelined floor, cost per vector as the set grows, the
mutation self-test per script set, and `url:` runs (the vectors alone, and the default run)
on a server crowded with foreign keys.

A harness pass is `timed_pass(run, vectors, client)` for any `RunVectors` callable, so another
way of running the vectors (a batched runner, say) is timed by the same code as `sequential`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import redis

from conformance import servers
from conformance.candidates import from_spec
from conformance.core.errors import Exit
from conformance.core.queues import QueueNames
from conformance.run.serial import run_vector
from conformance.run.spec import profile_for
from conformance.vectors import Vector
from reference_impl import versions

#: Runs every vector against the reference on `client`; raises SystemExit when one fails.
RunVectors = Callable[[Sequence[Vector], redis.Redis], None]
#: Each round trip the harness made ("cmd" or "pipe") with its commands' (args, options):
#: options such as redis-py's NEVER_DECODE change how a reply is read, so they are replayed.
Recorded = list[tuple[str, list[tuple[tuple[Any, ...], dict[str, Any]]]]]

#: Commands per pipeline in the bare pipelined replay, the floor of any harness.
PIPELINE = 2000
#: Copies of the vector set timed for the cost per vector.
SCALES = (1, 2, 4)
#: Foreign keys on the crowded `url:` server unless `--foreign-keys` says otherwise.
FOREIGN_KEYS = 1_000_000
#: A `url:` run still going after this many seconds is stopped and reported as such.
FOREIGN_TIMEOUT_S = 300.0
#: The foreign keys' prefix: no run queue (`bmqc-<run id>-<n>`) is a part of `foreign:<n>`.
FOREIGN_PREFIX = "foreign:"
_POPULATE_CHUNK = 100_000
_POPULATE = """
for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do redis.call('SET', ARGV[1] .. i, 'x') end
return 0
"""


def sequential(vectors: Sequence[Vector], client: redis.Redis) -> None:
    """The harness as a run drives it: one vector after another (seed, ops, snapshot,
    compare, cleanup), the reference as candidate, the default profile."""
    candidate, profile, names = from_spec("reference"), profile_for("bullmq"), QueueNames()
    for vector in vectors:
        verdict = run_vector(vector, candidate, client, profile, names,
                             protocol=versions.CURRENT)
        if verdict.outcome.failing:
            raise SystemExit(f"bench: {vector.id} {verdict.outcome}: {verdict.message}")


def batched(server: servers.ServerInfo) -> RunVectors:
    """The harness as a run drives it on a server the suite started: the reference's vectors
    in pipelined batches (`conformance.run.batch`), or one by one when `server` is not ours."""
    from conformance.run.batch import run_vectors

    def run(vectors: Sequence[Vector], client: redis.Redis) -> None:
        candidate, profile = from_spec("reference"), profile_for("bullmq")
        for verdict in run_vectors(vectors, candidate, client, profile, QueueNames(), server,
                                   protocol=versions.CURRENT):
            if verdict.outcome.failing:
                raise SystemExit(f"bench: {verdict.vector.id} {verdict.outcome}: "
                                 f"{verdict.message}")
    return run


def timed_pass(run: RunVectors, vectors: Sequence[Vector], client: redis.Redis) -> float:
    """Seconds `run` takes over `vectors`."""
    start = time.perf_counter()
    run(vectors, client)
    return time.perf_counter() - start


def replay_pipelined(client: redis.Redis, log: Recorded, size: int = PIPELINE) -> int:
    """Send the recorded commands again in order, `size` to a pipeline (no transaction);
    return the number of round trips. Replies are not looked at: this is the floor."""
    flat = [command for _, batch in log for command in batch]
    trips = 0
    for start in range(0, len(flat), size):
        pipe = client.pipeline(transaction=False)
        for args, options in flat[start:start + size]:
            pipe.execute_command(*args, **options)
        pipe.execute(raise_on_error=False)
        trips += 1
    return trips


def copies(vectors: Sequence[Vector], count: int) -> list[Vector]:
    """`count` copies of the set, the k-th (from 2) under ids suffixed `#k`."""
    return [v if k == 1 else replace(v, id=f"{v.id}#{k}")
            for k in range(1, count + 1) for v in vectors]


@dataclass(frozen=True)
class Scale:
    """The best pass over `copies` copies of the set."""

    copies: int
    vectors: int
    seconds: float

    @property
    def per_vector(self) -> float:
        """Seconds per vector."""
        return self.seconds / self.vectors


def scaling(run: RunVectors, vectors: Sequence[Vector], client: redis.Redis,
            repeat: int) -> list[Scale]:
    """The best of `repeat` passes over 1x, 2x and 4x the set."""
    found = []
    for count in SCALES:
        grown = copies(vectors, count)
        found.append(Scale(count, len(grown),
                           min(timed_pass(run, grown, client) for _ in range(repeat))))
    return found


def scaling_lines(scales: list[Scale], ran_per_copy: int) -> list[str]:
    """One line per scale, then the ratio of the largest to 1x. `ran_per_copy` is how many
    vectors of one copy run (the others are skipped by profile)."""
    lines = ["  cost per vector as the set grows (copies under fresh ids, in process):"]
    for scale in scales:
        lines.append(f"    {scale.copies}x {scale.copies * ran_per_copy:5} vectors: "
                     f"{scale.seconds:6.2f} s, {scale.per_vector * 1000:6.3f} ms/vector")
    last = scales[-1]
    lines.append(f"    {last.copies}x / 1x per vector: "
                 f"{last.per_vector / scales[0].per_vector:4.2f} (target: flat within 20%)")
    return lines


def _cli_seconds(*argv: str, timeout: float | None = None) -> float | None:
    """Wall time of `bullmq-conformance ARGV` in a new process; None when it passed
    `timeout` (it is stopped); a nonzero exit ends the bench."""
    elapsed, code, output = _cli_run(*argv, timeout=timeout)
    if code not in (None, Exit.OK):
        raise SystemExit(f"bench: {' '.join(argv[:3])} exited {code}: {output}")
    return elapsed


#: Seconds a run stopped by SIGTERM after its timeout has to clean up before it is killed.
_STOP_GRACE_S = 10.0


def _cli_run(*argv: str, timeout: float | None = None) -> tuple[float | None, int | None, str]:
    """Wall time, exit code and last output line of `bullmq-conformance ARGV` in a new
    process; (None, None, "") when it passed `timeout`. It is then stopped as a user would,
    by SIGTERM (so that it stops its own child processes and deletes its keys), and killed
    only if it is still running `_STOP_GRACE_S` later."""
    start = time.perf_counter()
    # -P: a `conformance/` folder in the current directory must not shadow the package.
    with subprocess.Popen([sys.executable, "-P", "-m", "conformance", *argv],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.communicate(timeout=_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            return None, None, ""
    elapsed = time.perf_counter() - start
    last = (err or out).strip().splitlines()[-1:]
    return elapsed, proc.returncode, last[0] if last else ""


def mutants_seconds(scripts: str, redis_spec: str) -> float | None:
    """Wall time of `bullmq-conformance mutants --scripts SCRIPTS` (new process); None when
    that script set is not installed (`official` without the bullmq package)."""
    if scripts == "official":
        import importlib.util

        if importlib.util.find_spec("bullmq") is None:
            return None
    return _cli_seconds("mutants", "--scripts", scripts, "--redis", redis_spec)


def mutants_lines(found: dict[str, float | None]) -> list[str]:
    """One line per script set."""
    lines = ["  mutation self-test, all catalog mutants (new process each; target <= 5 s):"]
    for scripts, seconds in found.items():
        shown = f"{seconds:6.2f} s" if seconds is not None else "not installed, skipped"
        lines.append(f"    mutants --scripts {scripts:10}: {shown}")
    return lines


@contextmanager
def crowded_server(foreign: int, spec: str = "local") -> Iterator[str]:
    """A Redis of our own (`spec`, a form that starts one) holding `foreign` string keys
    `foreign:<n>`; yields its `url:` spec and stops it afterwards."""
    with servers.provision(spec) as info:
        client = servers.client_for(info)
        populate = client.register_script(_POPULATE)
        for low in range(0, foreign, _POPULATE_CHUNK):
            high = min(low + _POPULATE_CHUNK, foreign) - 1
            populate(args=[FOREIGN_PREFIX, low, high])
        if client.dbsize() != foreign:
            raise SystemExit(f"bench: the crowded server holds {client.dbsize()} keys, "
                             f"not {foreign}")
        client.close()
        yield f"url:{info.url}"


#: The `url:` runs timed on an empty and on a crowded server, by label: the vectors alone,
#: and the default run, whose `properties` item must not scan the keyspace either.
CROWDED_RUNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("--examples 0", ("--examples", "0")), ("default run", ()))


@dataclass(frozen=True)
class Crowded:
    """One `url:` run (`label`, of `CROWDED_RUNS`) on an empty server and on one holding
    `foreign` keys (None: stopped after `timeout` seconds, or not run with no foreign keys);
    `exit` is the crowded run's exit code, and `last` its last line when that is not 0."""

    label: str
    foreign: int
    empty: float
    crowded: float | None
    timeout: float
    exit: int = Exit.OK
    last: str = ""


def crowded_runs(foreign: int, timeout: float, *extra: str,
                 spec: str = "local") -> list[Crowded]:
    """Time each of `CROWDED_RUNS` (`run -q --seed 1 EXTRA ARGS --redis url:...`) on an
    empty server of ours, then on one holding `foreign` keys (filled once for all), each in
    a new process; `spec` starts those servers. A run on the empty server must pass; a
    crowded one that does not is shown, not fatal: that is what the figure is for."""
    def argv(args: tuple[str, ...]) -> tuple[str, ...]:
        return ("run", "-q", "--seed", "1", *extra, *args)

    empty: dict[str, float] = {}
    with crowded_server(0, spec) as url:
        for label, args in CROWDED_RUNS:
            seconds = _cli_seconds(*argv(args), "--redis", url, timeout=timeout)
            if seconds is None:
                raise SystemExit(f"bench: the url: {label} on an empty server took over "
                                 f"{timeout:.0f} s")
            empty[label] = seconds
    crowded: dict[str, tuple[float | None, int | None, str]] = {
        label: (None, None, "") for label, _ in CROWDED_RUNS}
    if foreign:
        with crowded_server(foreign, spec) as url:
            for label, args in CROWDED_RUNS:
                crowded[label] = _cli_run(*argv(args), "--redis", url, timeout=timeout)
    return [Crowded(label, foreign, empty[label], crowded[label][0], timeout,
                    crowded[label][1] or Exit.OK, crowded[label][2])
            for label, _ in CROWDED_RUNS]


def crowded_lines(found: list[Crowded]) -> list[str]:
    """The `url:` figure: per run, both times and their ratio, or why there is none."""
    foreign = found[0].foreign if found else 0
    lines = [f"  url: run, server with {foreign:,} foreign keys vs empty (new processes; "
             f"target <= 1.5x each):"]
    for run in found:
        head = f"    {run.label:12} : empty {run.empty:6.2f} s"
        if not run.foreign:
            lines.append(f"{head} (crowded run skipped: --foreign-keys 0)")
        elif run.crowded is None:
            lines.append(f"{head}, crowded stopped after {run.timeout:.0f} s "
                         f"(> {run.timeout / run.empty:.0f}x; --foreign-keys and "
                         f"--foreign-timeout choose)")
        else:
            failed = (f", exit {run.exit}, not 0: a false verdict on the reference "
                      f"({run.last})" if run.exit != Exit.OK else "")
            lines.append(f"{head}, crowded {run.crowded:6.2f} s, ratio "
                         f"{run.crowded / run.empty:5.2f}x{failed}")
    return lines


#: The bare pipelined replay's time per vector on the machine the seconds targets were set on
#: (the README's CI figures: 0.107 s for 450 vectors). Machines here differ by 2-3x.
TARGET_MACHINE_FLOOR_MS = 0.107 / 450 * 1000


def scaled_lines(floor_ms: float, seconds: dict[str, float | None]) -> list[str]:
    """The seconds figures scaled to the targets' machine by the floor's time per vector on
    this one: an estimate (it assumes Python start-up and Redis slow down alike), printed
    beside the measured figures, never in their place."""
    factor = TARGET_MACHINE_FLOOR_MS / floor_ms
    shown = ", ".join(f"{label} {value * factor:.2f} s" for label, value in seconds.items()
                      if value is not None)
    return [f"  this machine: bare pipelined replay {floor_ms:.3f} ms a vector, "
            f"{1 / factor:.2f}x the {TARGET_MACHINE_FLOOR_MS:.3f} ms of the machine the seconds "
            f"targets were set on;",
            f"    scaled to that machine (an estimate): {shown}"]


def progress(step: str) -> None:
    """One line on stderr as a step of the bench starts: it runs for minutes."""
    print(f"bench: {step}...", file=sys.stderr, flush=True)
