"""The hooks of an active conformance run inside pytest (`--bmq-candidate` was given).

`conformance.plugin` imports this module only then. `activate` starts the run; the registered
`ConformanceRun` collects vector files, provisions Redis (once per session, shared with xdist
workers), adds the `properties` area, records verdicts and writes the JSON report.
"""

from __future__ import annotations

import contextlib
import gc
import os
import secrets
from collections import Counter
from collections.abc import Generator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

import pytest

from conformance.core.errors import (
    CandidateUnusable,
    Exit,
    HarnessError,
    InfrastructureError,
    RedisNotStarted,
    Stopped,
    UsageError,
)
from conformance.core.options import output_file, required_ops
from conformance.core.outcomes import Coverage, Outcome, SkipKind
from conformance.core.queues import QueueNames
from conformance.core.signals import SignalGuard, active
from conformance.plugin.collect import (
    YAML,
    NameMatcher,
    VectorFileCollector,
    naming_homes,
    pasted,
    vector_dirs,
)
from conformance.plugin.items import (
    FOREIGN_PROPERTY,
    PLUGIN_KEY,
    SKIPPED_OPS_PROPERTY,
    PropertiesItem,
    property_shards,
    skip_of,
)
from conformance.reports.json_report import coverage_of, report_document, write_report
from conformance.run.session import Run
from conformance.run.spec import RunOptions
from conformance.servers import ServerInfo
from conformance.servers.common import TOO_MANY_CLIENTS, client_limit, too_many_clients
from conformance.vectors import IdIndex, expectations, looks_like_vector_file

# What an xdist controller hands each worker (workerinput keys).
_SERVER_KEY, _RUN_ID_KEY, _SEED_KEY = "bmq_server", "bmq_run_id", "bmq_seed"
_INFRA_KEY = "bmq_infra"
#: The server's maxclients, as the controller could ask it (None when it could not).
_LIMIT_KEY = "bmq_maxclients"
#: The user property of the item after which a run stopped (it has no verdict).
_STOP_PROPERTY = "bmq_stop"

if TYPE_CHECKING:
    from conformance.properties.children import PropertiesChildren


def activate(config: pytest.Config) -> None:
    """Start the run of `--bmq-candidate`: check the options, add the vector directories to
    what pytest collects, and register the run's hooks. Bad options are a pytest usage error
    (one line)."""
    try:
        run = Run(RunOptions.of(lambda option: config.getoption(option.plugin_name)))
        expect_path = config.getoption("bmq_expect")
        expected = expectations.load(Path(expect_path)) if expect_path else None
        dirs = vector_dirs(config)
        required_ops(config.getoption("bmq_require_ops"))  # a usage error for an unknown op
        report = config.getoption("bmq_report_json")
        output_file("--bmq-report-json", Path(report) if report else None)
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None
    here = config.invocation_params.dir
    config.args[:] = [pasted(arg, here, config.rootpath, naming_homes(dirs))
                      for arg in config.args]
    given = [(here / arg.split("::", 1)[0]).resolve() for arg in config.args]
    # Collected after the given paths; a directory already under one of them is not collected
    # twice (its ids would clash with themselves).
    config.args.extend(str(d) for d in dirs if not any(d.is_relative_to(g) for g in given))
    plugin = ConformanceRun(config, run, expected, dirs)
    config.stash[PLUGIN_KEY] = plugin  # what the items see of it
    config.stash[RUN_KEY] = plugin
    config.pluginmanager.register(plugin, "bullmq-conformance-run")


def warnings(config: pytest.Config) -> list[str]:
    """What the run warns about once it has ended: writes outside the run's queues on a
    shared server (from every worker), and keys the final cleanup had to leave."""
    plugin = config.stash.get(RUN_KEY, None)
    if plugin is None:
        return []
    return plugin.run.warnings(plugin.foreign_writes)


def finished(config: pytest.Config) -> tuple[Coverage, Stopped | None, str | None]:
    """A session's outcomes and skips, why it stopped early if it did, and why it must not
    pass though nothing failed (`Coverage.problem`), for the command line's exit code."""
    plugin = config.stash.get(RUN_KEY, None)
    if plugin is None:
        return Coverage(), None, None
    return plugin.coverage(), plugin.stopped, plugin.gate()


