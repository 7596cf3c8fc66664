"""Judge a pinned spread of real BullMQ releases, write releases.json, and gate CI on it.

    python ci/releases.py [--redis SPEC] [--jobs N] [--work DIR] OUTDIR   (ci/releases.sh runs it)

Each row of ci/releases.toml (the list of them, read by ci/release_list.py) is a release's
scripts directory (fetched by ci/fetch-releases.sh, nothing installed), a Rust crate's SDK
or port (`--candidate bullmq-rust` or `port:NAME`, its bundled adapter built on first use), or
a client: a PyPI
package that provides the `bullmq` import, installed into a venv of its own (under --work DIR, a
temporary directory unless given; it sees this environment's packages, the suite among them,
but its own `bullmq` comes first); one more row is the Node client of the bundled adapter
(`bullmq-node`, npm bullmq as pinned in its package-lock). For each row,
`identify --json` names its protocol range; then `run --protocol V` judges it at V: its own
npm version, the npm version a PyPI release ships the scripts of (README, "Protocol
versions"), or else the identified range's start. OUTDIR/rows/ keeps each row's JSON;
OUTDIR/releases.json holds them all (`conformance.reports.releases`).

The gate (exit 1 when a row breaks it, after writing everything):
- a row judged at its own version passes it with 0 failed and 0 errored, and `identify` names
  a range holding that version;
- a release older than supported (BullMQ 4.x scripts) is identified as such;
- a row judged at its identified start passes it with 0 failed and 0 errored;
- a client with a known bug (`expect`: an expectations file under ci/expectations/) fails
  exactly the vectors its file lists, errors none, and `identify` finds no range but the
  closest holds its version; an SDK or a port (a crate, through its bundled adapter) with an
  expectations file the same, but for the closest range. Any other failure, or any error,
  breaks the gate.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from release_list import IDENTIFIED, OLDER, Pin, ReleaseListError, load

from conformance.candidates.scripts.candidate import scripts_covered
from conformance.core.outcomes import Outcome
from conformance.reports.json_report import area_tallies, engine_text
from conformance.reports.releases import Release, Releases, ScriptsCovered
from conformance.run.session import SUITE_VERSION
from conformance.vectors import expectations
from reference_impl import versions

ROOT = Path(__file__).resolve().parents[1]

EXPECTATIONS = ROOT / "ci" / "expectations"


def node_pin() -> Pin:
    """The official Node client, at the npm bullmq version the bundled package-lock pins."""
    lock = ROOT / "conformance" / "bundled" / "node-bullmq" / "package-lock.json"
    version = json.loads(lock.read_text(encoding="utf-8"))["packages"]["node_modules/bullmq"][
        "version"]
    return Pin("client", "npm", "bullmq", version, version)


def _holds(span: dict[str, Any] | None, version: str) -> bool:
    return span is not None and versions.Range(
        versions.parse(span["since"]),
        versions.parse(span["until"]) if span["until"] else None).holds(versions.parse(version))


@dataclass(frozen=True)
class Judged:
    """What the two commands gave for one pin."""

    identify: dict[str, Any]
    report: dict[str, Any] | None  # the run's report; None when not run
    problems: tuple[str, ...]  # what went wrong running them
    scripts: ScriptsCovered | None = None  # a scripts directory's queue scripts the vectors call


def _cli(python: str, args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-m", "conformance", *args], cwd=cwd, text=True,
                          capture_output=True, check=False, timeout=900)


def _client_python(pin: Pin, work: Path) -> str:
    """A venv of the pin's own with its package installed; this environment's packages (the
    suite) visible under it."""
    if pin.registry == "npm":
        return sys.executable
    venv = work / "venvs" / pin.slug
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                       check=True, capture_output=True)
    # pip reports conflicts with the packages it can see (the suite's own pinned bullmq), which
    # this venv shadows on purpose: only the exit code matters.
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                           "--disable-pip-version-check", f"{pin.package}=={pin.version}"],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"pip install {pin.package}=={pin.version}: {proc.stderr[-500:]}")
    return str(venv / "bin" / "python")


def judge(pin: Pin, out: Path, work: Path, redis: str) -> Judged:
    """Run `identify` then `run` on one pin; keep both JSON files under OUTDIR/rows/."""
    rows = out / "rows"
    # Run from the work directory with a relative spec: no path of this machine in the reports.
    scripts = None
    if pin.kind == "scripts":
        python, candidate, cwd = sys.executable, f"scripts:{pin.slug}", work / "scripts"
        found = scripts_covered(work / "scripts" / pin.slug)
        scripts = ScriptsCovered(found.covered, found.uncovered)
    elif pin.candidate is not None:  # a crate's SDK or port, through its bundled adapter
        python, candidate, cwd = sys.executable, pin.candidate, work
    else:
        python, cwd = _client_python(pin, work), work
        candidate = "bullmq-node" if pin.registry == "npm" else "bullmq-py"
    common = ["--candidate", candidate, "--redis", redis]
    proc = _cli(python, ["identify", "--json", *common, "--report-json",
                         str(rows / f"{pin.slug}.identify-report.json")], cwd)
    try:
        identified: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return Judged({"protocol": None, "closest": None, "older_than_supported": False}, None,
                      (f"identify exited {proc.returncode}: {proc.stderr.strip()[-300:]}",),
                      scripts)
    identified["candidate"] = candidate  # the spec given, not this machine's path
    (rows / f"{pin.slug}.identify.json").write_text(json.dumps(identified, indent=2) + "\n",
                                                    encoding="utf-8")
    protocol = identified["protocol"]["since"] if pin.judge == IDENTIFIED and \
        identified["protocol"] else pin.judge
    if pin.judge == OLDER or protocol == IDENTIFIED:
        return Judged(identified, None, (), scripts)
    report = rows / f"{pin.slug}.report.json"
    proc = _cli(python, ["run", "-q", "--examples", "0", "--protocol", protocol, *common,
                         "--report-json", str(report)], cwd)
    if proc.returncode not in (0, 1) or not report.is_file():
        return Judged(identified, None, (f"run exited {proc.returncode}: "
                                         f"{proc.stderr.strip()[-300:]}",), scripts)
    return Judged(identified, json.loads(report.read_text(encoding="utf-8")), (), scripts)


def gate(pin: Pin, judged: Judged) -> list[str]:
    """What is wrong with a pin's results (empty: it passes the gate)."""
    found, report = judged.identify, judged.report
    problems = list(judged.problems)
    if pin.judge == OLDER:
        if not found["older_than_supported"]:
            problems.append("not identified as older than supported")
        return problems
    if report is None:
        return problems or ["identify named no range to judge it at"]
    ids = {o: sorted(r["id"] for r in report["results"] if r["outcome"] == o) for o in Outcome}
    if ids[Outcome.ERRORED]:
        problems.append(f"{len(ids[Outcome.ERRORED])} errored, e.g. {ids[Outcome.ERRORED][0]}")
    if pin.kind == "client" and pin.registry == "pypi" and not report[
            "candidate_version"].startswith(f"{pin.package} {pin.version}"):
        problems.append(f"the bullmq import came from {report['candidate_version']}")
    if pin.expect is None:
        if ids[Outcome.FAILED]:
            problems.append(f"{len(ids[Outcome.FAILED])} failed, e.g. {ids[Outcome.FAILED][0]}")
        if not _holds(found["protocol"], report["protocol"]):
            problems.append(f"identify names {found['protocol']}, not a range holding "
                            f"{report['protocol']}")
        return problems
    known = _known(pin)
    unexpected = [i for i in ids[Outcome.FAILED] if known.match(i) is None]
    if unexpected:
        problems.append(f"{len(unexpected)} failed beyond {pin.expect}, e.g. {unexpected[0]}")
    passed = [i for i in ids[Outcome.PASSED] if known.match(i) is not None]
    if passed:
        problems.append(f"{len(passed)} listed in {pin.expect} passed, e.g. {passed[0]}")
    if found["protocol"] is not None:
        problems.append(f"identify names {found['protocol']}, not: no range")
    elif pin.kind == "client" and not _holds(found["closest"], report["protocol"]):
        # A port's many failures of one cause make its closest range a guess: only a client
        # with one known bug is held to the closest range holding its version.
        problems.append(f"identify's closest range is {found['closest']}, not one holding "
                        f"{report['protocol']}")
    return problems


