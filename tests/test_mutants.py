"""The mutation self-test: the catalog applies to both script directories, and every mutant is
killed by some vector (`bullmq-conformance mutants` exits 0 with a 100% score)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import cli
from conformance.checks import mutants
from conformance.checks.mutant_catalog import CATALOG, QUEUE_MUTANTS, Mutant
from conformance.checks.mutant_hints import FIRST_TRIED
from conformance.core.resources import lua_dir
from conformance.run.spec import profile_for
from conformance.vectors import Vector
from tests import cli_helpers

LUA_DIR = lua_dir()


def test_catalog_has_at_least_25_uniquely_named_mutants() -> None:
    names = [m.name for m in CATALOG]
    assert len(CATALOG) >= 25
    assert len(set(names)) == len(names)
    assert all(m.defect and m.ours and m.official for m in CATALOG)


def test_the_worker_half_has_at_least_22_mutants() -> None:
    worker = [m for m in CATALOG if m not in QUEUE_MUTANTS]
    assert len(worker) >= 22
    assert len(CATALOG) == len(QUEUE_MUTANTS) + len(worker)


@pytest.mark.parametrize("mutant", CATALOG, ids=lambda m: m.name)
def test_mutant_applies_to_our_lua(mutant: Mutant) -> None:
    changed = mutants.mutate(mutants.read_scripts(LUA_DIR), mutant, "includes")
    assert changed, "no file changed"


@pytest.mark.parametrize("mutant", CATALOG, ids=lambda m: m.name)
def test_mutant_applies_to_the_official_scripts(mutant: Mutant, official_scripts: Path) -> None:
    assert mutants.flavor_of(official_scripts) == "inlined"
    changed = mutants.mutate(mutants.read_scripts(official_scripts), mutant, "inlined")
    assert changed, "no file changed"


def test_write_mutant_changes_only_the_copy(tmp_path: Path) -> None:
    mutant = next(m for m in CATALOG if m.name == "shift-0x800")
    original = (LUA_DIR / "includes/getDelayedScore.lua").read_text()
    mutants.write_mutant(LUA_DIR, tmp_path / "copy", mutant)
    mutated = (tmp_path / "copy/includes/getDelayedScore.lua").read_text()
    assert "fireAt * 0x800" in mutated and "fireAt * 0x800" not in original
    assert (LUA_DIR / "includes/getDelayedScore.lua").read_text() == original


def test_unmatched_or_ambiguous_patterns_are_catalog_errors() -> None:
    nowhere = Mutant("nowhere", "x", (("no such text", "y"),), (("no such text", "y"),))
    with pytest.raises(mutants.CatalogError, match="matches no script"):
        mutants.check_catalog(LUA_DIR, [nowhere])
    everywhere = Mutant("everywhere", "x", (("local rcall = redis.call", "y"),), ())
    with pytest.raises(mutants.CatalogError, match="it must be in one"):
        mutants.check_catalog(LUA_DIR, [everywhere])
    with pytest.raises(mutants.CatalogError, match="duplicate"):
        mutants.check_catalog(LUA_DIR, [CATALOG[0], CATALOG[0]])


def test_affected_scripts_follow_includes(tmp_path: Path, official_scripts: Path) -> None:
    # removeLock is one include of ours, inlined into each official script that takes a job
    # out of active: either way the same scripts are affected.
    mutant = next(m for m in CATALOG if m.name == "lock-key-kept")
    for source in (LUA_DIR, official_scripts):
        target = tmp_path / source.name
        mutants.write_mutant(source, target, mutant)
        affected = mutants.affected_scripts(mutants.resolved_scripts(source), target)
        assert {"moveToFinished", "retryJob", "moveToDelayed"} <= affected
        assert not affected & {"moveToActive", "addStandardJob", "moveStalledJobsToWait"}


def test_scripts_using_the_changed_files_are_the_affected_scripts(
        tmp_path: Path, official_scripts: Path) -> None:
    # The fast path `mutants` takes (which files each script is made of) names exactly the
    # scripts whose inlined text a mutant changes, for every mutant on both script sets.
    for source in (LUA_DIR, official_scripts):
        files, resolved = mutants.script_files(source), mutants.resolved_scripts(source)
        for mutant in CATALOG:
            target = tmp_path / f"{source.name}-{mutant.name}"
            changed = mutants.write_mutant(source, target, mutant)
            assert changed
            assert mutants.scripts_using(files, changed) == \
                mutants.affected_scripts(resolved, target), (source.name, mutant.name)


def test_a_mutant_resolved_in_memory_is_the_mutant_written_out(
        tmp_path: Path, official_scripts: Path) -> None:
    # `mutants` writes no folder: each script made of a changed file is resolved from memory.
    # It must be the text that the written mutant's folder resolves to, script by script.
    for source in (LUA_DIR, official_scripts):
        scripts = mutants.ScriptSet.read(source)
        for mutant in CATALOG:
            target = tmp_path / f"{source.name}-{mutant.name}"
            mutants.write_mutant(source, target, mutant)
            changed = mutants.mutate(scripts.texts, mutant, mutants.flavor_of(source))
            in_memory = scripts.mutated(changed)
            assert in_memory == mutants.resolved_scripts(target), (source.name, mutant.name)
            assert in_memory != scripts.resolved


def test_scripts_called_by_a_vector(all_vectors: list[Vector]) -> None:
    by_id = {v.id: v for v in all_vectors}
    assert mutants.scripts_called(by_id["pause/legacy-rename"]) >= {"pause"}
    adds = [v for v in all_vectors if v.when and type(v.when[0]).__name__ == "Add"]
    assert {"addStandardJob", "addDelayedJob", "addPrioritizedJob"} <= \
        mutants.scripts_called(adds[0])
    assert mutants.script_name("moveToFinished-14.lua") == "moveToFinished"


def test_big_vectors_run_last(all_vectors: list[Vector]) -> None:
    ordered = mutants.order_vectors(all_vectors, profile_for("bullmq"))
    last = {v.id for v in ordered[-5:]}
    assert {"band-bump/4097-saturates", "promote-range/1001-due",
            "pause/legacy-7001-leaves-one"} <= last
    assert all(v.profile in (None, "bullmq") for v in ordered)


def test_catalog_error_exits_2(monkeypatch: pytest.MonkeyPatch, redis_url: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    bad = Mutant("bad", "x", (("no such text", "y"),), (("no such text", "y"),))
    monkeypatch.setattr(mutants, "CATALOG", (bad,))
    assert cli.main(["mutants", "--redis", redis_url]) == 2
    assert "catalog error: mutant bad" in capsys.readouterr().err


def test_a_surviving_mutant_exits_1(monkeypatch: pytest.MonkeyPatch, redis_url: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    # Equivalent by construction: 7000 + 0 is 7000.
    same = Mutant("equivalent", "no defect", (("LEGACY_BATCH = 7000", "LEGACY_BATCH = 7000 + 0"),),
                  ())
    monkeypatch.setattr(mutants, "CATALOG", (same,))
    assert cli.main(["mutants", "--redis", redis_url]) == 1
    out = capsys.readouterr().out
    assert "SURVIVED" in out and "0/1 killed (0%)" in out


@pytest.mark.slow
@pytest.mark.parametrize("scripts", ["reference", "official"])
def test_every_mutant_is_killed(scripts: str, redis_url: str, official_scripts: Path) -> None:
    proc = cli_helpers.cli("mutants", "--scripts", scripts, "--redis", redis_url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "100%" in proc.stdout
    assert f"{len(CATALOG)}/{len(CATALOG)} killed" in proc.stdout


def test_every_mutant_has_a_hint_naming_a_current_vector(all_vectors: list[Vector]) -> None:
    current = {v.id for v in mutants.order_vectors(all_vectors, profile_for("bullmq"))}
    assert set(FIRST_TRIED) == {m.name for m in CATALOG}
    stale = {name: hint for name, hint in FIRST_TRIED.items() if hint not in current}
    assert not stale, "hints naming no vector of the current protocol"


def _one_mutant(monkeypatch: pytest.MonkeyPatch, redis_url: str,
                capsys: pytest.CaptureFixture[str], hint: str) -> str:
    """The line `mutants` prints for shift-0x800 (a delayed add's score shifted 11 bits, not
    12) run first against `hint`."""
    mutant = next(m for m in CATALOG if m.name == "shift-0x800")
    monkeypatch.setattr(mutants, "CATALOG", (mutant,))
    monkeypatch.setattr(mutants, "FIRST_TRIED", {mutant.name: hint})
    assert cli.main(["mutants", "--redis", redis_url]) == 0
    return next(line for line in capsys.readouterr().out.splitlines()
                if line.strip().startswith("shift-0x800"))


def test_the_hinted_vector_runs_first(monkeypatch: pytest.MonkeyPatch, redis_url: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    # Any delayed add kills it; without the hint another vector does first.
    line = _one_mutant(monkeypatch, redis_url, capsys, "delayed-score/delay-5000")
    assert "killed" in line and "delayed-score/delay-5000" in line


def test_a_hint_that_does_not_kill_costs_time_not_the_verdict(
        monkeypatch: pytest.MonkeyPatch, redis_url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Pausing a queue computes no delayed score: the other vectors still run and kill it.
    line = _one_mutant(monkeypatch, redis_url, capsys, "pause/legacy-rename")
    assert "killed" in line and "pause/legacy-rename" not in line
