"""Shared fixtures: one throwaway Redis for the whole test session."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conformance import servers
from conformance.core.resources import vectors_dir
from conformance.vectors import Vector, iter_vectors, load_dir
from reference_impl import versions

VECTORS_DIR = vectors_dir()

# The report tests' fixtures (`runs`, `page`), shared by tests/test_report_*.py, and headless
# Chromium's (`chromium`), shared by the page tests.
pytest_plugins = ["report_helpers", "chromium_helpers", "tests.fault_helpers"]


@pytest.fixture(scope="session")
def redis_server() -> Iterator[servers.ServerInfo]:
    """A Redis we own for the session: a redis-server >= 7 on PATH, else the dev extra's
    embedded Valkey (`server_binary`), or what $BMQC_TEST_REDIS names."""
    # Imported here: a plugin module imported by this file before pytest registers it (in
    # pytest_plugins) would not have its asserts rewritten.
    from tests.fault_helpers import redis_spec

    with servers.provision(redis_spec()) as info:
        yield info


@pytest.fixture(scope="session")
def redis_url(redis_server: servers.ServerInfo) -> str:
    """`url:` spec of the session Redis, for runs that must not start their own."""
    return f"url:{redis_server.url}"


@pytest.fixture(scope="module")
def own_server() -> Iterator[servers.ServerInfo]:
    """A Redis of the calling module's own (the session's is shared with other tests), so that
    its keyspace, MONITOR log and command statistics hold only that module's traffic: of the
    tests' spec (`redis_spec`), but never a `url:` server, which is someone else's."""
    from tests.fault_helpers import redis_spec, server_binary

    spec = redis_spec()
    if servers.parse_spec(spec).kind == "url":
        spec = f"local:{server_binary()}"
    with servers.provision(spec) as info:
        yield info


@pytest.fixture(scope="session")
def every_vector() -> list[Vector]:
    """Every bundled vector, of every protocol range."""
    return list(iter_vectors(load_dir(VECTORS_DIR)))


@pytest.fixture(scope="session")
def all_vectors(every_vector: list[Vector]) -> list[Vector]:
    """Every bundled vector of the current protocol (what a run judges by default)."""
    return [v for v in every_vector if v.span.holds(versions.CURRENT)]


@pytest.fixture(scope="session")
def official_scripts() -> Path:
    """The scripts directory of the installed official PyPI bullmq package."""
    from conformance.candidates.clients.package import commands_folder
    from conformance.core.pins import PINNED_VERSION

    bullmq = pytest.importorskip("bullmq",
                                 reason=f"the dev extra installs bullmq=={PINNED_VERSION}")
    path = commands_folder(bullmq)
    assert path is not None, f"{bullmq} has no __file__"
    assert (path / "addDelayedJob-6.lua").is_file(), f"no scripts in {path}"
    return path


@pytest.fixture(scope="session")
def profile_skips(every_vector: list[Vector]) -> Callable[[str], set[str]]:
    """Ids a run under a profile must skip: the vectors of older protocol ranges, the other
    profile's key-naming vectors, and the `cluster` vectors (they need hash-tag) under the
    untagged bullmq profile."""

    def skips(profile: str) -> set[str]:
        return {v.id for v in every_vector
                if (v.profile is not None and v.profile != profile)
                or ("hash-tag" in v.needs and profile == "bullmq")
                or not v.span.holds(versions.CURRENT)}

    return skips

@pytest.fixture(scope="session")
def client_side_ids(every_vector: list[Vector]) -> set[str]:
    """Ids a scripts directory skips: the vectors of an op the client computes or reads without
    a script (`scheduler_ops.CLIENT_SIDE`: cron parity's nextMillis; `getter_ops.PLAIN_READS`:
    a job and its logs read by id)."""
    from reference_impl.getter_ops import PLAIN_READS
    from reference_impl.ops import op_name
    from reference_impl.scheduler_ops import CLIENT_SIDE

    no_script = {*CLIENT_SIDE, *PLAIN_READS}
    return {v.id for v in every_vector if any(op_name(op) in no_script for op in v.when)}


@pytest.fixture(scope="session")
def adapter_v1_skips(every_vector: list[Vector]) -> set[str]:
    """Ids an adapter that speaks adapter protocol version 1 is never sent: the vectors with a
    worker-half op or a field that version 2 added, a flow op or field of version 3, cron
    parity's nextMillis (version 4), a worker's pickUpIteration (version 5), a caller's
    upsertJobScheduler (version 6), a getter or a maintenance call (version 7), or a job
    scheduler script call as a vector gives it (no version has those)."""
    from conformance.candidates.adapter.command import (
        scheduler_part,
        version_2_part,
        version_3_part,
        version_4_part,
        version_5_part,
        version_6_part,
        version_7_part,
    )
    from reference_impl.ops import op_to_dict

    parts = (version_2_part, version_3_part, version_4_part, version_5_part, version_6_part,
             version_7_part, scheduler_part)
    return {v.id for v in every_vector
            if any(part(op_to_dict(op)) is not None for part in parts for op in v.when)}


# A port's repository used as a fixture by test_port_repo.py: its tests are not ours.
collect_ignore = ["port_repo"]


def pytest_configure(config: pytest.Config) -> None:
    """Keep hypothesis's storage (our @given tests' examples, its caches of constants and
    Unicode data) in the suite's cache directory, a temporary one when the cache is off:
    by default it is `.hypothesis/` in the current directory, and our run leaves nothing in
    the checkout. `$HYPOTHESIS_STORAGE_DIRECTORY`, when set, wins."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return
    from hypothesis.configuration import set_hypothesis_home_dir

    from conformance.core.resources import cache_dir

    base = cache_dir()
    if base is None:
        scratch = tempfile.mkdtemp(prefix="bmqc-tests-hypothesis-")
        config.add_cleanup(lambda: shutil.rmtree(scratch, ignore_errors=True))
        base = Path(scratch)
    set_hypothesis_home_dir(base / "hypothesis")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the `installed` tests (they build a wheel and install it in a fresh venv)
    unless the -m expression names them, so that `-m "not slow"` or `-m "not docker"` never
    pulls them in; ci/installed.sh runs them with `-m installed`."""
    if "installed" in (config.option.markexpr or ""):
        return
    kept = [item for item in items if item.get_closest_marker("installed") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept
