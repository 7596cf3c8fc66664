"""The cache of validated vector files: same vectors as a fresh load, keyed by content, pruned."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from conformance.core.resources import CACHE_ENV, vectors_dir
from conformance.vectors import CACHE_MAX_AGE_S, load_file, prune_cache

VECTORS_DIR = vectors_dir()

SMALL = "next-wake.yaml"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(directory))
    return directory


def test_a_cached_load_equals_a_fresh_one(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_file(VECTORS_DIR / SMALL)  # parses, validates, writes the entry
    assert len(list(cache.glob("*.marshal"))) == 1
    cached = load_file(VECTORS_DIR / SMALL)
    monkeypatch.setenv(CACHE_ENV, "off")
    fresh = load_file(VECTORS_DIR / SMALL)
    assert cached == fresh == first
    assert [v.line for v in cached.vectors] == [v.line for v in fresh.vectors]


def test_a_changed_byte_misses_the_cache(cache: Path, tmp_path: Path) -> None:
    copy = tmp_path / SMALL
    shutil.copy(VECTORS_DIR / SMALL, copy)
    load_file(copy)
    copy.write_text(copy.read_text().replace("description: ", "description:  ", 1))
    load_file(copy)
    assert len(list(cache.glob("*.marshal"))) == 2


def test_prune_deletes_only_entries_unused_for_the_max_age(cache: Path, tmp_path: Path) -> None:
    load_file(VECTORS_DIR / SMALL)
    (used,) = cache.glob("*.marshal")
    stale, leftover = cache / ("0" * 64 + ".marshal"), cache / "crashed-writer.tmp"
    stale.write_bytes(b"x")
    leftover.write_bytes(b"x")
    old = time.time() - CACHE_MAX_AGE_S - 60
    for path in (used, stale, leftover):
        os.utime(path, (old, old))
    load_file(VECTORS_DIR / SMALL)  # a hit marks the entry as used again
    assert used.stat().st_mtime > old + 60
    assert prune_cache(cache) == 2
    assert sorted(cache.iterdir()) == [used]
    assert prune_cache(cache) == 0
