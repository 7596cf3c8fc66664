"""`bench`'s figures of scale: the pipelined floor, cost per vector as the set grows, the
mutation self-test per script set, and a `url:` run on a server crowded with foreign keys.

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
from conformance.errors import Exit
from conformance.runner import QueueNames, run_vector
from conformance.session import profile_for
from conformance.vectors import Vector

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
        verdict = run_vector(vector, candidate, client, profile, names)
        if verdict.outcome.failing:
            raise SystemExit(f"bench: {vector.id} {verdict.outcome}: {verdict.message}")


def batched(server: servers.ServerInfo) -> RunVectors:
    """The harness as a run drives it on a server the suite started: the reference's vectors
    in pipelined batches (`conformance.batch`), or one by one when `server` is not ours."""
    from conformance.batch import run_vectors

    def run(vectors: Sequence[Vector], client: redis.Redis) -> None:
        candidate, profile = from_spec("reference"), profile_for("bullmq")
        for verdict in run_vectors(vectors, candidate, client, profile, QueueNames(), server):
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
    `timeout` (it is killed); a nonzero exit ends the bench."""
    start = time.perf_counter()
    # -P: a `conformance/` folder in the current directory must not shadow the package.
    try:
        proc = subprocess.run([sys.executable, "-P", "-m", "conformance.cli", *argv],
                              capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    elapsed = time.perf_counter() - start
    if proc.returncode != Exit.OK:
        raise SystemExit(f"bench: {' '.join(argv[:3])} exited {proc.returncode}: "
                         f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    return elapsed


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
def crowded_server(foreign: int) -> Iterator[str]:
    """A local Redis of our own holding `foreign` string keys `foreign:<n>`; yields its
    `url:` spec and stops it afterwards."""
    with servers.provision("local") as info:
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


@dataclass(frozen=True)
class Crowded:
    """A `url:` run on an empty server and on one holding `foreign` keys (None: stopped
    after `timeout` seconds)."""

    foreign: int
    empty: float
    crowded: float | None
    timeout: float


def crowded_runs(foreign: int, timeout: float, *extra: str) -> Crowded:
    """Time `run --examples 0 EXTRA --redis url:...` on an empty server of ours, then on
    one holding `foreign` keys, each in a new process."""
    argv = ("run", "-q", "--examples", "0", "--seed", "1", *extra)
    with crowded_server(0) as empty_spec:
        empty = _cli_seconds(*argv, "--redis", empty_spec, timeout=timeout)
    if empty is None:
        raise SystemExit(f"bench: the url: run on an empty server took over {timeout:.0f} s")
    crowded = None
    if foreign:
        with crowded_server(foreign) as spec:
            crowded = _cli_seconds(*argv, "--redis", spec, timeout=timeout)
    return Crowded(foreign, empty, crowded, timeout)


def crowded_lines(found: Crowded) -> list[str]:
    """The `url:` figure: both runs and their ratio, or why there is none."""
    head = (f"  url: run, --examples 0, server with {found.foreign:,} foreign keys vs empty "
            f"(new processes; target <= 1.5x):")
    if not found.foreign:
        return [head, f"    empty {found.empty:6.2f} s (crowded run skipped: --foreign-keys 0)"]
    if found.crowded is None:
        return [head, f"    empty {found.empty:6.2f} s, crowded stopped after "
                      f"{found.timeout:.0f} s (> {found.timeout / found.empty:.0f}x; "
                      f"--foreign-keys and --foreign-timeout choose)"]
    return [head, f"    empty {found.empty:6.2f} s, crowded {found.crowded:6.2f} s, ratio "
                  f"{found.crowded / found.empty:5.2f}x"]
