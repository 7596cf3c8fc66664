"""pytest plugin: run the conformance vectors against a candidate inside any pytest session.

Registered by `pip install` (entry point `pytest11`, named `conformance.plugin`, so that
`-p conformance.plugin` and `pytest_plugins = ["conformance.plugin"]` work too). It is inert
until `--bmq-candidate` is given, and while inert it imports nothing but this module and
`conformance.defaults`: a pytest run that does not use it pays nothing for it.

Active, it collects:

- the vector directories of `--bmq-vectors` (every YAML file in them is a vector file), by
  default the bundled vectors when no test path is given;
- any YAML file named on the command line;
- any other YAML file under the given paths only when it has a vector file's header
  (`schema_version`, `area` and `tests`); a `docker-compose.yaml` is left alone.

Each vector is one test (`vectors/band-bump.yaml::band-bump/4097-saturates`). A candidate that
crashes is a pytest *error* (setup phase); a wrong state is a *failure*. The hooks of an active
run live in `conformance.active_run`.
"""

from __future__ import annotations

import pytest

from conformance.defaults import (
    ADAPTER_TIMEOUT_S,
    BUNDLED,
    CANDIDATE_SPECS,
    PROPERTY_EXAMPLES,
    REDIS_SPECS,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options, grouped under bullmq-conformance."""
    group = parser.getgroup("bullmq-conformance", "BullMQ protocol conformance vectors")
    group.addoption("--bmq-candidate", metavar="SPEC", default=None,
                    help=f"run the conformance vectors against SPEC: {CANDIDATE_SPECS} "
                         "(default: off; the plugin does nothing without it)")
    group.addoption("--bmq-vectors", metavar="DIR", action="append", default=None,
                    help=f"a vector directory to run: every YAML file in it is a vector file; "
                         f"'{BUNDLED}' names the suite's own vectors; repeatable (default: "
                         f"{BUNDLED} when no test path is given, else none: only the given "
                         "paths' vector files)")
    group.addoption("--bmq-profile", metavar="NAME", default="bullmq",
                    help="key profile: bullmq (bull:<q>:x) or echomq (emq:{<q>}:x) "
                         "(default: bullmq)")
    group.addoption("--bmq-redis", metavar="SPEC", default="auto",
                    help=f"{REDIS_SPECS} (default: auto)")
    group.addoption("--bmq-prefix", metavar="PREFIX", default=None,
                    help="BullMQ's prefix option instead of the profile's (bull / emq), e.g. "
                         "'{bull}' for hash-tagged keys on Redis Cluster (default: the "
                         "profile's)")
    group.addoption("--bmq-report-json", metavar="FILE", default=None,
                    help="write a JSON report of every vector's outcome to FILE "
                         "(default: none)")
    group.addoption("--bmq-expect", metavar="FILE", default=None,
                    help="the candidate's expectations file: id globs with outcome fail|skip "
                         "(listed failures are strict expected failures) (default: none)")
    group.addoption("--bmq-examples", metavar="N", type=int, default=PROPERTY_EXAMPLES,
                    help="random op sequences in the `properties` area, compared with the "
                         "model after every op; 0 leaves the area out "
                         f"(default: {PROPERTY_EXAMPLES})")
    group.addoption("--bmq-seed", metavar="N", type=int, default=None,
                    help="seed of the `properties` area (default: drawn, printed in the header)")
    group.addoption("--bmq-adapter-timeout", metavar="SECONDS", type=float,
                    default=ADAPTER_TIMEOUT_S,
                    help=f"per-op timeout for command: adapters (default: "
                         f"{ADAPTER_TIMEOUT_S:g})")


def pytest_configure(config: pytest.Config) -> None:
    """Activate the run when a candidate is selected; otherwise do nothing at all."""
    if config.getoption("bmq_candidate") is None:
        return
    from conformance.active_run import activate

    activate(config)
