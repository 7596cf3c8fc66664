"""Benchmark: the full vector set against the reference, and the same commands replayed bare.

Prints vectors/s for the harness (seed, ops, snapshot, compare, cleanup per vector), the time to
replay exactly the Redis commands the harness sent using plain redis-py, one by one and in
pipelines of 2,000 (the floor), their ratios, the cost per vector as the set grows (1x, 2x,
4x copies), the mutation self-test per script set, `url:` runs (the vectors alone, and the
default run with its `properties` item) on a server crowded with foreign keys beside the same
on an empty server (`conformance.checks.bench_figures`), the time
to load the vector files (cached, and parsed and validated), the wall time of a full default
`bullmq-conformance run` (new process, Redis start included), and the speedup of `-n 2`
(pytest-xdist) over a serial run, for the default run and a long one, what the installed
pytest plugin costs a pytest run that does not use it, and how much longer a run takes when the
candidate fails (a built-in defect, `EVERY_ENTRY_DIFFERS`, makes the largest keys of most vectors
differ in every entry, so every diff is as big as it gets). Run with `bullmq-conformance bench`
or `python -m conformance bench`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from conformance import servers
from conformance.candidates.base import Candidate
from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.checks import bench_figures as figures
from conformance.checks.mutant_catalog import EVERY_ENTRY_DIFFERS
from conformance.checks.mutants import write_mutant
from conformance.core.errors import Exit, UsageError
from conformance.core.outcomes import Outcome
from conformance.core.queues import QueueNames
from conformance.core.resources import CACHE_ENV, lua_dir
from conformance.core.resources import vectors_dir as bundled_vectors
from conformance.run.serial import run_vector
from conformance.run.spec import profile_for
from conformance.vectors import Vector, iter_vectors, load_dir
from reference_impl import versions

Recorded = figures.Recorded
#: The long run of the parallel figures: enough `properties` shards to spread over workers.
HEAVY_EXAMPLES = 200


class RecordingPipeline(redis.client.Pipeline):
    """A pipeline that logs each batch it sends."""

    log: Recorded

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        self.log.append(("pipe", [(args, dict(options)) for args, options in self.command_stack]))
        return super().execute(raise_on_error)


class RecordingRedis(redis.Redis):
    """A client that logs every command and pipeline batch, to replay them bare later."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log: Recorded = []

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.log.append(("cmd", [(args, dict(options))]))
        return super().execute_command(*args, **options)  # type: ignore[no-untyped-call]

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
        pipe = RecordingPipeline(self.connection_pool, self.response_callbacks, transaction,
                                 shard_hint)
        pipe.log = self.log
        return pipe


def replay(client: redis.Redis, log: Recorded) -> None:
    """Send the recorded commands again, as plain redis-py calls."""
    for kind, batch in log:
        if kind == "cmd":
            args, options = batch[0]
            client.execute_command(*args, **options)
        else:
            pipe = client.pipeline(transaction=False)
            for args, options in batch:
                pipe.execute_command(*args, **options)
            pipe.execute()


def _harness_pass(vectors: list[Vector], client: redis.Redis,
                  run: figures.RunVectors = figures.sequential) -> float:
    return figures.timed_pass(run, vectors, client)


@dataclass(frozen=True)
class FailingPass:
    """One harness pass of the vectors with a candidate expected to fail them."""

    seconds: float
    failed: int
    ran: int


def failing_pass(vectors: list[Vector], client: redis.Redis, candidate: Candidate) -> FailingPass:
    """Run every vector against `candidate`, timed; a vector that errors (rather than fails,
    or passes) ends the bench: its diff, or the candidate, broke."""
    profile, names = profile_for("bullmq"), QueueNames()
    failed = ran = 0
    start = time.perf_counter()
    for vector in vectors:
        verdict = run_vector(vector, candidate, client, profile, names,
                             protocol=versions.CURRENT)
        if verdict.outcome is Outcome.ERRORED:
            raise SystemExit(f"bench: failing candidate: {vector.id} errored: {verdict.message}")
        failed += verdict.outcome is Outcome.FAILED
        ran += verdict.outcome is not Outcome.SKIPPED
    return FailingPass(time.perf_counter() - start, failed, ran)