def _known(pin: Pin) -> expectations.Expectations:
    """The entries of every expectations file of `pin`, in order, as one list."""
    loaded = [expectations.load(EXPECTATIONS / name) for name in pin.expect_files]
    return expectations.Expectations(loaded[0].path,
                                     tuple(entry for one in loaded for entry in one.entries))


def row(pin: Pin, judged: Judged) -> Release:
    """The releases.json row of a judged pin."""
    report = judged.report
    results = report["results"] if report else []
    known = None
    if pin.expect is not None:
        entries = _known(pin).entries
        known = "; ".join(dict.fromkeys(entry.describe() for entry in entries))
    return Release(
        pin.name, pin.slug, pin.kind, pin.registry, pin.package, pin.version,
        report["protocol"] if report else None, judged.identify,
        dict(area_tallies(report)) if report else {},
        tuple(r["id"] for r in results if r["outcome"] == Outcome.FAILED),
        tuple(r["id"] for r in results if r["outcome"] == Outcome.ERRORED),
        known, tuple(gate(pin, judged)), judged.scripts)


def main(argv: Sequence[str] | None = None) -> int:
    """Fetch, judge every pin, write OUTDIR/releases.json; 0 when every row passes the gate."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, metavar="OUTDIR")
    parser.add_argument("--redis", default="local", help="--redis of every run (default local)")
    parser.add_argument("--jobs", type=int, default=2, help="rows judged at once (default 2)")
    parser.add_argument("--work", type=Path, help="keep the fetched scripts and the clients' "
                        "venvs here, to reuse (default: a temporary directory)")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    (out / "rows").mkdir(parents=True, exist_ok=True)
    try:
        pins = (*load(), node_pin())
    except ReleaseListError as exc:
        print(f"ci/releases.py: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bmqc-releases-") as scratch:
        work = (args.work or Path(scratch)).resolve()
        fetch = [pin.fetch for pin in pins if pin.kind == "scripts"]
        subprocess.run(["bash", str(ROOT / "ci" / "fetch-releases.sh"), str(work / "scripts"),
                        *fetch], check=True, stdout=subprocess.DEVNULL)
        with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
            results = list(pool.map(lambda pin: judge(pin, out, work, args.redis), pins))
    rows = tuple(row(pin, judged) for pin, judged in zip(pins, results, strict=True))
    areas = tuple(dict.fromkeys(area for r in rows for area in r.areas))
    redis = next((engine_text(j.report) for j in results if j.report), "not started")
    releases = Releases(SUITE_VERSION, redis, areas, rows)
    (out / "releases.json").write_text(json.dumps(releases.as_dict(), indent=2) + "\n",
                                       encoding="utf-8")
    bad = 0
    for r in rows:
        verdict = "; ".join(r.problems) if r.problems else "ok"
        print(f"{r.slug:40} {r.range:32} {len(r.failed):3} failed  {verdict}")
        bad += bool(r.problems)
    print(f"--- {len(rows)} releases, {bad} break the gate; wrote {out / 'releases.json'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
