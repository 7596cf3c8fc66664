"""A seed names one properties run wherever it is given: Hypothesis's draws inside the check do
not depend on which modules the process has loaded (CI once shrank the planted band bump to
another sequence than every local run, because its pytest worker had imported other modules
before the test)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from hypothesis import Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from conformance.properties.reproducible import seeded_draws_only

#: The constants of the module the test loads halfway: far from anything Hypothesis or our own
#: modules hold, so a draw of one can only come from that module.
PROBE_BASE = 424242
PROBE_VALUES = range(PROBE_BASE, PROBE_BASE + 50)


def _draws(seed: int) -> list[int]:
    """The integers a seeded Hypothesis test draws over 200 examples."""
    seen: list[int] = []

    @hypothesis_seed(seed)
    @settings(max_examples=200, database=None, derandomize=False, phases=[Phase.generate])
    @given(st.lists(st.integers(0, 10**6), max_size=5))
    def collect(values: list[int]) -> None:
        seen.extend(values)

    collect()
    return seen


def test_draws_do_not_depend_on_the_modules_loaded(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    with seeded_draws_only():
        before = _draws(5)
    # A module outside site-packages and the standard library: Hypothesis counts it as the
    # user's own code and mixes its constants into draws.
    (tmp_path / "bmqc_constants_probe.py").write_text(
        f"VALUES = ({', '.join(str(v) for v in PROBE_VALUES)})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("bmqc_constants_probe")
    # Without the guard the new module's constants show up in the very same seeded run, so the
    # comparison below could fail.
    assert any(v in PROBE_VALUES for v in _draws(5))
    with seeded_draws_only():
        after = _draws(5)
    assert after == before
    assert not any(v in PROBE_VALUES for v in after)