def failing_candidate(workdir: Path) -> ScriptsCandidate:
    """Our lua/ with the built-in defect `EVERY_ENTRY_DIFFERS`, written under `workdir`."""
    target = workdir / EVERY_ENTRY_DIFFERS.name
    write_mutant(lua_dir(), target, EVERY_ENTRY_DIFFERS)
    return ScriptsCandidate(target, f"mutant:{EVERY_ENTRY_DIFFERS.name}")


def failing_lines(harness: tuple[float, FailingPass],
                  runs: list[tuple[str, float, float, str]]) -> list[str]:
    """The failing-candidate figures: the in-process pass next to the reference's, then each
    (label, passing s, failing s, note) full run."""
    passing, failing = harness
    lines = [f"  failing candidate (built-in defect {EVERY_ENTRY_DIFFERS.name}: "
             f"{EVERY_ENTRY_DIFFERS.defect}); target: failing <= 1.5x passing",
             f"    {'harness, one by one':26}: passing {passing:6.2f} s, failing "
             f"{failing.seconds:6.2f} s, ratio {failing.seconds / passing:4.2f}x "
             f"({failing.failed} of {failing.ran} vectors failed, none errored)"]
    for label, pass_s, fail_s, note in runs:
        lines.append(f"    {label:26}: passing {pass_s:6.2f} s, failing {fail_s:6.2f} s, ratio "
                     f"{fail_s / pass_s:4.2f}x{f' ({note})' if note else ''}")
    return lines


