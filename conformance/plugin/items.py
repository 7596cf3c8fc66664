"""The test items of a conformance run: one per vector, and the `properties` area's items.

`conformance.plugin.hooks` collects them and keeps the run they report to on the pytest config
(`PLUGIN_KEY`); the items need only what `RunState` names of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, cast

import pytest

from conformance.core.errors import (
    CandidateError,
    CandidateUnusable,
    HarnessError,
    InfrastructureError,
    NonConformance,
)
from conformance.core.outcomes import Outcome, Skip, SkipKind
from conformance.run.batch import BATCH_SIZE
from conformance.run.session import Run
from conformance.run.verdict import REDIS_DOWN, Verdict
from conformance.servers import health
from conformance.vectors import IdIndex, Vector, expectations
from reference_impl import versions
from reference_impl.versions import Range, Version

if TYPE_CHECKING:
    from conformance.properties.check import PropertyResult
    from conformance.properties.children import PropertiesChildren


class RunState(Protocol):
    """What the items use of the active run (`conformance.plugin.hooks.ConformanceRun`)."""

    run: Run
    expected: expectations.Expectations | None
    #: The vector ids collected so far (a duplicate id is a collection error).
    ids: IdIndex
    #: The children checking the properties items, if any (`conformance.properties.children`).
    properties_children: PropertiesChildren | None

    def abort(self, item: pytest.Item, exc: InfrastructureError | CandidateUnusable) -> NoReturn:
        """Stop the run after `item` (which gets no verdict): exit 3 for Redis, 4 for a
        candidate that cannot start."""
        ...


#: Where the active run is kept on the pytest config.
PLUGIN_KEY = pytest.StashKey[RunState]()


class UnexpectedPass(Exception):
    """A vector listed as an expected failure passed."""


#: The user properties of a result that say why it was skipped (a SkipKind's value), and which
#: ops the candidate skipped in it. Data, not wording: they reach an xdist controller as sent.
SKIP_PROPERTY, SKIPPED_OPS_PROPERTY = "skip", "skipped_ops"


def skip_of(properties: list[tuple[str, object]]) -> tuple[SkipKind | None, tuple[str, ...]]:
    """A result's skip kind (None when it has none) and the ops the candidate skipped in it,
    from its report's user properties."""
    found = dict(properties)
    kind = found.get(SKIP_PROPERTY)
    ops = found.get(SKIPPED_OPS_PROPERTY) or ()
    return (SkipKind(str(kind)) if kind is not None else None,
            tuple(str(op) for op in cast(list[object], ops)))


def reported_skip(report: pytest.TestReport) -> Skip:
    """The Skip of a skipped result, as `_skip` recorded it in its report: the kind and ops
    from the user properties (a skip of no kind is the candidate's: see `Coverage`), the
    reason as pytest carries it (the longrepr `(file, line, "Skipped: <reason>")`), and the
    protocol judged, a vector's user property."""
    kind, ops = skip_of(report.user_properties)
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2]).removeprefix("Skipped: ")
    else:
        reason = str(longrepr)
    protocol = dict(report.user_properties).get("protocol")
    return Skip(kind or SkipKind.CANDIDATE, reason, ops,
                None if protocol is None else str(protocol))


def _skip(item: pytest.Item, skip: Skip) -> NoReturn:
    """Skip `item` for `skip`: its kind (and the ops the candidate skipped) recorded as user
    properties, its reason as pytest's."""
    item.user_properties.append((SKIP_PROPERTY, skip.kind.value))
    if skip.ops:
        item.user_properties.append((SKIPPED_OPS_PROPERTY, list(skip.ops)))
    pytest.skip(skip.reason)