class ConformanceRun:
    """The hooks of an active run, with its Redis, candidate and verdicts."""

    def __init__(self, config: pytest.Config, run: Run,
                 expected: expectations.Expectations | None, dirs: list[Path]) -> None:
        self.config = config
        self.run = run
        self.expected = expected
        self.dirs = dirs
        self.homes = naming_homes(dirs)
        self.stopped: Stopped | None = None
        self._signals = contextlib.ExitStack()
        self.verdicts: list[dict[str, Any]] = []
        #: Names outside the run a shared server saw written during vectors, by how many.
        self.foreign_writes: Counter[str] = Counter()
        self.ids = IdIndex()
        self.examples: int = config.getoption("bmq_examples")
        seed = config.getoption("bmq_seed")
        worker = getattr(config, "workerinput", {})
        # xdist workers take the controller's seed, so the header's seed is the one that ran.
        drawn = worker.get(_SEED_KEY, secrets.randbelow(2**31))
        self.seed: int = seed if seed is not None else drawn
        #: The properties items' child processes, when they run beside the vectors.
        self.properties_children: PropertiesChildren | None = None
        #: This xdist worker could not attach to the controller's server (see
        #: pytest_runtest_setup); a stop handed down by the controller is not its own.
        self._worker_stopped = False
        self._maxclients: int | None = None  # the server's, asked when the run starts

    def coverage(self) -> Coverage:
        """The outcomes and skips recorded so far (on an xdist controller: every worker's)."""
        return coverage_of(self.verdicts)

    def gate(self) -> str | None:
        """Why the run must fail though nothing failed (nothing judged, or an op of
        `--bmq-require-ops` skipped), in one line; None when it need not, or when it stopped
        early (its own reason then stands)."""
        if self.stopped is not None:
            return None
        return self.coverage().problem(required_ops(self.config.getoption("bmq_require_ops")))

    def abort(self, item: pytest.Item, exc: InfrastructureError | CandidateUnusable) -> NoReturn:
        """Stop the session after `item`, which is skipped and gets no verdict; the exit code
        is 3 (Redis) or 4 (candidate).

        pytest.exit() is not used: it prints a traceback line of its own, and in an xdist
        worker it is an internal error. `shouldstop` ends a serial run after this item, and an
        xdist worker passes it to the controller, which stops every worker.
        """
        self._stop_at(item, Stopped.of(self._limit_named(exc)))

    def _stop_at(self, item: pytest.Item, stop: Stopped) -> NoReturn:
        self.stopped = stop
        item.user_properties.append((_STOP_PROPERTY, [int(stop.code), stop.message]))
        item.session.shouldstop = stop.message
        pytest.skip(stop.message)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Start Redis before the header is printed.

        Under xdist the controller provisions the one server and its workers attach to it,
        each on its own database where the engine has several, always with its own queue names.
        """
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        worker: dict[str, Any] | None = getattr(self.config, "workerinput", None)
        if worker is not None:
            # The controller passes a signal on to its workers; Python's own SIGINT handler
            # would lose it when it lands in a finalizer, and the worker would run on.
            self._signals = contextlib.ExitStack()
            self._signals.enter_context(SignalGuard().installed(worker=True))
        try:
            if worker is not None and worker.get(_INFRA_KEY):
                self.stopped = Stopped(Exit(worker[_INFRA_KEY][0]), worker[_INFRA_KEY][1])
                return
            if worker is not None and _SERVER_KEY in worker:
                self._attach_worker(worker)
            elif _is_xdist_controller(self.config):
                self.run.provision()
            else:
                self.run.start()
            if worker is None and self.run.client is not None:
                self._maxclients = client_limit(self.run.client)
        except UsageError as exc:  # e.g. an untagged profile on a url: server that is a cluster
            raise pytest.UsageError(str(exc)) from None
        except (InfrastructureError, CandidateUnusable) as exc:
            # pytest.exit() here would skip sessionfinish; stop before collecting instead.
            self.stopped = Stopped.of(self._limit_named(exc))
            self._worker_stopped = worker is not None
            if reporter is not None:
                reporter.write_line(self.stopped.message, red=True)
            return
        if reporter is not None and self.config.get_verbosity() < 0:
            for line in self.header_lines():  # -q hides pytest's header, not ours
                reporter.write_line(line)

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        """In an xdist worker: the interrupt landed (see conformance.core.signals)."""
        active().acknowledge()

    def _attach_worker(self, worker: dict[str, Any]) -> None:
        server = ServerInfo(**worker[_SERVER_KEY])
        index = int(str(worker.get("workerid", "gw0")).removeprefix("gw") or 0)
        self.run.names = QueueNames(worker[_RUN_ID_KEY]).part(f"w{index}")
        self.run.attach(server, worker_db(server, index))
        self.run.start_candidate()

    def _limit_named(self, exc: InfrastructureError | CandidateUnusable
                     ) -> InfrastructureError | CandidateUnusable:
        """`exc`, or for a refusal past the server's maxclients, the one line that names the
        limit. The refusal may surface anywhere a connection is made (the attach, a pool's
        new connection during a vector, a health check), under any wording of ours."""
        if not isinstance(exc, InfrastructureError) or TOO_MANY_CLIENTS not in str(exc):
            return exc
        worker: dict[str, Any] | None = getattr(self.config, "workerinput", None)
        # Asked when the run started: a connection refused now leaves none to ask with.
        limit = worker.get(_LIMIT_KEY) if worker is not None else self._maxclients
        return InfrastructureError(too_many_clients(limit))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist: hand each worker the controller's server and run id (or its failure)."""
        if self.stopped is not None or self.run.server is None:
            stop = self.stopped or Stopped.of(RedisNotStarted())
            node.workerinput[_INFRA_KEY] = [int(stop.code), stop.message]
            return
        node.workerinput[_SERVER_KEY] = asdict(self.run.server)
        node.workerinput[_RUN_ID_KEY] = self.run.names.run_id
        node.workerinput[_SEED_KEY] = self.seed
        node.workerinput[_LIMIT_KEY] = self._maxclients

    def pytest_collect_file(self, file_path: Path,
                            parent: pytest.Collector) -> pytest.Collector | None:
        """A YAML file is a vector file in a `--bmq-vectors` directory, when named on the
        command line, or when it has a vector file's header; any other is left alone."""
        if file_path.suffix not in YAML:
            return None
        home = next((d for d in self.dirs if file_path.is_relative_to(d)), None)
        if home is None and not (parent.session.isinitpath(file_path)
                                 or looks_like_vector_file(file_path)):
            return None
        nodeid = None
        # A file named on the command line is named as when its directory is collected.
        home = home or next((d for d in self.homes if file_path.is_relative_to(d)), None)
        if home is not None and not file_path.is_relative_to(self.config.rootpath):
            # Outside the rootdir pytest would name the file relative to the directory alone
            # (`band-bump.yaml::...`); keep the directory's name, as in the checkout.
            nodeid = f"{home.name}/{file_path.relative_to(home).as_posix()}"
        return VectorFileCollector.from_parent(parent, path=file_path, nodeid=nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Any:
        """Collect vector files here, before any other plugin.

        `--lf` skips, unread, every file outside the paths of the last failures, which it finds
        by joining their node ids to the rootdir; bundled vectors live outside the rootdir, so
        after a port's own test had failed too, failed vectors would never run again. Collected
        here, they are filtered by node id like any test (pytest_collection_modifyitems).
        """
        if not isinstance(collector, VectorFileCollector):
            return None
        try:
            items: list[pytest.Item | pytest.Collector] = list(collector.collect())
        except Exception:
            excinfo = pytest.ExceptionInfo.from_current()
            return pytest.CollectReport(collector.nodeid, "failed",
                                        collector.repr_failure(excinfo), None)
        return pytest.CollectReport(collector.nodeid, "passed", None, items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Exempt the loaded vectors from garbage collection: they live for the whole run,
        and rescanning them in every collection slows each vector down."""
        gc.freeze()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> bool | None:
        """Collect nothing when Redis could not be started.

        An xdist worker must still report a collection, or its controller waits forever; it
        collects and then deselects everything (see pytest_collection_modifyitems).
        """
        if self.stopped is not None and not hasattr(self.config, "workerinput"):
            return True
        return None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """An xdist worker that could not attach to the server while others could stops the
        run at its first item, with its reason. It collected what they did (xdist refuses to
        run when its workers' collections differ), and this is how its controller hears."""
        if self._worker_stopped and self.stopped is not None:
            self._stop_at(item, self.stopped)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """The run header: suite version, candidate, profile, Redis engine and version, seed."""
        return self.header_lines()

    def header_lines(self) -> list[str]:
        """The run's header, how `properties` will run, and a note when `-n` slows it down."""
        return [self.run.header(), self.properties_line(), *self._parallel_note()]

    def _parallel_note(self) -> list[str]:
        """Under `-n`, a candidate whose serial run is pipelined loses its batches and its
        properties children: on few cores the run is then slower, not faster (2 CPUs: about
        half the speed), which the user who asked for `-n` should hear."""
        workers = getattr(self.config.option, "numprocesses", None)
        if not workers or not _is_xdist_controller(self.config):
            return []
        from conformance.run import batch

        cpus = os.cpu_count() or 1
        if not batch.pipelined(self.run.candidate, self.run.server) or cpus > 4:
            return []
        return [f"note: -n {workers} runs each vector on its own in its worker; a serial run "
                f"of this candidate sends them in batches and checks properties in child "
                f"processes, and is faster on {cpus} CPU{'s' if cpus > 1 else ''}"]

    def properties_line(self) -> str:
        """How the `properties` area will run (reproduce with --bmq-seed / --seed)."""
        if self.examples <= 0:
            return "properties: off (--examples 0)"
        parts = property_shards(self.examples, self.seed)
        split = f" in {len(parts)} shards (seeds {self.seed}..{parts[-1][2]})" \
            if len(parts) > 1 else ""
        return f"properties: {self.examples} examples{split}, seed {self.seed}"

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        """Add the `properties` area after the vectors (subject to -k like any test); not in
        an `identify` run, which judges every range and has no one model to compare with."""
        if self.stopped is not None and not self._worker_stopped:
            items.clear()
            return
        if self.examples <= 0 or self.run.protocol is None:
            return
        keyword = config.getoption("keyword")
        matcher = None
        if keyword:
            from _pytest.mark.expression import Expression

            matcher = Expression.compile(keyword)
        for name, examples, seed in property_shards(self.examples, self.seed):
            if matcher is not None and not matcher.evaluate(NameMatcher(name)):
                continue
            items.append(PropertiesItem.from_parent(session, name=name, examples=examples,
                                                    seed=seed))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Record each vector's outcome for the JSON report (works under xdist too)."""
        props = dict(report.user_properties)
        if report.when == "setup":  # each vector's once (its setup report), from any worker
            self.foreign_writes.update(cast(list[str], props.get(FOREIGN_PROPERTY, [])))
        if _STOP_PROPERTY in props:
            if self.stopped is None:  # on an xdist controller: a worker's stop
                code, message = cast(list[Any], props[_STOP_PROPERTY])
                self.stopped = Stopped(Exit(code), str(message))
            return
        if "area" not in props:
            return
        outcome = outcome_of(report)
        if outcome is None:
            return
        message = props.get("message", "")
        verdict = {"id": report.nodeid.split("::", 1)[-1], "area": props["area"],
                   "outcome": outcome, "message": message}
        if "protocol" in props:
            verdict["protocol"] = props["protocol"]
            verdict["range"] = props["range"]
        kind, ops = skip_of(report.user_properties)
        if outcome is Outcome.SKIPPED:
            verdict["skip"] = (kind or SkipKind.CANDIDATE).value
        if ops:
            verdict[SKIPPED_OPS_PROPERTY] = list(ops)
        self.verdicts.append(verdict)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Start the properties items in child processes, where the run allows it
        (`conformance.properties.children`)."""
        xdist = hasattr(self.config, "workerinput") or _is_xdist_controller(self.config)
        shards = [(item.name, item.examples, item.seed) for item in session.items
                  if isinstance(item, PropertiesItem)]
        if shards and self.stopped is None and not xdist and not self.config.option.collectonly:
            from conformance.properties import children

            # Held before the fork: sessionfinish stops what it holds, even after a signal
            # that lands as start() returns.
            self.properties_children = children.PropertiesChildren([], {})
            if children.start(self.run, shards, into=self.properties_children) is None:
                self.properties_children = None

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        """Write the JSON report and turn an early stop into its exit code, before any other
        plugin's sessionfinish; stop Redis and the candidate after all of them (xdist's stops
        the workers), even when one of them fails: nothing the run started outlives it."""
        try:
            self._finish(session)
            yield
        except OSError as exc:
            if not _raised_in(exc, "_pytest.junitxml"):
                raise
            junit = self.config.getoption("xmlpath")
            self._unwritten(session, Stopped.unwritten("the JUnit XML report", junit, exc))
        finally:
            # Nested: a signal delivered again during the children's stop must not skip the
            # server's (each child dies with this process anyway: children.die_with_parent).
            try:
                if self.properties_children is not None:
                    self.properties_children.stop()
            finally:
                try:
                    self.run.close()
                finally:
                    self._signals.close()

    def _unwritten(self, session: pytest.Session, stop: Stopped) -> None:
        """A report that could not be written at the end: one line, exit 2 (an earlier stop's
        code stands)."""
        self.stopped = self.stopped or stop
        session.exitstatus = int(self.stopped.code)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:  # a port's own pytest run (`run` prints the stop itself)
            reporter.write_line(f"bullmq-conformance: {stop.message}", red=True)

    def _finish(self, session: pytest.Session) -> None:
        """Stop the properties child, set the exit status, write the JSON report."""
        if self.properties_children is not None:
            self.properties_children.stop()
            self.properties_children = None
        if self.stopped is not None:
            session.exitstatus = int(self.stopped.code)
        elif not hasattr(self.config, "workerinput") and (gate := self.gate()) is not None:
            # In a port's own pytest run (`run` prints the line itself, and sets the code).
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"bullmq-conformance: {gate}", red=True)
        path = self.config.getoption("bmq_report_json")
        if path and not hasattr(self.config, "workerinput"):
            document = report_document(self.run, self.verdicts, seed=self.seed,
                                       examples=self.examples)
            try:
                write_report(Path(path), document)
            except OSError as exc:
                self._unwritten(session, Stopped.unwritten("the JSON report", path, exc))


#: The active run on the pytest config (its hooks, verdicts and collected ids).
RUN_KEY = pytest.StashKey[ConformanceRun]()


def outcome_of(report: pytest.TestReport) -> Outcome | None:
    """A vector's outcome from its setup or call report (None for the other reports, and for
    the item after which the run stopped: it has no verdict)."""
    if any(name == _STOP_PROPERTY for name, _ in report.user_properties):
        return None
    if hasattr(report, "wasxfail") and report.when in ("setup", "call") and report.skipped:
        return Outcome.XFAILED
    if report.when == "setup" and report.failed:
        return Outcome.ERRORED
    if report.when == "setup" and report.skipped:
        return Outcome.SKIPPED
    if report.when == "call":
        return Outcome.FAILED if report.failed else Outcome.PASSED
    return None


def worker_db(server: ServerInfo, index: int) -> int | None:
    """The database xdist worker `index` uses: its own (1-15) on a server the suite started,
    None (the URL's) on a user's `url:` server, where other databases are not ours, and on a
    cluster, which has only database 0."""
    return 1 + index % 15 if server.private else None


def _raised_in(exc: BaseException, module: str) -> bool:
    """Whether `exc` was raised in code of `module` (a write error names no file to tell
    whose it was)."""
    trace = exc.__traceback__
    while trace is not None:
        if trace.tb_frame.f_globals.get("__name__") == module:
            return True
        trace = trace.tb_next
    return False


def _is_xdist_controller(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(
        config, "workerinput")