def _timed_run(redis_spec: str, *extra: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    """One `bullmq-conformance run` in a new process, Redis start included: its wall time and
    how it ended."""
    start = time.perf_counter()
    # -P: a `conformance/` folder in the current directory (a checkout) must not shadow the
    # installed package being measured.
    proc = subprocess.run([sys.executable, "-P", "-m", "conformance", "run", "-q", "--redis",
                           redis_spec, "--seed", "1", *extra], capture_output=True, text=True,
                          check=False)
    return time.perf_counter() - start, proc


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    return lines[-1] if lines else "no output"


def _run_seconds(redis_spec: str, *extra: str, exit_code: int = Exit.OK) -> float:
    """Wall time of one `bullmq-conformance run` that must exit with `exit_code`."""
    elapsed, proc = _timed_run(redis_spec, *extra)
    if proc.returncode != exit_code:
        raise SystemExit(f"bench: run {' '.join(extra)} exited {proc.returncode}: "
                         f"{_last_line(proc)}")
    return elapsed


#: The client candidates timed side by side (`bullmq-node` first: the others' ratios are to it).
SDK_CANDIDATES = ("bullmq-node", "bullmq-rust")


def _sdk_seconds(redis_spec: str, repeat: int) -> dict[str, float | str]:
    """Best wall times of `run --examples 0` with each of `SDK_CANDIDATES`, warm (a first,
    untimed run builds an adapter that is not yet built); the reason instead, for a candidate
    that cannot run here (Node's packages or cargo missing). A client's known failures do not
    matter here: exit 1 is timed like 0."""
    found: dict[str, float | str] = {}
    for candidate in SDK_CANDIDATES:
        times = []
        for _ in range(repeat + 1):
            elapsed, proc = _timed_run(redis_spec, "--examples", "0", "--candidate", candidate)
            times.append(elapsed)
            if proc.returncode not in (Exit.OK, Exit.FAILED):
                found[candidate] = f"not timed: exit {proc.returncode}, {_last_line(proc)}"
                break
        else:
            found[candidate] = min(times[1:])
    return found


def _sdk_lines(found: dict[str, float | str]) -> list[str]:
    base = found.get(SDK_CANDIDATES[0])
    lines = ["  official clients, run --examples 0 (new processes, built and warm):"]
    for candidate, seconds in found.items():
        if isinstance(seconds, str):
            lines.append(f"    {candidate:12}: {seconds}")
        elif candidate == SDK_CANDIDATES[0] or not isinstance(base, float):
            lines.append(f"    {candidate:12}: {seconds:6.2f} s")
        else:
            lines.append(f"    {candidate:12}: {seconds:6.2f} s, {seconds / base:4.2f}x "
                         f"{SDK_CANDIDATES[0]} (target <= 1.5)")
    return lines


def _pass_fail_seconds(redis_spec: str, repeat: int, failing_spec: str,
                       *extra: str) -> tuple[float, float]:
    """Best wall times of the same run with the reference and with `failing_spec` (which must
    exit 1), interleaved so that a noisy neighbour slows both alike."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(repeat):
        times[True].append(_run_seconds(redis_spec, *extra))
        times[False].append(_run_seconds(redis_spec, "--candidate", failing_spec, *extra,
                                         exit_code=Exit.FAILED))
    return min(times[True]), min(times[False])


def _speedup(redis_spec: str, repeat: int, *extra: str) -> tuple[float, float]:
    """Best serial and best `-n 2` wall times of the same run."""
    serial = min(_run_seconds(redis_spec, *extra) for _ in range(repeat))
    parallel = min(_run_seconds(redis_spec, "-n", "2", *extra) for _ in range(repeat))
    return serial, parallel


#: New pytest processes per variant when timing the plugin's cost to an unrelated pytest run.
PLUGIN_REPEAT = 7


def _plugin_overhead(argv: list[str]) -> tuple[float, float]:
    """Best wall times of `python -m pytest ARGV` in an empty folder with the plugin loaded as
    installed (entry point) and with it blocked (`-p no:conformance.plugin`), interleaved so
    that a noisy neighbour slows both alike."""
    import tempfile

    times: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="bmqc-bench-") as empty:
        for _ in range(PLUGIN_REPEAT):
            for loaded in (True, False):
                block = [] if loaded else ["-p", "no:conformance.plugin"]
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "pytest", *block, *argv], cwd=empty,
                               capture_output=True, check=False)
                times[loaded].append(time.perf_counter() - start)
    return min(times[True]), min(times[False])


def _cold_load_seconds(vectors_dir: Path) -> float:
    previous = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = "off"
    try:
        return _timed(lambda: load_dir(vectors_dir))
    finally:
        if previous is None:
            del os.environ[CACHE_ENV]
        else:
            os.environ[CACHE_ENV] = previous


def main(args: argparse.Namespace) -> int:
    """`bench`: run the benchmark and print its figures. Returns a process exit code."""
    redis_spec, repeat = args.redis, max(args.repeat, 1)
    if args.foreign_keys < 0 or args.foreign_timeout <= 0:
        raise UsageError("--foreign-keys must be >= 0 and --foreign-timeout > 0")
    vectors_dir = bundled_vectors()
    figures.progress("loading the vectors")
    start = time.perf_counter()
    files = load_dir(vectors_dir)
    load_seconds = time.perf_counter() - start
    every = list(iter_vectors(files))
    # what a default run judges: the current protocol's vectors (the rest are skipped at once)
    vectors = [v for v in every if v.span.holds(versions.CURRENT)]
    with tempfile.TemporaryDirectory(prefix="bmqc-bench-") as workdir:
        broken = failing_candidate(Path(workdir))
        with servers.provision(redis_spec) as info:
            url = servers.client_for(info).connection_pool.connection_kwargs
            recording = RecordingRedis(host=url["host"], port=url["port"], db=url.get("db", 0),
                                       decode_responses=True)
            figures.progress("the harness, one by one and in batches, and the bare replays")
            _harness_pass(vectors, recording)  # warm-up, and the command log for the replay
            client = servers.client_for(info)
            serial = min(_harness_pass(vectors, client) for _ in range(repeat))
            # What a run does on a server the suite started: pipelined batches.
            run = figures.batched(info)
            harness = min(_harness_pass(vectors, client, run) for _ in range(repeat))
            bare = min(_timed(lambda: replay(client, recording.log)) for _ in range(repeat))
            piped = min(_timed(lambda: figures.replay_pipelined(client, recording.log))
                        for _ in range(repeat))
            figures.progress("the cost per vector at 1x, 2x and 4x the set")
            scales = figures.scaling(run, vectors, client, repeat)
            figures.progress("a failing candidate")
            failing_pass(vectors, client, broken)  # warm-up: load the scripts
            failing = min((failing_pass(vectors, client, broken) for _ in range(repeat)),
                          key=lambda f: f.seconds)
            engine = f"{info.kind} {info.engine} {info.version}"
        spec = f"scripts:{broken.directory}"
        figures.progress("full runs, passing and failing, in new processes")
        vectors_only = _pass_fail_seconds(redis_spec, repeat, spec, "--examples", "0")
        default_run = _pass_fail_seconds(redis_spec, repeat, spec)
    commands = sum(len(batch) for _, batch in recording.log)
    figures.progress("loading the vectors from scratch")
    cold = _cold_load_seconds(vectors_dir)
    full = min(_run_seconds(redis_spec) for _ in range(repeat))
    figures.progress("mutants")
    mutants = {scripts: figures.mutants_seconds(scripts, redis_spec)
               for scripts in ("reference", "official")}
    # The crowded figure needs servers of our own: of the bench's spec, or `local` when that
    # names a server we do not start or a cluster.
    own = "local" if servers.parse_spec(redis_spec).kind in ("url", "cluster") else redis_spec
    figures.progress(f"url: runs beside {args.foreign_keys:,} foreign keys")
    crowded = figures.crowded_runs(args.foreign_keys, args.foreign_timeout, spec=own)
    figures.progress("the official clients")
    sdks = _sdk_seconds(redis_spec, repeat)
    figures.progress("-n 2 against serial runs")
    plain = _speedup(redis_spec, repeat)
    heavy = _speedup(redis_spec, 1, "--examples", str(HEAVY_EXAMPLES))
    figures.progress("the plugin's cost to other pytest runs")
    plugin = [("pytest --version", _plugin_overhead(["--version"])),
              ("pytest, nothing to collect", _plugin_overhead(["-q", "-p", "no:cacheprovider"]))]
    ran = sum(1 for v in vectors if v.profile in (None, "bullmq"))
    trips = -(-commands // figures.PIPELINE)
    print(f"bullmq-conformance bench: {len(every)} vectors, {len(vectors)} of protocol "
          f"{versions.text(versions.CURRENT)} ({ran} run under profile bullmq), redis {engine}, "
          f"best of {repeat}")
    print(f"  harness, reference candidate : {harness:7.3f} s  {ran / harness:8.1f} vectors/s "
          f"(pipelined batches; one by one: {serial:.3f} s, {serial / harness:.2f}x slower)")
    print(f"  bare redis-py replay         : {bare:7.3f} s  {ran / bare:8.1f} vectors/s "
          f"({commands} commands in {len(recording.log)} round trips)")
    print(f"  bare pipelined replay        : {piped:7.3f} s  {ran / piped:8.1f} vectors/s "
          f"(the same commands, {figures.PIPELINE} to a pipeline: {trips} round trips)")
    print(f"  ratio harness / bare         : {harness / bare:7.2f}    (target <= 2)")
    print(f"  ratio harness / bare pipelined: {harness / piped:6.2f}    (target <= 1.5)")
    for line in figures.scaling_lines(scales, ran):
        print(line)
    print(f"  load vector files            : {load_seconds:7.3f} s cached, {cold:.3f} s "
          f"parsing and validating (first run, or cache off)")
    print(f"  full default run (new process, Redis start included): {full:.2f} s "
          f"(target <= 1.5)")
    for line in failing_lines((serial, failing), [
            ("full run, --examples 0", *vectors_only, ""),
            ("full default run", *default_run, "with the properties item, which fails and "
             "is shrunk")]):
        print(line)
    for line in [*figures.mutants_lines(mutants), *figures.crowded_lines(crowded)]:
        print(line)
    for line in _sdk_lines(sdks):
        print(line)
    for line in figures.scaled_lines(piped / ran * 1000, {
            "full default run": full, "harness": harness,
            **{f"mutants {scripts}": seconds for scripts, seconds in mutants.items()}}):
        print(line)
    print(f"  parallel, -n 2 on {os.cpu_count()} CPUs (new processes, same seed):")
    for label, (serial, parallel) in (("default run", plain),
                                      (f"--examples {HEAVY_EXAMPLES}", heavy)):
        print(f"    {label:18}: serial {serial:6.2f} s, -n 2 {parallel:6.2f} s, speedup "
              f"{serial / parallel:4.2f}x (target >= 1.6)")
    print(f"  the installed plugin, inactive, in an unrelated pytest run (new processes, best of "
          f"{PLUGIN_REPEAT}; without = -p no:conformance.plugin):")
    for label, (loaded, blocked) in plugin:
        print(f"    {label:26}: {loaded:6.3f} s with, {blocked:6.3f} s without, "
              f"{(loaded - blocked) * 1000:+5.0f} ms (target <= +50 ms)")
    return 0


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