class _ConformanceItem(pytest.Item):
    """What vector and property items share: the candidate's expectations, and how errors are
    shown."""

    expectation: expectations.Expectation | None = None

    def _expect(self, state: RunState, item_id: str) -> None:
        """Find the expectations file's entry for `item_id`; an expected skip skips here."""
        self.expectation = state.expected.match(item_id) if state.expected else None
        if self.expectation is not None and self.expectation.outcome == "skip":
            self.user_properties.append(("message", self.expectation.describe()))
            _skip(self, Skip.expected(self.expectation.describe()))

    def _expected_to_fail(self) -> bool:
        return self.expectation is not None and self.expectation.outcome == "fail"

    def _settle(self, outcome: Outcome) -> None:
        """Hold a verdict against the expectations file: a listed failure is an expected
        failure (xfailed); a listed failure that passed is itself a failure, so that the list
        only shrinks. Called with a failing outcome in setup, with PASSED in runtest."""
        if not self._expected_to_fail():
            return
        assert self.expectation is not None
        if outcome.failing:
            pytest.xfail(f"expected failure: {self.expectation.describe()}")
        if outcome is Outcome.PASSED:
            raise UnexpectedPass(
                f"passed, but {self.expectation.source} lists it as an expected failure "
                f"({self.expectation.pattern!r}): remove it from your expectations file")

    def _repr_failure_py(self, excinfo: Any, style: Any = None) -> Any:
        # pytest renders setup errors through this private hook, not repr_failure; keep our
        # one-line "errored" message instead of a traceback of the harness.
        if isinstance(excinfo.value, HarnessError | UnexpectedPass):
            return self.repr_failure(excinfo)
        if isinstance(excinfo.value, pytest.xfail.Exception):
            return str(excinfo.value)  # a full traceback here costs ~0.3 s per expected failure
        return super()._repr_failure_py(excinfo, style=style)


#: The user property of a vector during which a shared server saw writes outside the run.
FOREIGN_PROPERTY = "bmq_foreign_writes"
PROPERTIES_ID = "properties/state-machine"
#: Examples per properties item: more examples make more items, which xdist runs in parallel.
SHARD_EXAMPLES = 25


