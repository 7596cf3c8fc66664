"""Benchmark: the full vector set against the reference, and the same commands replayed bare.

Prints vectors/s for the harness (seed, ops, snapshot, compare, cleanup per vector), the time to
replay exactly the Redis commands the harness sent using plain redis-py, their ratio, the time
to load the vector files (cached, and parsed and validated), the wall time of a full default
`bullmq-conformance run` (new process, Redis start included), and the speedup of `-n 2`
(pytest-xdist) over a serial run, for the default run and a long one, and what the installed
pytest plugin costs a pytest run that does not use it. Run with `bullmq-conformance bench` or
`python -m conformance bench`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis

from conformance import servers
from conformance.candidates import from_spec
from conformance.resources import CACHE_ENV
from conformance.resources import vectors_dir as bundled_vectors
from conformance.runner import QueueNames, run_vector
from conformance.session import profile_for
from conformance.vectors import Vector, iter_vectors, load_dir

Recorded = list[tuple[str, list[tuple[Any, ...]]]]
#: The long run of the parallel figures: enough `properties` shards to spread over workers.
HEAVY_EXAMPLES = 200


class RecordingPipeline(redis.client.Pipeline):
    """A pipeline that logs each batch it sends."""

    log: Recorded

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        self.log.append(("pipe", [args for args, _ in self.command_stack]))
        return super().execute(raise_on_error)


class RecordingRedis(redis.Redis):
    """A client that logs every command and pipeline batch, to replay them bare later."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log: Recorded = []

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.log.append(("cmd", [args]))
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
            client.execute_command(*batch[0])
        else:
            pipe = client.pipeline(transaction=False)
            for args in batch:
                pipe.execute_command(*args)
            pipe.execute()


def _harness_pass(vectors: list[Vector], client: redis.Redis) -> float:
    candidate, profile, names = from_spec("reference"), profile_for("bullmq"), QueueNames()
    start = time.perf_counter()
    for vector in vectors:
        verdict = run_vector(vector, candidate, client, profile, names)
        if verdict.outcome.failing:
            raise SystemExit(f"bench: {vector.id} {verdict.outcome}: {verdict.message}")
    return time.perf_counter() - start


def _run_seconds(redis_spec: str, *extra: str) -> float:
    """Wall time of one `bullmq-conformance run` in a new process, Redis start included."""
    start = time.perf_counter()
    # -P: a `conformance/` folder in the current directory (a checkout) must not shadow the
    # installed package being measured.
    proc = subprocess.run([sys.executable, "-P", "-m", "conformance.cli", "run", "-q", "--redis",
                           redis_spec, "--seed", "1", *extra], capture_output=True, text=True,
                          check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"bench: run {' '.join(extra)} exited {proc.returncode}: "
                         f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    return elapsed


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
    redis_spec, repeat = args.redis, args.repeat
    vectors_dir = bundled_vectors()
    start = time.perf_counter()
    files = load_dir(vectors_dir)
    load_seconds = time.perf_counter() - start
    vectors = list(iter_vectors(files))
    with servers.provision(redis_spec) as info:
        url = servers.client_for(info).connection_pool.connection_kwargs
        recording = RecordingRedis(host=url["host"], port=url["port"], db=url.get("db", 0),
                                   decode_responses=True)
        _harness_pass(vectors, recording)  # warm-up, and the command log for the bare replay
        client = servers.client_for(info)
        harness = min(_harness_pass(vectors, client) for _ in range(max(repeat, 1)))
        bare = min(_timed(lambda: replay(client, recording.log)) for _ in range(max(repeat, 1)))
        engine = f"{info.kind} {info.engine} {info.version}"
    commands = sum(len(batch) for _, batch in recording.log)
    cold = _cold_load_seconds(vectors_dir)
    full = min(_run_seconds(redis_spec) for _ in range(max(repeat, 1)))
    plain = _speedup(redis_spec, max(repeat, 1))
    heavy = _speedup(redis_spec, 1, "--examples", str(HEAVY_EXAMPLES))
    plugin = [("pytest --version", _plugin_overhead(["--version"])),
              ("pytest, nothing to collect", _plugin_overhead(["-q", "-p", "no:cacheprovider"]))]
    ran = sum(1 for v in vectors if v.profile in (None, "bullmq"))
    print(f"bullmq-conformance bench: {len(vectors)} vectors ({ran} run under profile bullmq), "
          f"redis {engine}, best of {repeat}")
    print(f"  harness, reference candidate : {harness:7.3f} s  {ran / harness:8.1f} vectors/s")
    print(f"  bare redis-py replay         : {bare:7.3f} s  {ran / bare:8.1f} vectors/s "
          f"({commands} commands in {len(recording.log)} round trips)")
    print(f"  ratio harness / bare         : {harness / bare:7.2f}    (target <= 2)")
    print(f"  load vector files            : {load_seconds:7.3f} s cached, {cold:.3f} s "
          f"parsing and validating (first run, or cache off)")
    print(f"  full default run (new process, Redis start included): {full:.2f} s "
          f"(target <= 5)")
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


