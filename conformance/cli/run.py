"""`bullmq-conformance run`: the vectors through pytest and the plugin, and an exit code.

The run is a pytest session with our plugin only (no user config, conftest or other plugins),
so it does not depend on the current directory. Its options reach the plugin through the one
option table (`conformance.core.options.plugin_args`).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import pytest

from conformance.core import options
from conformance.core.errors import Exit, Stopped, UsageError
from conformance.core.outcomes import Coverage

if TYPE_CHECKING:
    from conformance.cli.terminal import RunReporter
    from conformance.core.signals import SignalGuard


class _Collector:
    """A pytest plugin object that keeps what the exit code needs: the run's tally, its
    infrastructure failure, and collection errors (vector files that do not load)."""

    def __init__(self) -> None:
        self.coverage = Coverage()
        self.collect_errors: list[str] = []
        self.stopped: Stopped | None = None
        #: Why the run must fail though nothing failed (`Coverage.problem`).
        self.gate: str | None = None
        #: What the run warns about at its end (`conformance.plugin.hooks.warnings`).
        self.warnings: list[str] = []

    def pytest_unconfigure(self, config: Any) -> None:
        # Not at sessionfinish: a plugin whose sessionfinish fails (a --junit-xml file that
        # cannot be written) skips the others', and the run's stop is known only after it.
        from conformance.plugin.hooks import finished, warnings

        self.coverage, self.stopped, self.gate = finished(config)
        self.warnings = warnings(config)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(report.longreprtext.strip().splitlines()[-1])


class _Workers:
    """A pytest plugin that tells the signal guard when pytest caught its interrupt, and
    hands it xdist's worker processes."""

    def __init__(self, guard: SignalGuard) -> None:
        self.guard = guard

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        """pytest caught the interrupt and will finish the session."""
        self.guard.acknowledge()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Remember each worker's process, to pass a signal on to it."""
        popen = getattr(getattr(node.gateway, "_io", None), "popen", None)
        if popen is not None:
            self.guard.worker_pids.append(popen.pid)


def _check(args: argparse.Namespace) -> Path:
    """Validate everything that can be checked before Redis starts; return the vector dir."""
    from conformance.core.resources import cache_dir
    from conformance.run.session import Run
    from conformance.run.spec import RunOptions
    from conformance.vectors import vector_files

    # The candidate and Redis specs, the profile and prefix, and what cannot run on a cluster.
    Run(RunOptions.of(lambda option: getattr(args, option.name)))
    options.required_ops(args.require_ops)  # an op name that is no op
    if args.expect:
        from conformance.vectors.expectations import load

        load(args.expect)
    vector_files(args.vectors)  # a clear error for a missing or empty directory
    # Reports are written at the end: a path that cannot take one is refused now, before
    # Redis starts, not after every vector ran.
    options.output_file("--report-json", args.report_json)
    options.output_file("--summary-md", args.summary_md)
    options.output_file("--junit-xml", args.junit_xml)
    if (args.last_failed or args.failed_first) and cache_dir() is None:
        raise UsageError("--lf and --ff remember failures in the cache, which "
                         "BULLMQ_CONFORMANCE_CACHE_DIR=off turns off")
    if args.numprocesses not in (None, "0") and importlib.util.find_spec("xdist") is None:
        raise UsageError("-n needs pytest-xdist: pip install pytest-xdist")
    return Path(args.vectors).resolve()


