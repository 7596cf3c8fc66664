"""`bullmq-conformance mutants`: the mutation self-test of the vector set.

For each mutant of `conformance.mutant_catalog`, the scripts directory is copied to a temporary
directory, the mutant's textual replacements are applied, and the vectors are run against the
copy (`ScriptsCandidate` + `conformance.run.batch.run_vectors`, in-process, on one Redis; pipelined
in batches of 1, 2, 4, ... on a server the suite started) until one fails or errors:
the mutant is *killed* by that vector. A mutant no vector catches *survived*. The vector
`mutant_hints.FIRST_TRIED` names for the mutant runs first, alone. Then vectors that call a
script the mutant changed (after its includes are inlined), since no other vector can tell the
copy from the original; among them, the small vectors that killed earlier mutants come first,
then the rest cheap first (fewest ops, seeded and expected members). So most mutants die in
their first batch; the other vectors still run, last, before a mutant is declared a survivor.

A killing vector must pass on the unmutated scripts; one that does not is excluded (and named),
so a directory with known failures still gets a meaningful score.

Exit codes: 0 every mutant killed; 1 a mutant survived; 2 catalog error (a pattern matches
nothing, or for `lua/`-style scripts more than one file) or usage error; 3 infrastructure.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import redis

from conformance.candidates.clients.package import installed_scripts
from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.candidates.scripts.includes import resolve, resolve_with_files
from conformance.candidates.scripts.repeatable_calls import REPEATABLE_KEYS
from conformance.checks.mutant_catalog import CATALOG, Mutant, Replacement
from conformance.checks.mutant_catalog_repeatables import REPEATABLE_MUTANTS
from conformance.checks.mutant_hints import FIRST_TRIED
from conformance.core.errors import Exit, HarnessError, UsageError
from conformance.core.outcomes import Outcome
from conformance.core.pins import PINNED_PROTOCOL, PINNED_VERSION
from conformance.core.queues import QueueNames
from conformance.core.resources import lua_dir, vectors_dir
from conformance.run.batch import BATCH_SIZE, run_vectors
from conformance.run.serial import run_vector
from conformance.run.spec import profile_for, protocol_version
from conformance.servers import ServerInfo, client_for, provision
from conformance.vectors import Vector, iter_vectors, load_dir
from reference_impl import versions
from reference_impl.getter_ops import PLAIN_READS
from reference_impl.keys import KeyProfile
from reference_impl.ops import OP_NAMES
from reference_impl.scheduler_ops import CLIENT_SIDE

EXIT_OK, EXIT_SURVIVED, EXIT_CATALOG = Exit.OK, Exit.FAILED, Exit.USAGE

#: "includes": our `lua/` layout (patterns live in one file); "inlined": the official scripts.
Flavor = Literal["includes", "inlined"]
#: Killing vectors up to this cost are tried first on later mutants; big ones stay in place.
CHEAP_KILLER_COST = 1000


#: The scripts an op may call, where that is not the script named like the op.
OP_SCRIPTS: dict[str, tuple[str, ...]] = {
    "add": ("addStandardJob", "addDelayedJob", "addPrioritizedJob"),
    "pickUpIteration": ("updateJobScheduler",),
    "upsertJobScheduler": ("addJobScheduler",),
    "resume": ("pause",),
    **{name: () for name in CLIENT_SIDE},
    **{name: () for name in PLAIN_READS},
}
_OP_NAME_OF = {cls: name for name, cls in OP_NAMES.items()}


class CatalogError(HarnessError):
    """A mutant does not apply to the target directory: a defect of the catalog."""


@dataclass(frozen=True)
class MutantResult:
    """The outcome of one mutant: killed by `vector_id` or survived, and how long it took."""

    mutant: Mutant
    killed: bool
    vector_id: str | None
    seconds: float
    #: An older range's vector whose expectations the mutant meets wherever it breaks the
    #: current one: it behaves as that older protocol did (e.g. pause renaming wait).
    older: Vector | None = None


def resolve_scripts(spec: str) -> Path:
    """The directory `--scripts` names: `reference` (our lua/), `official` (PyPI bullmq), DIR."""
    if spec == "reference":
        return lua_dir()
    if spec == "official":
        folder = installed_scripts()
        if folder is None:
            raise UsageError("--scripts official: the bullmq package is not installed "
                             f"(pip install -e '.[dev]' or pip install bullmq=={PINNED_VERSION})")
        return folder
    path = Path(spec)
    if not path.is_dir() or not any(path.glob("*.lua")):
        raise UsageError(f"--scripts {spec}: not a directory of *.lua scripts")
    return path


def flavor_of(directory: Path) -> Flavor:
    """`includes` when the directory has an `includes/` folder (our layout), else `inlined`."""
    return "includes" if (directory / "includes").is_dir() else "inlined"


def read_scripts(directory: Path) -> dict[str, str]:
    """Every `*.lua` file under `directory`, by path relative to it."""
    return {str(p.relative_to(directory)): p.read_text(encoding="utf-8")
            for p in sorted(directory.rglob("*.lua"))}


def replacements_for(mutant: Mutant, flavor: Flavor) -> tuple[Replacement, ...]:
    """The mutant's replacement list for a directory of this flavor."""
    return mutant.ours if flavor == "includes" else mutant.official