def property_shards(examples: int, seed: int) -> list[tuple[str, int, int]]:
    """The properties items of a run: (id, examples, seed) each.

    Up to SHARD_EXAMPLES examples are one item, `properties/state-machine`. More are split
    evenly into `properties/state-machine-1`, `-2`, ... seeded seed, seed+1, ...; item i alone
    is reproduced by `--seed seed+i-1 --examples <its examples>`. The split depends only on
    the options, so serial and parallel runs run the same items.
    """
    count = max(1, -(-examples // SHARD_EXAMPLES))
    if count == 1:
        return [(PROPERTIES_ID, examples, seed)]
    base, extra = divmod(examples, count)
    return [(f"{PROPERTIES_ID}-{i + 1}", base + (1 if i < extra else 0), seed + i)
            for i in range(count)]


class PropertiesItem(_ConformanceItem):
    """The `properties` area: random op sequences, candidate vs model after every op."""

    def __init__(self, *, examples: int, seed: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.examples = examples
        self.seed = seed
        self.user_properties.append(("area", "properties"))
        self.result: PropertyResult
        self.summary = ""
        self.lines: list[str] = []

    def setup(self) -> None:
        """Run the state machine. A candidate crash raises here (reported as errored)."""
        from conformance.properties.check import check_candidate

        plugin = self.config.stash[PLUGIN_KEY]
        self._expect(plugin, self.name)
        run = plugin.run
        try:
            server = run.started_server()
            children = plugin.properties_children
            taken = children.take(self.name) if children is not None else None
            self.result = taken or check_candidate(
                run.candidate, server.url, run.profile, self.examples, self.seed,
                start_candidate=False, names=run.names, cluster=server.cluster,
                protocol=run.properties_protocol, private=server.private,
                finder=run.tracker)
        except REDIS_DOWN as exc:
            plugin.abort(self, InfrastructureError(health.connection_lost(exc)))
        except (InfrastructureError, CandidateUnusable) as exc:
            plugin.abort(self, exc)
        result = self.result
        summary = (f"{result.examples} examples, seed {result.seed}, "
                   f"{result.examples_per_second:.1f}/s")
        self.lines = (result.failure or "").splitlines()
        # An errored check's report names the candidate's error before the disagreement.
        cause = [f"errored: {result.errored}"] if result.errored is not None else []
        self.user_properties.append(("message", "\n".join([summary, *cause, *self.lines])))
        self.summary = summary
        if not result.passed:
            self._settle(Outcome.ERRORED if result.errored is not None else Outcome.FAILED)
        if result.errored is not None:
            raise CandidateError(f"{result.errored} ({summary})")
        if result.passed and not result.ops_applied:
            # Agreeing with the model after every op is no verdict when no op was applied.
            _skip(self, Skip.unsupported(result.skipped_ops, f"it applied no op in {summary}"))
        if result.skipped_ops:  # judged on the rest: the ops left out are still named
            self.user_properties.append((SKIPPED_OPS_PROPERTY, list(result.skipped_ops)))

    def runtest(self) -> None:
        """A disagreement is a failure with a ready-to-paste vector."""
        if not self.result.passed:
            raise NonConformance(f"the candidate and the model disagree ({self.summary}); "
                                 f"reproduce with --seed {self.result.seed} --examples "
                                 f"{self.examples}", self.lines)
        self._settle(Outcome.PASSED)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        """The disagreement and the shrunk op sequence as a vector."""
        if isinstance(excinfo.value, NonConformance | UnexpectedPass | HarnessError):
            body = [("errored: " if isinstance(excinfo.value, HarnessError) else "")
                    + str(excinfo.value)]
            if isinstance(excinfo.value, NonConformance):
                body += ["    " + d for d in excinfo.value.diff]
            return "\n".join([self.name, *body])
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int, str]:
        """Where the area comes from."""
        return "conformance/properties/check.py", 0, self.name


class VectorItem(_ConformanceItem):
    """One vector."""

    def __init__(self, *, vector: Vector, protocol: Version, span: Range | None = None,
                 **kwargs: Any) -> None:
        """`protocol`: the version the vector is judged at; `span`: the part of the vector's
        range that judgement stands for (all of it unless `identify` split it)."""
        super().__init__(**kwargs)
        self.vector = vector
        self.protocol = protocol
        self.verdict: Verdict | None = None
        self.user_properties.append(("area", vector.area))
        self.user_properties.append(("protocol", versions.text(protocol)))
        self.user_properties.append(("range", (span or vector.span).as_dict()))

    def setup(self) -> None:
        """Run the vector. A candidate or harness error raises here (reported as error)."""
        plugin = self.config.stash[PLUGIN_KEY]
        self._expect(plugin, self.vector.id)
        try:
            verdict = plugin.run.run(self.vector, self.protocol, lambda: self._upcoming(plugin))
        except (InfrastructureError, CandidateUnusable) as exc:
            plugin.abort(self, exc)
        self.verdict = verdict
        self.user_properties.append(("message", "\n".join([verdict.message, *verdict.diff])))
        if verdict.foreign_writes:
            self.user_properties.append((FOREIGN_PROPERTY, list(verdict.foreign_writes)))
        if verdict.outcome is Outcome.SKIPPED:
            _skip(self, verdict.skip or Skip(SkipKind.CANDIDATE, verdict.message))
        if verdict.outcome.failing:
            self._settle(verdict.outcome)
        if verdict.outcome is Outcome.ERRORED:
            raise HarnessError(verdict.message)

    def _upcoming(self, state: RunState) -> list[tuple[Vector, Version]]:
        """The vectors of the items due after this one, up to two batches, that will run here:
        none under xdist (its scheduler picks a worker's next items), none listed as expected
        skips (never run: one may hang the candidate)."""
        if hasattr(self.config, "workerinput"):
            return []
        items = self.session.items
        upcoming: list[tuple[Vector, Version]] = []
        for item in items[items.index(self) + 1:]:
            if len(upcoming) >= 2 * BATCH_SIZE:
                break
            if not isinstance(item, VectorItem):
                continue
            expected = state.expected.match(item.vector.id) if state.expected else None
            if expected is None or expected.outcome != "skip":
                upcoming.append((item.vector, item.protocol))
        return upcoming

    def runtest(self) -> None:
        """Fail when the Redis state differs, or when an expected failure passes."""
        if self.verdict is not None and self.verdict.outcome is Outcome.FAILED:
            raise NonConformance(self.verdict.message, list(self.verdict.diff))
        self._settle(Outcome.PASSED)

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
        """Point at the vector's line in its file.

        The name returned is not the item's own: pytest takes a name that ends the node id for
        a dotted Python name and prints its dots as `::` (`-v` showed
        `band-bump/2-same-ms::until-5::8::6`, an id that selects nothing when pasted back).
        """
        return self.path, self.vector.line - 1, f"vector {self.name}"
