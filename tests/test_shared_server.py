"""The suite on a server it shares (`--redis url:`): every foreign key stays byte-identical, no
FLUSHDB/FLUSHALL is ever sent, and a run leaves none of its own keys behind, also when it is
interrupted. tests/test_final_sweep.py checks the final sweep of `Run.close` on its own.

The server is one we start for this module, so MONITOR sees only our traffic; the suite is
pointed at it by URL, so it treats it as someone else's.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from shared_server_helpers import (
    RUN_ID_RE,
    CommandLog,
    Key,
    all_keys,
    assert_untouched,
    db_url,
    delete_keys,
    dump_all,
    output_of,
    raw_client,
    seed_foreign,
    start_suite,
    stop_child,
    timed,
)

from conformance import servers

FOREIGN_COUNT = 10_000
#: Databases of the module's server: one per test, none the default.
DB_SAFETY, DB_OTHER, DB_INTERRUPT = 9, 0, 10
RUN_TIMEOUT = 600.0
FORBIDDEN = frozenset({"FLUSHDB", "FLUSHALL", "SWAPDB", "MOVE"})
#: Sent on a fresh connection before its SELECT, so MONITOR shows them on db 0.
CONNECTION_SETUP = frozenset({"SELECT", "CLIENT", "HELLO", "AUTH"})


@pytest.mark.slow
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
        timed(f"seeding {len(names) + len(other)} keys", started)
        assert client.dbsize() == FOREIGN_COUNT
        started = time.perf_counter()
        before, before_other = dump_all(client, names), dump_all(other_db, other)
        timed("DUMP + PTTL before", started)
        assert sum(1 for t in before.pttls.values() if t > 0) > 1000

        url = db_url(own_server, DB_SAFETY)
        with CommandLog(own_server) as log:
            started = time.perf_counter()
            proc, report = start_suite(url, tmp_path)
            try:
                code = proc.wait(RUN_TIMEOUT)
            finally:
                stop_child(proc)
            timed("full run", started)
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
        timed("key set + DUMP compare after", started)
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
            timed("start to exit after SIGINT", started)
            log.stop(client)

        print(f"exit code after SIGINT: {code}")
        assert code == 130, output_of(tmp_path)
        assert "stopped by SIGINT" in output_of(tmp_path), output_of(tmp_path)
        leftovers = sorted(k for k in all_keys(client) if b"bmqc-" in k and k not in set(names))
        assert not leftovers, f"keys of the run left behind: {leftovers[:10]}"
        assert_untouched(client, names, before)
        assert FORBIDDEN.isdisjoint(log.names())
    finally:
        delete_keys(client, names)
        if late:
            client.unlink(*late)
        client.close()
