"""Shared by the shared-server tests (tests/test_shared_server.py, tests/test_final_sweep.py) on
a Redis of a test module's own (`own_server`, tests/conftest.py): thousands of foreign keys of
every type to seed and compare byte for byte, a MONITOR log of every command, and the full suite
run in a child process.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis

from conformance import servers
from tests.cli_helpers import ROOT, command

#: The run id of "another suite run" whose keys share the server.
OTHER_RUN = "0badc0de"
HOUR_MS = 3_600_000
#: A queue name of a run (xdist workers add `-w<n>` to the run id).
RUN_ID_RE = re.compile(r"bmqc-([0-9a-f]{8}(?:-w\d+)?)-\d{6}")

Key = bytes


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
    return command("run", "--redis", f"url:{url}", "-q", "--report-json", str(report))


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


def timed(label: str, started: float) -> float:
    seconds = time.perf_counter() - started
    print(f"{label}: {seconds:.2f} s")
    return seconds