def pytest_argv(args: argparse.Namespace, vectors: Path) -> list[str]:
    """The pytest command line of a run."""
    # Every YAML file of the directory is a vector file (--bmq-vectors), header or not. The
    # rootdir is the current directory only because pytest prints ids relative to it: vectors
    # outside it (an installed wheel's) are then named `vectors/<file>::<id>`.
    argv = [str(vectors), "--bmq-vectors", str(vectors), "-c", os.devnull,
            "--rootdir", str(Path.cwd()), "--confcutdir", str(vectors),
            "--disable-plugin-autoload", "-p", "conformance.plugin",
            # conformance.cli.terminal reports instead, without pytest's internals
            "-p", "no:terminal",
            # it runs gc.collect() five times at exit: 0.4 s over the loaded vectors
            "-p", "no:unraisableexception",
            "-W", "ignore::pytest.PytestAssertRewriteWarning",
            *(["-x"] if args.exitfirst else []),
            *(["--lf"] if args.last_failed else []), *(["--ff"] if args.failed_first else []),
            *_cache_args(),
            *options.plugin_args(options.RUN, args)]
    if args.junit_xml:
        argv += ["--junitxml", str(args.junit_xml)]
    if args.keyword:
        argv += ["-k", args.keyword]
    if args.numprocesses not in (None, "0"):
        argv += ["-p", "xdist", "-n", args.numprocesses]
    return argv


def _cache_args() -> list[str]:
    """Where --lf and --ff find last time's failures: the user cache, one folder per current
    directory (never a .pytest_cache in it); without a cache, no memory of failures."""
    from conformance.core.resources import cache_dir

    base = cache_dir()
    if base is None:
        return ["-p", "no:cacheprovider"]
    here = hashlib.sha256(str(Path.cwd()).encode()).hexdigest()[:16]
    return ["-o", f"cache_dir={base / 'last-run' / here}"]


def main(args: argparse.Namespace) -> int:
    """Run the vectors; map the outcome to an exit code."""
    from conformance.core.signals import active

    return run_with(args, active())


def run_with(args: argparse.Namespace, guard: SignalGuard, verbosity: int | None = None,
         out: TextIO | None = None, reporter: RunReporter | None = None) -> int:
    """The run of `args`; `verbosity` overrides -q / -v (see `RunReporter`), `out` is where
    the progress goes (standard output); `reporter` replaces the reporter they make."""
    from conformance.cli.terminal import RunReporter

    vectors = _check(args)
    with tempfile.TemporaryDirectory(prefix="bmqc-report-") as scratch:
        if args.summary_md is not None and args.report_json is None:
            # The summary is built from the JSON report the plugin writes.
            args.report_json = Path(scratch) / "report.json"
        collector = _Collector()
        if verbosity is None:
            verbosity = -1 if args.quiet else int(args.verbose)
        reporter = reporter or RunReporter(verbosity=verbosity, out=out)
        plugins = [collector, reporter, _Workers(guard)]
        code = pytest.main(pytest_argv(args, vectors), plugins=plugins)
        if args.summary_md is not None:
            from conformance.reports.json_report import write_summary

            try:
                write_summary(args.summary_md, args.report_json)
            except OSError as exc:
                collector.stopped = collector.stopped or Stopped.unwritten(
                    "the summary", args.summary_md, exc)
    for line in collector.warnings:
        print(f"bullmq-conformance: {line}", file=sys.stderr)
    if guard.received is not None:
        return guard.report()
    if collector.stopped is not None:
        print(f"bullmq-conformance: {collector.stopped.message}", file=sys.stderr)
        return collector.stopped.code
    if collector.collect_errors:
        for line in collector.collect_errors:
            print(line, file=sys.stderr)
        return Exit.USAGE
    if code in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.NO_TESTS_COLLECTED):
        if code == pytest.ExitCode.NO_TESTS_COLLECTED:
            print("bullmq-conformance: no vectors selected", file=sys.stderr)
        return Exit.USAGE
    if collector.gate is not None:  # nothing judged, or a --require-ops op skipped
        print(f"bullmq-conformance: {collector.gate}", file=sys.stderr)
        return Exit.FAILED
    if collector.coverage.tally.failing:
        return Exit.FAILED
    if code == pytest.ExitCode.INTERRUPTED:
        return Exit.INTERRUPTED
    return Exit.OK if code == pytest.ExitCode.OK else Exit.FAILED
