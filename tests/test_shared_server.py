"""The suite on a server it shares (`--redis url:`): every foreign key stays byte-identical, no
FLUSHDB/FLUSHALL is ever sent, and a run leaves none of its own keys behind, also when it is
interrupted or a candidate writes after its vector (the final sweep of `Run.close`).

The server is one we start for this module, so MONITOR sees only our traffic; the suite is
pointed at it by URL, so it treats it as someone else's.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis

from conformance import servers
from conformance.errors import InfrastructureError
from conformance.runner import QueueNames
from conformance.session import Run, RunOptions

ROOT = Path(__file__).resolve().parents[1]  # the checkout (tests run from it)

FOREIGN_COUNT = 10_000
#: Databases of the module's server: one per test, none the default.
DB_SAFETY, DB_OTHER, DB_INTERRUPT, DB_SWEEP = 9, 0, 10, 11
#: The run id of "another suite run" whose keys share the server.
OTHER_RUN = "0badc0de"
HOUR_MS = 3_600_000
RUN_TIMEOUT = 600.0
#: A queue name of a run (xdist workers add `-w<n>` to the run id).
RUN_ID_RE = re.compile(r"bmqc-([0-9a-f]{8}(?:-w\d+)?)-\d{6}")
FORBIDDEN = frozenset({"FLUSHDB", "FLUSHALL", "SWAPDB", "MOVE"})
#: Sent on a fresh connection before its SELECT, so MONITOR shows them on db 0.
CONNECTION_SETUP = frozenset({"SELECT", "CLIENT", "HELLO", "AUTH"})

Key = bytes


@pytest.fixture(scope="module")
def own_server() -> Iterator[servers.ServerInfo]:
    """A server started for this module only (the session's is shared with other tests)."""
    spec = os.environ.get("BMQC_TEST_REDIS", "auto")
    if servers.parse_spec(spec).kind == "url":
        spec = "auto"  # MONITOR must see this module's traffic only: a server of our own
    with contextlib.ExitStack() as stack:
        try:
            info = stack.enter_context(servers.provision(spec))
        except InfrastructureError as exc:
            pytest.skip(f"no Redis could be started: {exc}")
        yield info


def db_url(info: servers.ServerInfo, db: int) -> str:
    """The server's URL on database `db`."""
    return urlunsplit(urlsplit(info.url)._replace(path=f"/{db}"))


def raw_client(info: servers.ServerInfo, db: int) -> redis.Redis:
    """A bytes client (DUMP payloads and non-UTF-8 key names stay as they are)."""
    return redis.Redis.from_url(db_url(info, db), socket_timeout=30)


# ----------------------------------------------------------------------------- foreign keys


def _special_keys() -> list[tuple[bytes, str]]:
    """Keys that look like BullMQ's, or like another run's, or that are glob-hostile."""
    other = f"bmqc-{OTHER_RUN}-000001"
    named = [
        ("bull:other:wait", "list"), ("bull:other:paused", "list"), ("bull:other:meta", "hash"),
        ("bull:other:id", "string"), ("bull:other:delayed", "zset"),
        ("bull:other:prioritized", "zset"), ("bull:other:pc", "string"),
        ("bull:other:marker", "zset"), ("bull:other:events", "stream"),
        ("bull:other:stalled", "set"), ("bull:other:active", "list"),
        ("bull:other:completed", "zset"), ("bull:other:limiter", "string_ttl"),
        ("bull:other:1", "hash"), ("bull:other:1:lock", "string_ttl"),
        ("bull:{x}:meta", "hash"), ("bull:{x}:wait", "list"), ("bull:{x}:delayed", "zset"),
        ("emq:{other}:delayed", "zset"), ("emq:{other}:prioritized", "zset"),
        ("emq:{other}:meta", "hash"), ("emq:{other}:wait", "list"),
        ("emq:{other}:events", "stream"),
        (f"bull:{other}:wait", "list"), (f"bull:{other}:meta", "hash"),
        (f"bull:{other}:delayed", "zset"), (f"bull:{other}:1", "hash"),
        (f"emq:{{{other}}}:delayed", "zset"), (f"emq:{{{other}}}:events", "stream"),
        ("bmqc-", "string"), ("bmqc-*", "string"), ("bull:*:wait", "list"),
        ("bull:[bmqc-]:meta", "hash"), ("bull:bmqc-?-\\:id", "string"),
        ("big:list", "big_list"), ("big:hash", "big_hash"), ("big:zset", "big_zset"),
        ("big:set", "big_set"),
    ]
    keys = [(name.encode(), kind) for name, kind in named]
    keys.append((b"bull:\xff\xfe:not-utf8", "string"))
    return keys


BULK_KINDS = ("string", "string_ttl", "list", "set", "zset", "hash", "stream", "job")
BULK_NAMES = ("bull:prod:{i}", "bull:{{q{m}}}:item:{i}", "emq:{{other}}:x{i}",
              f"bull:bmqc-{OTHER_RUN}-{{m:06d}}:k{{i}}", "cache:user:{i}", "bull:prod:{i}:logs")
#: Fractional, negative, infinite, and past 2^53 (stored as the nearest double).
SCORES = ("0.1", "1.5", "-2.25", "9007199254740993", "6962565120000000005", "1e300", "-inf",
          "+inf", "0")


def foreign_keys(count: int) -> list[tuple[bytes, str]]:
    """`count` distinct key names with the type each gets (every type, TTLs included)."""
    keys = _special_keys()
    i = 0
    while len(keys) < count:
        template = BULK_NAMES[i % len(BULK_NAMES)]
        name = template.format(i=i, m=i % 97)
        keys.append((name.encode(), BULK_KINDS[(i // len(BULK_NAMES)) % len(BULK_KINDS)]))
        i += 1
    assert len({name for name, _ in keys}) == count
    return keys


def _write(pipe: Any, name: bytes, kind: str, i: int) -> None:
    if kind == "string":
        pipe.set(name, f"value-{i}")
    elif kind == "string_ttl":
        pipe.set(name, f"leased-{i}", px=HOUR_MS + i)
    elif kind == "list":
        pipe.rpush(name, f"a{i}", "b", "c")
    elif kind == "set":
        pipe.sadd(name, f"m{i}", "x", "y")
    elif kind == "zset":
        pipe.zadd(name, {f"z{n}": s for n, s in enumerate(SCORES[i % 3: i % 3 + 6])})
    elif kind in ("hash", "job"):
        fields = {"name": "email", "data": json.dumps({"to": f"u{i}@example.org"}),
                  "opts": '{"attempts":3}', "timestamp": str(1700000000000 + i),
                  "priority": "0", "delay": "0"}
        pipe.hset(name, mapping=fields if kind == "job" else {"f": str(i), "g": "h"})
    elif kind == "stream":
        pipe.xadd(name, {"event": "added", "jobId": str(i)}, id=f"{1700000000000 + i}-{i % 5}")
        pipe.xadd(name, {"event": "waiting", "jobId": str(i)})
        if i % 2 == 0:
            pipe.xgroup_create(name, "workers", id="0")
    elif kind == "big_list":
        pipe.rpush(name, *(f"item-{n}" for n in range(2000)))
    elif kind == "big_hash":
        pipe.hset(name, mapping={f"field-{n}": "x" * (n % 70) for n in range(2000)})
    elif kind == "big_zset":
        pipe.zadd(name, {f"m{n}": n / 7 + 2**53 * (n % 3) for n in range(2000)})
    elif kind == "big_set":
        pipe.sadd(name, *(str(n) for n in range(2000)))
    else:
        raise AssertionError(f"unknown kind {kind}")


def seed_foreign(client: redis.Redis, count: int) -> list[Key]:
    """Write `count` foreign keys (the database must not hold any of them); return the names."""
    keys = foreign_keys(count)
    assert client.exists(*(name for name, _ in keys[:500])) == 0, "database not empty"
    for start in range(0, len(keys), 1000):
        pipe = client.pipeline(transaction=False)
        for i, (name, kind) in enumerate(keys[start:start + 1000], start):
            _write(pipe, name, kind, i)
        pipe.execute()
    return [name for name, _ in keys]


@dataclass(frozen=True)
class Dumped:
    """Every foreign key's DUMP payload and PTTL."""

    dumps: dict[Key, bytes]
    pttls: dict[Key, int]


def dump_all(client: redis.Redis, names: list[Key]) -> Dumped:
    """DUMP and PTTL every key of `names` (None for a missing key, -2 as its PTTL)."""
    dumps: dict[Key, bytes] = {}
    pttls: dict[Key, int] = {}
    for start in range(0, len(names), 1000):
        chunk = names[start:start + 1000]
        pipe = client.pipeline(transaction=False)
        for name in chunk:
            pipe.dump(name)
            pipe.pttl(name)
        replies = pipe.execute()
        for n, name in enumerate(chunk):
            dumps[name], pttls[name] = replies[2 * n], replies[2 * n + 1]
    return Dumped(dumps, pttls)


def all_keys(client: redis.Redis) -> set[Key]:
    """Every key of the client's database."""
    return set(client.scan_iter(count=1000))


def assert_untouched(client: redis.Redis, names: list[Key], before: Dumped) -> None:
    """The database holds exactly `names`, each byte-identical, each TTL kept (none added)."""
    keys = all_keys(client)
    extra, missing = sorted(keys - set(names)), sorted(set(names) - keys)
    assert not extra, f"{len(extra)} key(s) left over, e.g. {extra[:10]}"
    assert not missing, f"{len(missing)} foreign key(s) gone, e.g. {missing[:10]}"
    after = dump_all(client, names)
    changed = [name for name in names if after.dumps[name] != before.dumps[name]]
    assert not changed, f"{len(changed)} foreign key(s) changed, e.g. {changed[:10]}"
    ttl_lost = [n for n in names
                if before.pttls[n] > 0 and not 0 < after.pttls[n] <= before.pttls[n]]
    assert not ttl_lost, f"TTL lost or raised on {len(ttl_lost)} key(s), e.g. {ttl_lost[:10]}"
    ttl_added = [n for n in names if before.pttls[n] == -1 and after.pttls[n] != -1]
    assert not ttl_added, f"TTL added to {len(ttl_added)} key(s), e.g. {ttl_added[:10]}"


def delete_keys(client: redis.Redis, names: list[Key]) -> None:
    """Remove what a test seeded (by name: never a FLUSH)."""
    for start in range(0, len(names), 1000):
        client.unlink(*names[start:start + 1000])


# ---------------------------------------------------------------------------------- MONITOR


class CommandLog:
    """Every command the server executes, as MONITOR reports it, read by a thread.

    `stop` sends a marker through the server and waits for the reader to see it, so every
    command executed before the marker has been recorded.
    """

    def __init__(self, info: servers.ServerInfo, *, ignore_run: str = OTHER_RUN) -> None:
        self.commands: list[dict[str, Any]] = []
        self.error: BaseException | None = None
        self.run_id: str | None = None
        self.run_seen = threading.Event()
        self._ignore_run = ignore_run
        self._marker = f"end-of-log-{os.getpid()}-{time.monotonic_ns()}"
        self._client = redis.Redis.from_url(info.url)
        self._monitor = self._client.monitor()
        self._thread = threading.Thread(target=self._read, name="monitor-reader", daemon=True)

    def __enter__(self) -> CommandLog:
        self._monitor.__enter__()  # MONITOR is on once this returns
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        # Closing the connection also ends a reader still blocked in a read.
        with contextlib.suppress(Exception):
            self._monitor.__exit__()
        self._thread.join(10)
        self._client.close()

    def _read(self) -> None:
        try:
            while True:
                entry = self._monitor.next_command()
                command = entry["command"]
                if self._marker in command:
                    return
                self.commands.append(entry)
                if self.run_id is None:
                    found = RUN_ID_RE.search(command)
                    if found is not None and not found.group(1).startswith(self._ignore_run):
                        self.run_id = found.group(1)
                        self.run_seen.set()
        except BaseException as exc:  # the connection closed under us, or a parse error
            self.error = exc

    def stop(self, via: redis.Redis, timeout: float = 120.0) -> None:
        """Record up to now: send the marker through `via` and wait until it is read."""
        via.echo(self._marker)
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "MONITOR reader did not see the end marker"
        assert self.error is None, f"MONITOR reader failed: {self.error!r}"

    def names(self) -> list[str]:
        """The command name of every recorded entry, upper-cased."""
        return [entry["command"].split(" ", 1)[0].upper() for entry in self.commands]


# ------------------------------------------------------------------------------- the suite


def suite_command(url: str, report: Path) -> list[str]:
    """The full run against `url`, as a user would type it."""
    return [sys.executable, "-m", "conformance.cli", "run", "--redis", f"url:{url}", "-q",
            "--report-json", str(report)]


def start_suite(url: str, tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """Start the full run in a child process; return it and its report path."""
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    out = (tmp_path / "stdout.txt").open("wb")
    err = (tmp_path / "stderr.txt").open("wb")
    with out, err, _sigint_not_ignored():
        proc = subprocess.Popen(suite_command(url, report), cwd=ROOT, env=env,
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    return proc, report


@contextlib.contextmanager
def _sigint_not_ignored() -> Iterator[None]:
    """A child inherits an ignored SIGINT (a shell's background job), and Python then never
    raises KeyboardInterrupt in it: un-ignore it while the child is started."""
    ignored = (threading.current_thread() is threading.main_thread()
               and signal.getsignal(signal.SIGINT) == signal.SIG_IGN)
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def output_of(tmp_path: Path) -> str:
    """The child's output, for assertion messages."""
    out = (tmp_path / "stdout.txt").read_text(errors="replace")
    err = (tmp_path / "stderr.txt").read_text(errors="replace")
    return f"stdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}"


def stop_child(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child if it is still running (a failed test must not leave it behind)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(30)


def _timed(label: str, started: float) -> float:
    seconds = time.perf_counter() - started
    print(f"{label}: {seconds:.2f} s")
    return seconds


# ----------------------------------------------------------------------------------- tests


def test_full_run_leaves_foreign_keys_untouched(own_server: servers.ServerInfo,
                                                tmp_path: Path) -> None:
    """10,000 foreign keys of every type survive a full run byte for byte; nothing is added,
    nothing is flushed, and the suite stays on its database."""
    client, other_db = raw_client(own_server, DB_SAFETY), raw_client(own_server, DB_OTHER)
    names: list[Key] = []
    other: list[Key] = []
    try:
        started = time.perf_counter()
        names = seed_foreign(client, FOREIGN_COUNT)
        other = seed_foreign(other_db, 300)
        _timed(f"seeding {len(names) + len(other)} keys", started)
        assert client.dbsize() == FOREIGN_COUNT
        started = time.perf_counter()
        before, before_other = dump_all(client, names), dump_all(other_db, other)
        _timed("DUMP + PTTL before", started)
        assert sum(1 for t in before.pttls.values() if t > 0) > 1000

        url = db_url(own_server, DB_SAFETY)
        with CommandLog(own_server) as log:
            started = time.perf_counter()
            proc, report = start_suite(url, tmp_path)
            try:
                code = proc.wait(RUN_TIMEOUT)
            finally:
                stop_child(proc)
            _timed("full run", started)
            log.stop(client)

        assert code == 0, output_of(tmp_path)
        totals = json.loads(report.read_text())["totals"]
        assert totals["failed"] == totals["errored"] == 0, totals
        assert totals["passed"] >= 140, totals

        commands = log.names()
        print(f"MONITOR recorded {len(commands)} commands")
        assert log.run_id is not None, "no queue of the run seen"
        # The properties area included: every queue is under the run's prefix, so the final
        # sweep covers them all.
        run_ids = {found.group(1) for entry in log.commands
                   for found in RUN_ID_RE.finditer(entry["command"])}
        assert run_ids == {log.run_id}, run_ids
        assert sum(1 for c in commands if c in ("EVALSHA", "EVAL")) > 100
        assert FORBIDDEN.isdisjoint(commands), sorted(FORBIDDEN.intersection(commands))
        elsewhere = [e for e, c in zip(log.commands, commands, strict=True)
                     if e["db"] != DB_SAFETY and c not in CONNECTION_SETUP]
        assert not elsewhere, f"commands on another database: {elsewhere[:5]}"
        selects = {e["command"] for e, c in zip(log.commands, commands, strict=True)
                   if c == "SELECT"}
        assert selects <= {f"SELECT {DB_SAFETY}"}, selects

        started = time.perf_counter()
        assert_untouched(client, names, before)
        assert_untouched(other_db, other, before_other)
        _timed("key set + DUMP compare after", started)
    finally:
        delete_keys(client, names)
        delete_keys(other_db, other)
        client.close()
        other_db.close()


def test_interrupted_run_leaves_none_of_its_keys(own_server: servers.ServerInfo,
                                                 tmp_path: Path) -> None:
    """SIGINT mid-run: the run's keys are all gone (a late write under its queue names too),
    and the foreign keys are byte-identical."""
    client = raw_client(own_server, DB_INTERRUPT)
    names: list[Key] = []
    late: list[str] = []
    try:
        names = seed_foreign(client, FOREIGN_COUNT)
        before = dump_all(client, names)
        url = db_url(own_server, DB_INTERRUPT)
        with CommandLog(own_server) as log:
            started = time.perf_counter()
            proc, _ = start_suite(url, tmp_path)
            try:
                deadline = time.monotonic() + 120
                while not log.run_seen.wait(0.05):
                    assert proc.poll() is None, "run ended early\n" + output_of(tmp_path)
                    assert time.monotonic() < deadline, "no queue of the run seen in 120 s"
                # A candidate writing after its vector: keys no vector of the run will delete.
                prefix = f"bmqc-{log.run_id}-"
                late = [f"bull:{prefix}999999:late", f"emq:{{{prefix}999998}}:wait"]
                client.set(late[0], "written after the vector")
                client.rpush(late[1], "1")
                assert proc.poll() is None, "run ended before the interrupt"
                proc.send_signal(signal.SIGINT)
                code = proc.wait(120)
            finally:
                stop_child(proc)
            _timed("start to exit after SIGINT", started)
            log.stop(client)

        print(f"exit code after SIGINT: {code}")
        assert code != 0, output_of(tmp_path)
        assert "interrupt" in output_of(tmp_path).lower(), output_of(tmp_path)
        leftovers = sorted(k for k in all_keys(client) if b"bmqc-" in k and k not in set(names))
        assert not leftovers, f"keys of the run left behind: {leftovers[:10]}"
        assert_untouched(client, names, before)
        assert FORBIDDEN.isdisjoint(log.names())
    finally:
        delete_keys(client, names)
        if late:
            client.unlink(*late)
        client.close()


@pytest.mark.parametrize("run_id", [None, "a*b?[c]", "back\\slash"],
                         ids=["random-id", "glob-id", "backslash-id"])
def test_final_sweep_deletes_this_runs_keys_only(own_server: servers.ServerInfo,
                                                 run_id: str | None) -> None:
    """Run.close on a url: server deletes keys under its own queue-name prefix, and no other."""
    client = servers.client_for(own_server, db=DB_SWEEP)
    run = Run(RunOptions(redis=f"url:{db_url(own_server, DB_SWEEP)}"))
    if run_id is not None:
        run.names = QueueNames(run_id)
    prefix = f"bmqc-{run.names.run_id}-"
    other_id = QueueNames().run_id
    ours = [f"bull:{prefix}000001:wait", f"emq:{{{prefix}000002}}:meta", f"{prefix}",
            *(f"bull:{prefix}{n:06d}:{n}" for n in range(2500))]  # more than one UNLINK batch
    theirs = [f"bull:bmqc-{other_id}-000001:wait", f"bull:{run.names.run_id}-000001:wait",
              f"bull:bmqc-{run.names.run_id}0-000001:wait", f"bmqc-{run.names.run_id}",
              "bull:bmqc-axxbyc-000001:wait", "bull:bmqc-back-slash-000001:wait",
              "bull:bmqc-backslash-000001:wait"]
    try:
        run.start()
        assert run.server is not None and not run.server.owned
        pipe = client.pipeline(transaction=False)
        for key in ours:
            pipe.set(key, "ours")
        for key in theirs:
            pipe.set(key, "theirs")
        pipe.execute()
        run.close()
        assert client.exists(*ours) == 0
        assert client.exists(*theirs) == len(theirs)
        assert {client.get(k) for k in theirs} == {"theirs"}
    finally:
        run.close()
        client.unlink(*ours, *theirs)
        client.close()


def test_final_sweep_tolerates_a_dead_server(own_server: servers.ServerInfo) -> None:
    """A server gone before close(): nothing to clean, and close() neither raises nor hangs."""
    run = Run(RunOptions(redis=f"url:{db_url(own_server, DB_SWEEP)}"))
    run.start()
    assert run.server is not None
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    run.server = replace(run.server, url=f"redis://127.0.0.1:{port}/{DB_SWEEP}")
    started = time.perf_counter()
    run.close()
    assert time.perf_counter() - started < 5


def test_final_sweep_covers_every_cluster_node() -> None:
    """On a url: Redis Cluster the sweep reaches the run's keys on every master, in any slot."""
    with contextlib.ExitStack() as stack:
        try:
            info = stack.enter_context(servers.provision("cluster"))
        except InfrastructureError as exc:
            pytest.skip(f"no Redis Cluster could be started: {exc}")
        run = Run(RunOptions(profile="echomq", redis=f"url:{info.url}"))
        stack.callback(run.close)
        run.start()
        assert run.server is not None and run.server.cluster and not run.server.owned
        client = servers.client_for(run.server)
        stack.callback(client.close)
        prefix = f"bmqc-{run.names.run_id}-"
        ours = [f"emq:{{{prefix}{n:06d}}}:wait" for n in range(300)]
        theirs = [f"emq:{{bmqc-{QueueNames().run_id}-{n:06d}}}:wait" for n in range(30)]
        stack.callback(lambda: client.unlink(*ours, *theirs))
        for key in [*ours, *theirs]:
            client.set(key, "x")
        masters = {client.get_node_from_key(key).name for key in ours}  # type: ignore[attr-defined]
        assert len(masters) == 3, masters
        run.close()
        assert client.exists(*ours) == 0
        assert client.exists(*theirs) == len(theirs)
