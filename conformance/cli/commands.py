"""The subcommands of `bullmq-conformance`: each with its help, its options (from the one table
in `conformance.core.options`) and its handler, set on the parser with `set_defaults`.

A handler is named `module:function` and imported only when its command runs, so `--help` and
a run import only what they use. Every handler takes the parsed arguments and returns an exit
code (`conformance.core.errors.Exit`). The few handlers too small for a module of their own
are here.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import reference_impl
from conformance.core import candidate_forms
from conformance.core import options as o
from conformance.core.errors import Exit, UsageError
from conformance.core.options import Option
from conformance.core.pins import PINNED_PROTOCOL, PINNED_VERSION
from reference_impl import versions

VERSION = (f"bullmq-conformance {reference_impl.__version__} (protocols of npm bullmq "
           f"{versions.text(versions.EARLIEST)} up to {versions.text(versions.BEYOND)}, judged "
           f"against {versions.text(versions.CURRENT)} by default; PyPI bullmq 2.0.0 to "
           f"{PINNED_VERSION} checked)")
DESCRIPTION = """Run the BullMQ protocol vectors against a port, regenerate or check them, and
the suite's own checks.

Exit codes: 0 every vector passed (identify: a protocol range fits); 1 a vector failed or
errored, no vector was judged (the candidate skipped every applicable one), or the candidate
skipped an op of --require-ops (identify: no range fits, or older than supported); 2 usage,
vector-file or package-data error; 3 infrastructure (Redis could not be started or reached); 4
the candidate could not start; 128 + n a signal."""


@dataclass(frozen=True)
class Command:
    """One subcommand: a handler with options, or a group of subcommands."""

    name: str
    help: str
    handler: str = ""
    options: tuple[Option, ...] = ()
    description: str | None = None
    subcommands: tuple[Command, ...] = ()


def _out(what: str) -> Option:
    return Option(("--out",), f"where to write {what}", type=Path, metavar="FILE",
                  shown_default="standard output")


COMMANDS = (
    Command("run", "run the vectors against a candidate", "conformance.cli.run:main", o.RUN,
            "Run every vector against a candidate on a Redis, and report "
            "passed/failed/errored/skipped."),
    Command("identify", "name the BullMQ protocol range a candidate speaks",
            "conformance.cli.identify:main", (
                o.CANDIDATE, o.PROFILE, o.PREFIX, o.REDIS, o.VECTORS,
                o.REPORT_JSON.but(help="also write the run's JSON report, with the result "
                                  "under `identify`"),
                o.ADAPTER_TIMEOUT,
                Option(("--json",), "print the result as JSON: candidate, protocol {since, "
                       "until} or null, closest {since, until, failed}, evidence, "
                       "older_than_supported", action="store_true", shown_default="text"),
                Option(("-n", "--numprocesses"), "parallel processes (pytest-xdist)",
                       type=o.worker_count, metavar="N|auto", shown_default="one process")),
            "Judge every vector at every protocol range it holds for, then name the range of "
            "npm bullmq versions whose vectors all pass, with the vectors that tell it from "
            "the ranges beside it. When none fits, name the closest range and the vectors "
            "that still fail there: the port's bugs. A scripts directory of BullMQ 4.x is "
            f"older than the earliest supported protocol ({versions.text(versions.EARLIEST)}). "
            "Exit 0 when a range fits, 1 when none does."),
    Command("diff", "apply the same ops to two candidates and print the first state difference",
            "conformance.checks.diff:main", (
                o.CANDIDATE.but(action="append", required=True, default=None,
                                help=f"give exactly twice: {candidate_forms.USAGE}"),
                o.PROFILE, o.PROTOCOL.but(help="run the vectors that hold at this npm bullmq "
                                          "version, in its calling convention"),
                o.REDIS, o.VECTORS,
                Option(("-k",), "only vectors whose id matches this glob", metavar="GLOB",
                       dest="keyword", shown_default="all"),
                o.ADAPTER_TIMEOUT),
            "Run each vector's setup and ops against candidate A and candidate B (separate "
            "queues), snapshot both after every op, and stop at the first difference."),
    Command("adapter", "tools for adapter authors", subcommands=(
        Command("check", "run a smoke sequence against an adapter and validate every reply "
                "against the protocol schema", "conformance.cli.adapter_check:main", (
                    Option(("adapter_command",), "the adapter's command line, e.g. 'node "
                           "adapter.js'", metavar="CMD"),
                    o.REDIS, o.PROFILE.but(help="key profile sent in start"),
                    o.ADAPTER_TIMEOUT.but(help="per-request timeout, in seconds"))),
        Command("example", "write the example adapter (Python, under 100 lines) to start yours "
                "from", "conformance.cli.commands:adapter_example", (_out("it; an existing file is "
                                                                    "not overwritten"),),
                "Write the complete example adapter of docs/ADAPTERS.md. It drives a directory "
                "of inlined BullMQ scripts: python adapter.py SCRIPTS_DIR."),
    )),
    Command("expectations", "manage a candidate's expectations file", subcommands=(
        Command("write", "write an expectations file listing every failed or errored vector of "
                "a JSON report", "conformance.cli.commands:expectations_write", (
                    Option(("--from",), "a --report-json file", type=Path, required=True,
                           metavar="REPORT", dest="report"),
                    _out("the file"))),
    )),
    Command("report", "a static HTML page comparing JSON reports, or the releases page",
            "conformance.cli.commands:report",
            (Option(("--html",), "the page comparing REPORT files to write", type=Path,
                    metavar="OUT", shown_default="give --html or --releases"),
             Option(("--releases",), "instead, the releases page to write from one "
                    "releases.json (ci/releases.sh writes it)", type=Path, metavar="OUT",
                    shown_default="give --html or --releases"),
             Option(("reports",), "--report-json files, one column each, in this order; with "
                    "--releases, the one releases.json", type=Path, nargs="+",
                    metavar="REPORT")),
            "Write one self-contained HTML page (no network). With --html, from --report-json "
            "files: a pass-rate chart per report, and a vector x report matrix whose failed "
            "cells unfold their diffs. With --releases, from the releases.json of "
            "ci/releases.sh: one row per real release, its protocol range as identify names "
            "it, a cell per vector area (passed/applicable, green, red or grey), and the "
            "vectors it fails."),
    Command("vectors", "regenerate or check the vector files", subcommands=(
        Command("regenerate", "write the vectors from reference_impl",
                "conformance.cli.commands:vectors_regenerate", (
                    Option(("--out",), "output directory", type=Path, metavar="DIR",
                           shown_default="the checkout's vectors/ in a development install; "
                           "required when the suite is installed from a wheel, whose files are "
                           "not to be rewritten"),
                    Option(("--spec",), "where to write the protocol spec rendered from the "
                           "vectors (Markdown)", type=Path, metavar="FILE",
                           shown_default="the checkout's docs/SPEC.md when --out is not given "
                           "in a development install; not written otherwise"))),
        Command("check", "validate the vectors and compare them, their JSON twins and the "
                "spec with a fresh regeneration",
                "conformance.cli.commands:vectors_check", (
                    o.VECTORS.but(help="directory to check"),
                    Option(("--spec",), "the rendered spec to compare", type=Path,
                           metavar="FILE", shown_default="docs/SPEC.md beside the vectors "
                           "directory, when there is one (a checkout); not checked otherwise"),
                )),
    )),
    Command("concurrency", "race N fetchers on one queue and check that every job is claimed "
            "exactly once, in order; or, with --crash, kill workers mid-job and check that "
            "every job is recovered and completed exactly once",
            "conformance.cli.commands:concurrency", (
                o.CANDIDATE,
                Option(("--workers",), "concurrent fetchers, each with its own connection",
                       default=8, type=int, metavar="N"),
                Option(("--jobs",), "jobs; with --crash --flows, parents", type=int,
                       metavar="M", shown_default="2000; 200 with --crash; 40 parents with "
                       "--crash --flows"),
                o.REDIS, o.PROFILE,
                o.SEED.but(help="seed of the job mix, and of who is killed or frozen when",
                           default=0, shown_default=None),
                Option(("--time-limit",), "give up after S seconds", default=60.0, type=float,
                       metavar="S"),
                Option(("--textbook",), "race the textbook ZRANGEBYSCORE + ZREM claim on a raw "
                       "ZSET instead", action="store_true",
                       shown_default="the candidate's moveToActive"),
                Option(("--crash",), "crash and recover: workers fetch, renew their lock "
                       "(extendLock) while they work, and complete (moveToFinished); some are "
                       "killed or frozen mid-job, and a stall checker (moveStalledJobsToWait) "
                       "moves their jobs back to wait. Fails on a lost or twice-completed job, "
                       "a job moved while a lock on it lived, or a completion by a token that "
                       "did not hold the lock", action="store_true", default=False),
                Option(("--kill",), "with --crash: workers killed mid-job (they release "
                       "nothing; a fresh worker takes their place)", default=3, type=int,
                       metavar="N"),
                Option(("--freeze",), "with --crash: workers that stop renewing mid-job, then "
                       "try to complete the job after another worker fetched it (must be "
                       "refused)", default=2, type=int, metavar="N"),
                Option(("--lock-ms",), "with --crash: lock duration (expiry takes real time); "
                       "workers renew every third of it, the stall check runs every fifth",
                       default=100, type=int, metavar="MS"),
                Option(("--flows",), "with --crash: add --jobs parents of --children children "
                       "each (addFlow) instead of plain jobs; the workers complete the children, "
                       "then each parent once released. Also fails on a parent not released "
                       "exactly once (its 'waiting ... prev waiting-children' events), completed "
                       "before one of its children, missing a child's value in :processed, or "
                       "left in waiting-children", action="store_true", default=False),
                Option(("--children",), "with --crash --flows: children per parent", default=4,
                       type=int, metavar="K"))),
    Command("properties", "random op sequences against a candidate and the model, shrunk to a "
            "vector on failure", "conformance.properties.check:main", (
                o.CANDIDATE, o.EXAMPLES.but(help="op sequences to run", default=100,
                                            type=o.at_least(1)),
                o.SEED.but(shown_default="a random one"),
                Option(("--steps",), "ops in a sequence at most (fewer find a short defect and "
                       "shrink it sooner)", default=o.PROPERTY_STEPS, type=o.at_least(1),
                       metavar="N"),
                o.REDIS, o.PROFILE)),
    Command("bench", "time the full vector set against the reference",
            "conformance.checks.bench:main", (
                o.REDIS, Option(("--repeat",), "timed passes; the best is reported", default=3,
                                type=int, metavar="N"),
                Option(("--foreign-keys",), "foreign keys on the crowded server of the url: "
                       "figure (0 skips that run)", default=1_000_000, type=int, metavar="N"),
                Option(("--foreign-timeout",), "stop a url: run after this many seconds and "
                       "report it as stopped", default=300.0, type=float, metavar="S"))),
    Command("mutants", "mutation self-test: every catalog mutant of a scripts directory must "
            "fail a vector", "conformance.checks.mutants:main", (
                Option(("--scripts",), "scripts to mutate: our lua/, the installed PyPI "
                       "bullmq's, or a directory", default="reference",
                       metavar="reference|official|DIR"),
                o.PROTOCOL.but(help="the npm bullmq version the scripts are judged at; "
                               "before 6.0.0 the catalog is the 5.x repeatable job scripts' "
                               "(addRepeatableJob, updateRepeatableJobMillis, "
                               "removeRepeatable), run on the vectors that call them",
                               default=None, shown_default=f"{o.CURRENT_PROTOCOL}; for "
                               "official, the npm release whose scripts the pinned PyPI "
                               f"release ships ({PINNED_PROTOCOL})"),
                o.REDIS, o.PROFILE)),
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]  # one line, no usage dump
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(Exit.USAGE)


def _add(sub: argparse._SubParsersAction, command: Command) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(command.name, help=command.help,
                            description=command.description or command.help)
    if command.subcommands:
        nested = parser.add_subparsers(dest="action", required=True, parser_class=_Parser)
        for child in command.subcommands:
            _add(nested, child)
        return
    o.add_all(parser, command.options)
    parser.set_defaults(handler=command.handler)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = _Parser(prog="bullmq-conformance", description=DESCRIPTION,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=VERSION)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        _add(sub, command)
    return parser


def adapter_example(args: argparse.Namespace) -> int:
    """Write the bundled example adapter to `--out` (never over a file), or to stdout."""
    from conformance.core.resources import example_adapter

    text = example_adapter().read_text(encoding="utf-8")
    if args.out is None:
        sys.stdout.write(text)
        return Exit.OK
    try:
        with args.out.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise UsageError(f"--out {args.out}: the file exists; not overwritten") from None
    except OSError as exc:
        raise UsageError(f"--out {args.out}: {exc.strerror}") from None
    print(f"wrote {args.out}: run it with `python {args.out} SCRIPTS_DIR` (a directory of "
          "inlined BullMQ scripts, e.g. PyPI bullmq's bullmq/commands)")
    return Exit.OK


def concurrency(args: argparse.Namespace) -> int:
    """`concurrency`: the exactly-once race, or with `--crash` the crash-and-recover run."""
    if not args.crash:
        if args.flows:
            raise UsageError("--flows is a scenario of --crash: give --crash too")
        from conformance.checks.concurrency import main as race_main

        return race_main(args)
    if args.textbook:
        raise UsageError("--crash and --textbook are two different checks: give one")
    from conformance.checks.crash import main as crash_main

    return crash_main(args)


def expectations_write(args: argparse.Namespace) -> int:
    """Write an expectations file from a JSON report."""
    import json

    from conformance.vectors.expectations import from_report

    o.output_file("--out", args.out)
    try:
        report = json.loads(args.report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--from {args.report}: not a readable JSON report ({exc})") from None
    text = from_report(report)
    if args.out:
        try:
            args.out.write_text(text, encoding="utf-8")
        except OSError as exc:  # writable when checked, not now (its folder removed, say)
            raise UsageError(f"--out {args.out}: cannot write it: {exc.strerror or exc}") from None
        print(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    return Exit.OK


def _spec_text(documents: list[tuple[Any, dict[str, Any], str]]) -> str:
    from conformance.reports.spec import RenderedArea, render_spec

    return render_spec(RenderedArea(a, d, y) for a, d, y in documents)


def _checkout_spec(vectors: Path) -> Path | None:
    """docs/SPEC.md beside a checkout's vectors directory, or None outside a checkout."""
    from conformance.core.resources import installed_from_wheel
    from conformance.reports.spec import SPEC_NAME

    docs = vectors.parent / "docs"
    return docs / SPEC_NAME if docs.is_dir() and not installed_from_wheel() else None


