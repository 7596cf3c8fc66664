"""One seed, one run: Hypothesis's draws made independent of what the process has imported.

Hypothesis draws about one value in twenty from a pool of constants, and half of those come from
the source of the "local" modules loaded so far (every module outside the standard library and
site-packages). Which modules those are depends on how the suite was installed (a checkout's
modules are local, a wheel's are not) and on what the process did before: a pytest worker that ran
other tests first has loaded more of them. So `properties --seed N` generated other sequences in
a checkout than from the wheel, and a test's planted bug was found and shrunk one way on one
machine and another way in CI. While a check runs, the local pool is empty, as it always is for
an installed wheel; the global pool (Hypothesis's own constants) stays, so a seed names the same
run everywhere.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from unittest import mock

from hypothesis.internal.conjecture import providers
from hypothesis.internal.constants_ast import Constants


def _no_local_constants() -> Constants:
    return Constants()


@contextlib.contextmanager
def seeded_draws_only() -> Iterator[None]:
    """While inside, Hypothesis takes no constants from the loaded modules' source. Its cache of
    the constants each draw may take is emptied on the way in (it may hold local ones from an
    earlier test of the process) and on the way out (so the caller's own tests get theirs
    back)."""
    # Internals of Hypothesis (6.1xx). Should a release move them, the check still runs, only
    # without this guarantee; tests/test_properties_reproducible.py fails then, so we hear of it.
    if not (hasattr(providers, "_get_local_constants")
            and hasattr(providers, "CONSTANTS_CACHE")):
        yield
        return
    with mock.patch.object(providers, "_get_local_constants", _no_local_constants):
        providers.CONSTANTS_CACHE.cache.clear()
        try:
            yield
        finally:
            providers.CONSTANTS_CACHE.cache.clear()
