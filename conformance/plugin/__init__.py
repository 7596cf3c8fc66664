"""pytest plugin: run the conformance vectors against a candidate inside any pytest session.

Registered by `pip install` (entry point `pytest11`, named `conformance.plugin`, so that
`-p conformance.plugin` and `pytest_plugins = ["conformance.plugin"]` work too). It is inert
until `--bmq-candidate` is given, and while inert it imports nothing but this module and the
option table (`conformance.core.options`): a pytest run that does not use it pays nothing for it.

Active, it collects:

- the vector directories of `--bmq-vectors` (every YAML file in them is a vector file), by
  default the bundled vectors when no test path is given;
- any YAML file named on the command line;
- any other YAML file under the given paths only when it has a vector file's header
  (`schema_version`, `area` and `tests`); a `docker-compose.yaml` is left alone.

Each vector is one test (`vectors/band-bump.yaml::band-bump/4097-saturates`). A candidate that
crashes is a pytest *error* (setup phase); a wrong state is a *failure*. The hooks of an active
run live in `conformance.plugin.hooks`.
"""

from __future__ import annotations

import pytest

from conformance.core.options import SHARED


def pytest_addoption(parser: pytest.Parser) -> None:
    """The options a run shares with `bullmq-conformance run`, as `--bmq-*`."""
    group = parser.getgroup("bullmq-conformance", "BullMQ protocol conformance vectors")
    for option in SHARED:
        option.add_to_pytest(group)


def pytest_configure(config: pytest.Config) -> None:
    """Activate the run when a candidate is selected; otherwise do nothing at all."""
    if config.getoption("bmq_candidate") is None:
        return
    from conformance.plugin.hooks import activate

    activate(config)
