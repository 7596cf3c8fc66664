"""The `bullmq-py` candidate's skip reasons name the package that is installed (its distribution
and version) and the scripts it really ships, whichever release that is."""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.candidates.clients import package
from conformance.candidates.clients.bullmq_py import PythonClientCandidate
from conformance.candidates.clients.package import shipped_scripts
from conformance.core.errors import CandidateSkipped
from conformance.core.pins import PINNED_VERSION
from conformance.core.queues import QueueNames, QueueRef
from conformance.servers import ServerInfo, client_for
from conformance.state import snapshot
from reference_impl import versions
from reference_impl.keys import BULLMQ
from reference_impl.ops import ChangeDelay, Op
from reference_impl.worker_ops import ReleaseLock

bullmq = pytest.importorskip("bullmq", reason=f"the dev extra installs bullmq=={PINNED_VERSION}")

T = 1_700_000_000_000


def _package(root: Path, *scripts: str) -> types.ModuleType:
    """A stand-in `bullmq` module whose folder holds `commands/<script>` files."""
    (root / "bullmq" / "commands").mkdir(parents=True)
    (root / "bullmq" / "__init__.py").write_text("")
    for name in scripts:
        (root / "bullmq" / "commands" / name).write_text("return 0\n")
    module = types.ModuleType("bullmq")
    module.__file__ = str(root / "bullmq" / "__init__.py")
    return module


def test_shipped_scripts_lists_the_files_of_the_package_folder(tmp_path: Path) -> None:
    module = _package(tmp_path, "changeDelay-3.lua", "releaseLock-1.lua", "promote-8.lua")
    assert shipped_scripts(module, "changeDelay") == ["changeDelay-3.lua"]
    assert shipped_scripts(module, "releaseLock") == ["releaseLock-1.lua"]
    assert shipped_scripts(module, "moveToFinished") == []
    assert shipped_scripts(types.ModuleType("bullmq"), "releaseLock") == []  # no __file__


@pytest.fixture
def another_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """The installed `bullmq` import, as if another distribution and version provided it."""
    monkeypatch.setattr(package, "provider", lambda module: ("bullmq-fork", "2.9.9"))


@pytest.fixture
def candidate(redis_server: ServerInfo, another_release: None
              ) -> Iterator[PythonClientCandidate]:
    """A started candidate on `another_release` (it reads the distribution as it starts)."""
    made = PythonClientCandidate()
    made.start(redis_server.url, BULLMQ)
    yield made
    made.close()


def _skip_reason(candidate: PythonClientCandidate, redis_server: ServerInfo, op: Op) -> str:
    client = client_for(redis_server)
    queue = QueueRef(BULLMQ, QueueNames().next(), versions.CURRENT)
    try:
        with pytest.raises(CandidateSkipped) as caught:
            candidate.apply(client, queue, op)
    finally:
        snapshot.delete_queue(client, queue)
    return str(caught.value)


def test_skip_reasons_name_the_installed_distribution_and_version(
        candidate: PythonClientCandidate, redis_server: ServerInfo) -> None:
    # The scripts named are the ones the installed package (the pinned PyPI bullmq) ships.
    assert _skip_reason(candidate, redis_server, ReleaseLock("1", "tok")) == (
        "bullmq-fork 2.9.9 has no client call of releaseLock-1 (it ships releaseLock-1.lua, "
        "unused)")
    assert _skip_reason(candidate, redis_server, ChangeDelay("1", 1000, T)) == (
        "bullmq-fork 2.9.9 has no Job.changeDelay, and its Scripts does not load the "
        "changeDelay-4.lua it ships")


def test_skip_reasons_name_the_scripts_the_installed_package_ships(
        candidate: PythonClientCandidate, redis_server: ServerInfo, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # As an older release ships them: changeDelay-3.lua (before 5.1.9's -4) and no releaseLock.
    fake = _package(tmp_path, "changeDelay-3.lua")
    monkeypatch.setattr(bullmq, "__file__", fake.__file__)
    assert _skip_reason(candidate, redis_server, ReleaseLock("1", "tok")) == (
        "bullmq-fork 2.9.9 has no client call of releaseLock-1 (it ships no releaseLock "
        "script)")
    assert _skip_reason(candidate, redis_server, ChangeDelay("1", 1000, T)).endswith(
        "does not load the changeDelay-3.lua it ships")