def report(args: argparse.Namespace) -> int:
    """`report`: the page of --report-json files (`--html`) or of releases (`--releases`)."""
    if (args.html is None) == (args.releases is None):
        raise UsageError("report: give --html OUT (a page of --report-json files) or "
                         "--releases OUT (the releases page), one of them")
    if args.html is not None:
        from conformance.reports.html import main as html_main

        return html_main(args)
    from conformance.reports.releases import main as releases_main

    return releases_main(args)


def vectors_regenerate(args: argparse.Namespace) -> int:
    """Write every vector file (YAML, and JSON under json/) from reference_impl, and the spec
    rendered from them."""
    from conformance.core.resources import installed_from_wheel, vectors_dir
    from reference_impl.generate import files_of, render_documents, write_all

    if args.out is None:
        if installed_from_wheel():
            raise UsageError("vectors regenerate: the bundled vectors belong to the installed "
                             "package; write elsewhere with --out DIR")
        args.out = vectors_dir()
        args.spec = args.spec or _checkout_spec(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    documents = render_documents()
    written = write_all(args.out, files_of(documents))
    print(f"wrote {len(written)} vector files (YAML, and JSON under json/) to {args.out}")
    if args.spec is not None:
        args.spec.write_text(_spec_text(documents), encoding="utf-8")
        print(f"wrote the spec to {args.spec}")
    return Exit.OK


def vectors_check(args: argparse.Namespace) -> int:
    """Validate the vector files and compare them, and their JSON twins, with a fresh
    regeneration."""
    from conformance.vectors import iter_vectors, load_dir
    from reference_impl.generate import GENERATED_GLOBS, files_of, render_documents

    files = load_dir(args.vectors)
    documents = render_documents()
    fresh = files_of(documents)
    problems = []
    for name, text in fresh.items():
        path = args.vectors / name
        if not path.exists():
            problems.append(f"{path}: missing; run `bullmq-conformance vectors regenerate`")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{path}: differs from a fresh regeneration; run "
                            "`bullmq-conformance vectors regenerate`")
    on_disk = {p.relative_to(args.vectors).as_posix()
               for pattern in GENERATED_GLOBS for p in args.vectors.glob(pattern)}
    problems += [f"{args.vectors / n}: not produced by the generator"
                 for n in sorted(on_disk - set(fresh))]
    spec = args.spec or _checkout_spec(args.vectors)
    if spec is not None and not spec.is_file():
        problems.append(f"{spec}: missing; run `bullmq-conformance vectors regenerate`")
    elif spec is not None and spec.read_text(encoding="utf-8") != _spec_text(documents):
        problems.append(f"{spec}: differs from the spec rendered from the vectors; run "
                        "`bullmq-conformance vectors regenerate`")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return Exit.USAGE
    count = sum(1 for _ in iter_vectors(files))
    also = f", and {spec}" if spec is not None else ""
    print(f"{len(files)} files (and their JSON twins{also}), {count} vectors: schema valid, "
          "ids unique, identical to a fresh regeneration")
    return Exit.OK