def mutate(texts: dict[str, str], mutant: Mutant, flavor: Flavor) -> dict[str, str]:
    """The files the mutant changes, with their new text. Raises CatalogError.

    Each replacement is applied, in order, to every file holding its pattern (all occurrences).
    A pattern found nowhere is an error; so is one found in several files of an `includes`
    directory, where each piece of logic lives in exactly one file.
    """
    current = dict(texts)
    changed: set[str] = set()
    for index, (old, new) in enumerate(replacements_for(mutant, flavor), start=1):
        where = f"mutant {mutant.name}, {flavor} replacement {index}"
        if old == new:
            raise CatalogError(f"{where}: the replacement equals the pattern")
        hits = [name for name, text in current.items() if old in text]
        if not hits:
            raise CatalogError(f"{where}: pattern {_short(old)} matches no script")
        if flavor == "includes" and len(hits) > 1:
            raise CatalogError(f"{where}: pattern {_short(old)} is in {len(hits)} files "
                               f"({', '.join(hits)}); it must be in one")
        for name in hits:
            current[name] = current[name].replace(old, new)
            changed.add(name)
    return {name: current[name] for name in sorted(changed)}


def _short(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else text
    return repr(first if len(first) <= 60 else first[:57] + "...")


def check_catalog(directory: Path, catalog: Sequence[Mutant] = CATALOG) -> None:
    """Raise CatalogError unless names are unique and every mutant applies to `directory`."""
    names = [m.name for m in catalog]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise CatalogError(f"duplicate mutant names: {', '.join(duplicates)}")
    texts, flavor = read_scripts(directory), flavor_of(directory)
    for mutant in catalog:
        mutate(texts, mutant, flavor)


def write_mutant(source: Path, target: Path, mutant: Mutant) -> frozenset[str]:
    """Copy `source` to `target` (which must not exist) and apply the mutant there; returns
    the files it changed, by path relative to the directory."""
    shutil.copytree(source, target)
    changed = mutate(read_scripts(source), mutant, flavor_of(source))
    for name, text in changed.items():
        (target / name).write_text(text, encoding="utf-8")
    return frozenset(changed)


def _members(entries: Iterable[object]) -> int:
    total = 0
    for entry in entries:
        body = next(iter(entry.values()), None) if isinstance(entry, dict) else None
        total += len(body) if isinstance(body, list | dict) else 1
    return total


def vector_cost(vector: Vector) -> int:
    """A size estimate: ops plus seeded and expected members (4096-job bands come last)."""
    return len(vector.when) + _members(vector.given.values()) + _members(vector.keys.values())


def order_vectors(vectors: Iterable[Vector], profile: KeyProfile,
                  protocol: versions.Version = versions.CURRENT) -> list[Vector]:
    """The vectors of `protocol` that run under `profile`, cheapest first (file order breaks
    ties)."""
    runnable = [v for v in vectors if v.profile in (None, profile.name)
                and v.span.holds(protocol)]
    return sorted(runnable, key=vector_cost)


def script_name(file_name: str) -> str:
    """`moveToFinished` for `moveToFinished-14.lua`."""
    return file_name.removesuffix(".lua").rsplit("-", 1)[0]


def scripts_called(vector: Vector) -> frozenset[str]:
    """The names of the scripts the vector's ops call (`add` may call any add script)."""
    names: set[str] = set()
    for op in vector.when:
        name = _OP_NAME_OF.get(type(op), "")
        names.update(OP_SCRIPTS.get(name, (name,)))
    return frozenset(names)


def resolved_scripts(directory: Path) -> dict[str, str]:
    """Each top-level script of `directory` with its includes inlined, by file name."""
    return {path.name: resolve(path) for path in sorted(directory.glob("*.lua"))}


def script_files(directory: Path) -> dict[str, frozenset[str]]:
    """Each top-level script of `directory`, by file name: the files its inlined text is made
    of (itself and its includes), by path relative to `directory`."""
    root = directory.resolve()
    return {path.name: frozenset(str(f.relative_to(root)) for f in resolve_with_files(path)[1])
            for path in sorted(directory.glob("*.lua"))}


def scripts_using(files: dict[str, frozenset[str]], changed: Iterable[str]) -> frozenset[str]:
    """The names of the top-level scripts made of any of the `changed` files: the scripts
    `affected_scripts` finds, without inlining every script of the mutant again."""
    touched = frozenset(changed)
    return frozenset(script_name(name) for name, made_of in files.items() if made_of & touched)


def affected_scripts(original: dict[str, str], mutated: Path) -> frozenset[str]:
    """The names of the top-level scripts whose inlined text the mutant changed."""
    now = resolved_scripts(mutated)
    return frozenset(script_name(name) for name, text in original.items()
                     if now.get(name) != text)


def older_variants(vectors: Iterable[Vector]) -> dict[str, list[Vector]]:
    """Current vector id -> the variants of the same ops for older ranges, newest first."""
    found: dict[str, list[Vector]] = {}
    for vector in vectors:
        base, marker, _ = vector.id.partition(".until-")
        if marker:
            found.setdefault(base, []).append(vector)
    for variants in found.values():
        variants.sort(key=lambda v: v.span.since, reverse=True)
    return found


@dataclass(frozen=True)
class ScriptSet:
    """A directory's scripts, read and resolved once, so that a mutant of them is resolved in
    memory: only the scripts made of a file it changes are resolved again, and nothing is
    written (a folder per mutant cost more than running most mutants)."""

    source: Path
    #: Every `*.lua` file, by path relative to `source` (`read_scripts`).
    texts: dict[str, str]
    #: Each top-level script, by file name: the files it is made of (`script_files`).
    files: dict[str, frozenset[str]]
    #: Each top-level script's resolved text, by file name (`resolved_scripts`).
    resolved: dict[str, str]

    @classmethod
    def read(cls, source: Path) -> ScriptSet:
        """The scripts of `source`."""
        return cls(source, read_scripts(source), script_files(source), resolved_scripts(source))

    def mutated(self, changed: dict[str, str]) -> dict[str, str]:
        """Every top-level script's resolved text, by file name, with the `changed` files (by
        path relative to `source`, as `mutate` gives them) in place of theirs."""
        root = self.source.resolve()

        def read(path: Path) -> str:
            name = str(path.relative_to(root))
            return changed.get(name, self.texts[name])

        texts = dict(self.resolved)
        for name, made_of in self.files.items():
            if made_of & changed.keys():
                texts[name] = resolve(self.source / name, read)
        return texts


class MutationRun:
    """Runs mutants against one scripts directory on one Redis client."""

    def __init__(self, source: Path, vectors: list[Vector], client: redis.Redis,
                 profile: KeyProfile, older: dict[str, list[Vector]] | None = None,
                 server: ServerInfo | None = None,
                 protocol: versions.Version = versions.CURRENT) -> None:
        """`server`: where `client` points; vectors run pipelined on one the suite started
        (`conformance.run.batch.pipelined`). `protocol`: the version the scripts are judged
        at (the official ones: the npm release their Lua comes from)."""
        self.server = server
        self.source = source
        self.vectors = vectors
        self.older = older or {}
        self.client = client
        self.profile = profile
        self.names = QueueNames()
        self.excluded: list[str] = []
        self._killers: list[Vector] = []
        self.protocol = protocol
        #: The vectors as loaded: a verdict holds its vector bound to the queue it ran in
        #: (`conformance.vectors.refs`), which must not be run again in another queue.
        self._by_id = {vector.id: vector for vector in vectors}
        self._baseline = ScriptsCandidate(source, "baseline")
        self._baseline_ok: dict[str, bool] = {}
        self._scripts = ScriptSet.read(source)
        self._files = self._scripts.files
        self._calls = {vector.id: scripts_called(vector) for vector in vectors}

    def _passes_unmutated(self, vector: Vector) -> bool:
        if vector.id not in self._baseline_ok:
            verdict = run_vector(vector, self._baseline, self.client, self.profile, self.names,
                                 protocol=self.protocol)
            self._baseline_ok[vector.id] = not verdict.outcome.failing
            if not self._baseline_ok[vector.id]:
                self.excluded.append(vector.id)
        return self._baseline_ok[vector.id]

    def run(self, mutant: Mutant) -> MutantResult:
        """Apply `mutant` to the scripts (in memory: nothing is written) and run vectors
        until one catches it."""
        started = time.perf_counter()
        changed = mutate(self._scripts.texts, mutant, flavor_of(self.source))
        candidate = ScriptsCandidate(self.source, f"mutant:{mutant.name}",
                                     texts=self._scripts.mutated(changed))
        killer: Vector | None = None
        affected = scripts_using(self._files, changed)
        hint = self._by_id.get(FIRST_TRIED.get(mutant.name, ""))
        order = [v for v in dict((v.id, v) for v in [*([hint] if hint else []), *sorted(
            [*self._killers, *self.vectors], key=lambda v: not self._calls[v.id] & affected)]
        ).values() if self._baseline_ok.get(v.id) is not False]
        for batch in batches(order):
            verdicts = run_vectors(batch, candidate, self.client, self.profile, self.names,
                                   self.server, protocol=self.protocol)
            killer = next((self._by_id[verdict.vector.id] for verdict in verdicts
                           if verdict.outcome.failing
                           and self._passes_unmutated(self._by_id[verdict.vector.id])),
                          None)
            if killer is not None:
                break
        older = self._older_match(killer, candidate) if killer is not None else None
        if killer is not None and killer not in self._killers \
                and vector_cost(killer) <= CHEAP_KILLER_COST:
            self._killers = sorted([*self._killers, killer], key=vector_cost)
        return MutantResult(mutant, killer is not None, killer.id if killer else None,
                            time.perf_counter() - started, older)

    def _older_match(self, killer: Vector, candidate: ScriptsCandidate) -> Vector | None:
        """An older range that names the mutant's defect, or None.

        Among the killer's area (killer first, at most NAMING_TRIES vectors that have older
        variants), a vector the mutant fails is explained by an older variant when, on each
        key where the mutant breaks the current vector, it meets the variant's expectation.
        When most failures are explained (at least two), all by variants ending at the same
        version, the mutant does what bullmq did before that version. Variants are judged in
        the current calling convention: the mutant is a current port that kept an old
        behaviour.
        """
        area = [v for v in self.vectors if v.area == killer.area and v.id != killer.id]
        tried = [v for v in [killer, *area] if v.id in self.older][:NAMING_TRIES]
        failing: list[tuple[Vector, set[str]]] = []
        for verdict in run_vectors(tried, candidate, self.client, self.profile, self.names,
                                   self.server, protocol=self.protocol):
            if verdict.outcome is not Outcome.PASSED:
                failing.append((self._by_id[verdict.vector.id], differing_keys(verdict.diff)))
        # Every variant of every failing vector in one batch (one round trip), rather than
        # one by one up to the first that explains: a few more vectors, far fewer waits.
        variants = [variant for current, wrong in failing if wrong
                    for variant in self.older[current.id]]
        explains = dict(zip(map(id, variants), self._explaining(variants, candidate),
                            strict=True))
        named: list[Vector] = []
        unexplained = 0
        for current, wrong in failing:
            match = next((variant for variant in self.older[current.id]
                          if wrong and explains[id(variant)](wrong)), None)
            if match is None:
                unexplained += 1
            else:
                named.append(match)
        ends = {variant.span.until for variant in named}
        return named[0] if len(named) >= 2 and len(named) > unexplained and len(ends) == 1 \
            else None

    def _explaining(self, variants: list[Vector], candidate: ScriptsCandidate
                    ) -> list[Callable[[set[str]], bool]]:
        """For each older variant, run as if current: whether it explains a failure on the
        keys `wrong` (it passes, or fails on none of them)."""
        if not variants:
            return []
        verdicts = run_vectors([replace(variant, span=versions.ALWAYS) for variant in variants],
                               candidate, self.client, self.profile, self.names, self.server,
                               protocol=self.protocol)

        def explaining(outcome: Outcome, differs: set[str]) -> Callable[[set[str]], bool]:
            return lambda wrong: outcome is Outcome.PASSED or (
                outcome is Outcome.FAILED and not wrong & differs)

        return [explaining(verdict.outcome, differing_keys(verdict.diff)) for verdict in verdicts]


def batches(vectors: Sequence[Vector], limit: int = BATCH_SIZE) -> Iterable[list[Vector]]:
    """`vectors` in order, in batches of 1, 2, 4, ... up to `limit`: most mutants die within
    the first few vectors, so the first batches are small."""
    start, size = 0, 1
    while start < len(vectors):
        yield list(vectors[start:start + size])
        start, size = start + size, min(size * 2, limit)


#: How many vectors of the killer's area `mutants` tries when naming a kill by an older range.
NAMING_TRIES = 12


def differing_keys(diff: Iterable[str]) -> set[str]:
    """The keys (and `return of op N`) a verdict's diff names at its top level."""
    found = set()
    for line in diff:
        if line and not line[0].isspace():
            head = line.split(":", 1)[0]
            found.add(head.split(" (", 1)[0] if head.startswith("return of op") else head)
    return found


def score_line(results: Sequence[MutantResult]) -> str:
    """`mutation score: K/N killed (P%)`, P rounded down (100% only when all are killed)."""
    killed = sum(r.killed for r in results)
    percent = killed * 100 // len(results) if results else 0
    return f"mutation score: {killed}/{len(results)} killed ({percent}%)"


def catalog_for(protocol: versions.Version) -> tuple[Mutant, ...]:
    """The catalog of a protocol: the main one (6.x script text); before 6.0.0, the legacy
    repeatable jobs' mutants, the only ones written for 5.x script text."""
    return REPEATABLE_MUTANTS if protocol < versions.REPEATABLES_REMOVED else CATALOG


def main(args: argparse.Namespace) -> int:
    """Run the catalog of the protocol judged at against `args.scripts` on `args.redis` under
    `args.profile`."""
    try:
        return _run_catalog(args, catalog_for(_protocol(args)))
    except CatalogError as exc:
        print(f"bullmq-conformance: catalog error: {exc}", file=sys.stderr)
        return EXIT_CATALOG


def _protocol(args: argparse.Namespace) -> versions.Version:
    """The version the scripts are judged at: `--protocol`; by default the current one, or,
    for `official`, the npm release whose scripts the pinned PyPI release ships (as `run
    --protocol` and the releases page judge it)."""
    raw = getattr(args, "protocol", None)
    if raw is None:
        return versions.parse(PINNED_PROTOCOL) if args.scripts == "official" \
            else versions.CURRENT
    version = protocol_version(raw)
    if version is None:
        raise UsageError("--protocol every: mutants judge one version; name it")
    return version


def _run_catalog(args: argparse.Namespace, catalog: Sequence[Mutant]) -> int:
    started = time.perf_counter()
    source = resolve_scripts(args.scripts)
    profile = profile_for(args.profile)
    check_catalog(source, catalog)
    protocol = _protocol(args)
    every = list(iter_vectors(load_dir(vectors_dir())))
    vectors = order_vectors(every, profile, protocol)
    if catalog is REPEATABLE_MUTANTS:
        # The rest of a 5.x release's scripts have no mutants here: only the vectors that
        # call the repeatable job scripts can kill these.
        vectors = [v for v in vectors if scripts_called(v) & set(REPEATABLE_KEYS)]
    width = max(len(m.name) for m in catalog)
    dwidth = max(len(m.defect) for m in catalog)
    results: list[MutantResult] = []
    with provision(args.redis) as server:
        print(f"bullmq-conformance mutants: {len(catalog)} mutants of {source} "
              f"({flavor_of(source)}), {len(vectors)} vectors of protocol "
              f"{versions.text(protocol)}, profile {profile.name}, "
              f"redis {server.kind} {server.engine} {server.version}", flush=True)
        client = client_for(server)
        run = MutationRun(source, vectors, client, profile, older_variants(every), server,
                          protocol)
        try:
            for mutant in catalog:
                result = run.run(mutant)
                results.append(result)
                status = "killed" if result.killed else "SURVIVED"
                print(f"  {mutant.name:<{width}}  {mutant.defect:<{dwidth}}  {status:<8}  "
                      f"{result.vector_id or '-':<52} {result.seconds:6.2f} s", flush=True)
                if result.older is not None and result.older.span.until is not None:
                    print(f"  {'':<{width}}  where it fails, it writes what bullmq wrote "
                          f"before {versions.text(result.older.span.until)} (e.g. "
                          f"{result.older.id})", flush=True)
        finally:
            client.close()
    for vector_id in run.excluded:
        print(f"note: {vector_id} fails on the unmutated scripts; not counted as a kill")
    survivors = [r.mutant.name for r in results if not r.killed]
    if survivors:
        print(f"survived: {', '.join(survivors)}")
    print(f"{score_line(results)}; total {time.perf_counter() - started:.1f} s")
    return EXIT_OK if not survivors else EXIT_SURVIVED
