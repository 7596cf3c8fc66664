"""Small lies and crashes of the command line and the plugin, each in new processes where the
exit code and the absence of a traceback matter: report paths that cannot be written, ids
`pytest -v` prints, a server at its client limit under xdist, identify's closing tally, a server
that wants a password, and files our own test run must not leave in the checkout."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.checks.mutant_catalog import CATALOG
from conformance.checks.mutants import write_mutant
from conformance.core.resources import CACHE_ENV
from conformance.servers.common import free_port
from tests.cli_helpers import ROOT, cli
from tests.fault_helpers import ServerProcess, finish, local_spec, run_past_vector_20
from tests.test_cli import one_vector_dir

DEV_FULL = Path("/dev/full")  # every write to it fails: No space left on device
needs_dev_full = pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full")


def assert_one_line(proc: subprocess.CompletedProcess[str], code: int, *wording: str,
                    progress: bool = False) -> str:
    """Exit `code`, one stderr line that starts with the command's name and holds `wording`,
    and no traceback anywhere. With `progress` (identify's, on stderr), the line comes last."""
    output = proc.stdout + proc.stderr
    assert proc.returncode == code, output[-3000:]
    assert "Traceback" not in output and "INTERNALERROR" not in output, output[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith("bullmq-conformance: ")]
    assert len(said) == 1 and said[-1] == lines[-1], proc.stderr
    assert progress or len(lines) == 1, proc.stderr
    assert all(word in said[0] for word in wording), said[0]
    return said[0]


# --- report paths ---------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "says"), [
    (("run", "--report-json", "{file}/d/r.json"), "--report-json {file}/d/r.json: {file} is no"),
    (("run", "--report-json", "{tmp}"), "--report-json {tmp}: a directory"),
    (("run", "--summary-md", "{file}/s.md"), "--summary-md {file}/s.md: {file} is not a dir"),
    (("run", "--junit-xml", "{file}/j.xml"), "--junit-xml {file}/j.xml: {file} is not a dir"),
    (("identify", "--report-json", "{file}/r.json"), "--report-json {file}/r.json: {file} is"),
])
def test_a_report_path_is_refused_before_redis_is_reached(
        tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    """No Redis answers on the port given: a check made after reaching for it would be exit 3."""
    paths = {"missing": str(tmp_path / "missing" / "dir"), "tmp": str(tmp_path),
             "file": str(tmp_path / "a-file")}
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    nowhere = f"url:redis://127.0.0.1:{free_port()}/0"
    proc = cli(*(arg.format(**paths) for arg in args), "--redis", nowhere)
    assert_one_line(proc, 2, says.format(**paths))


def test_expectations_out_is_refused_before_the_report_is_read(tmp_path: Path) -> None:
    blocking = tmp_path / "a-file"
    blocking.write_text("", encoding="utf-8")
    proc = cli("expectations", "write", "--from", str(tmp_path / "missing.json"), "--out",
               str(blocking / "e.yaml"))
    assert_one_line(proc, 2, f"--out {blocking / 'e.yaml'}: {blocking} is not a directory")


def test_a_missing_folder_of_a_report_is_made(tmp_path: Path, redis_url: str) -> None:
    """As pytest makes the folder of --junit-xml (CI names reports/ in a clean clone)."""
    report = tmp_path / "missing" / "dir" / "r.json"
    proc = cli("run", "--report-json", str(report), "--redis", redis_url, "--examples", "0",
               "-k", "band-bump and 4097")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert report.is_file()


def processes_in(folder: Path) -> set[int]:
    """The processes whose working directory is under `folder` (a server the run started, in
    its temporary directory)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(folder)):
            found.add(int(entry.name))
    return found


@needs_dev_full
@pytest.mark.parametrize("option", ["--report-json", "--junit-xml"])
def test_a_report_that_cannot_be_written_at_the_end_is_one_line_and_leaks_nothing(
        tmp_path: Path, option: str) -> None:
    """The run starts its own redis-server (in a temporary directory under TMPDIR) and writes
    the report last, where the write fails; the server is stopped all the same."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = cli("run", "-q", "--examples", "0", "-k", "4097", "--redis", local_spec(), option,
               str(DEV_FULL), env={**os.environ, "TMPDIR": str(scratch)})
    assert_one_line(proc, 2, f"cannot write the {'JSON' if 'json' in option else 'JUnit XML'} "
                    f"report to {DEV_FULL}: No space left on device")
    assert "redis local" in proc.stdout, "the run started its own server"
    assert not processes_in(scratch), "a process the run started outlived it"


@pytest.mark.slow
@needs_dev_full
def test_identify_and_expectations_writes_that_fail_are_one_line(tmp_path: Path,
                                                                 redis_url: str) -> None:
    found = cli("identify", "--redis", redis_url, "--vectors", str(one_vector_dir(tmp_path)),
                "--report-json", str(DEV_FULL))
    assert_one_line(found, 2, f"cannot write the JSON report to {DEV_FULL}", progress=True)
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"results": []}), encoding="utf-8")
    written = cli("expectations", "write", "--from", str(report), "--out", str(DEV_FULL))
    assert_one_line(written, 2, f"--out {DEV_FULL}: cannot write it")


# --- ids that paste back --------------------------------------------------------------------


def pytest_v(cwd: Path, redis_url: str, *args: str) -> dict[str, str]:
    """`pytest -v` with the plugin in `cwd`: {printed id: outcome}."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("PYTEST_", "BMQC_")) and k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "--bmq-candidate",
         "reference", "--bmq-redis", redis_url, "--bmq-examples", "0", *args],
        cwd=cwd, env=clean, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr
    return dict(re.findall(r"^(\S+::\S+) (PASSED|SKIPPED|FAILED)", proc.stdout, re.M))


@pytest.mark.slow
@pytest.mark.parametrize("where", ["port", "checkout"])
def test_ids_pytest_prints_paste_back(tmp_path: Path, redis_url: str, where: str) -> None:
    """Vector ids hold `/` and `.`; pytest took them for dotted Python names and printed
    `band-bump/2-same-ms::until-5::8::6`. Outside the rootdir (a port's repository) the
    bundled vectors are named `vectors/<file>`, which is no path there: pasted back, it must
    still select the vector."""
    cwd = tmp_path if where == "port" else ROOT
    shown = pytest_v(cwd, redis_url, "-k", "2-same-ms", *(["vectors"] if cwd == ROOT else []))
    wanted = "vectors/band-bump.yaml::band-bump/2-same-ms.until-5.8.6"
    assert wanted in shown, list(shown)
    assert not any("::until-" in printed for printed in shown), list(shown)
    assert pytest_v(cwd, redis_url, wanted) == {wanted: shown[wanted]}


# --- a server at its client limit ----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("limit", [4, 5])
def test_maxclients_under_two_workers_names_the_limit(limit: int) -> None:
    """Under -n 2 one worker is refused a connection while the other is not: their
    collections used to differ, and xdist ended the run with its own message, exit 2."""
    server = ServerProcess(args=("--maxclients", str(limit))).start()
    try:
        proc = cli("run", "-q", "--examples", "0", "-n", "2", "--redis", f"url:{server.url}")
    finally:
        server.stop()
    line = assert_one_line(proc, 3, "infrastructure error: the server refused a connection: "
                           f"max number of clients reached (maxclients {limit})")
    assert "Known limitations" not in proc.stdout + line


@pytest.mark.slow
def test_a_reconnect_refused_mid_run_names_the_limit(tmp_path: Path) -> None:
    """The refusal can come after the run is under way: a dropped connection made again while
    other clients hold every slot. It once read "Redis connection lost: max number of clients
    reached", without the limit or what to do. The limit named is the one asked at the start
    (here the test lowers it to stand for the other clients)."""
    server = ServerProcess(args=("--maxclients", "20")).start()
    try:
        run = run_past_vector_20(server, tmp_path / "r.json")
        admin = server.client()
        mine = admin.client_id()
        admin.config_set("maxclients", 1)  # the connections it holds stay
        for client in admin.client_list():
            if int(client["id"]) != mine:
                admin.client_kill_filter(_id=client["id"])
        ended = finish(run, tmp_path / "r.json")
    finally:
        server.stop()
    proc = subprocess.CompletedProcess(run.args, ended.code, ended.out, ended.err)
    assert_one_line(proc, 3, "infrastructure error: the server refused a connection: "
                    "max number of clients reached (maxclients 20)")


# --- identify's tally -----------------------------------------------------------------------


def test_identify_tally_counts_what_its_json_counts(tmp_path: Path, redis_url: str) -> None:
    """A vector is judged at every range it holds for: the closing line counted each
    judgement (52 failed here), where the result names 3 vectors that fail."""
    mutant = next(m for m in CATALOG if m.name == "pause-renames-wait")
    write_mutant(ROOT / "lua", tmp_path / "lua", mutant)
    report = tmp_path / "r.json"
    proc = cli("identify", "--json", "--candidate", f"scripts:{tmp_path / 'lua'}", "--redis",
               redis_url, "--vectors", str(one_vector_dir(tmp_path, "pause.yaml")),
               "--report-json", str(report))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    closest = json.loads(proc.stdout)["closest"]
    judgements = json.loads(report.read_text())["results"]
    failing = sum(1 for result in judgements if result["outcome"] == "failed")
    tally = proc.stderr.strip().splitlines()[-1]
    assert tally.startswith(f"{len(closest['failed'])} failed, "), tally
    assert f"at npm bullmq {closest['since']} on, the closest range" in tally, tally
    assert failing > len(closest["failed"]), "the judgements must outnumber the vectors"


# --- a server that wants a password ---------------------------------------------------------


@pytest.fixture
def locked() -> Iterator[ServerProcess]:
    """A server of the test's own that wants a password."""
    with ServerProcess(args=("--requirepass", "s3cret")) as server:
        yield server


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "identify"])
def test_a_server_that_wants_a_password_says_how_to_give_it(locked: ServerProcess,
                                                            command: str) -> None:
    address = f"127.0.0.1:{locked.port}"
    proc = cli(command, "--redis", f"url:{locked.url}")
    assert_one_line(proc, 3, f"Redis at {address} needs a password: give it in the URL, "
                    f"--redis url:redis://:PASSWORD@{address}/0")
    wrong = cli(command, "--redis", f"url:redis://:nope@{address}/0")
    line = assert_one_line(wrong, 3, f"Redis at {address} refused the user or password")
    assert "nope" not in line


# --- our own test run -----------------------------------------------------------------------


@pytest.mark.slow
def test_our_hypothesis_tests_leave_nothing_in_the_current_directory(tmp_path: Path) -> None:
    """Hypothesis keeps its storage in `./.hypothesis` unless told otherwise; tests/conftest.py
    tells it the suite's cache directory."""
    cwd, cache = tmp_path / "cwd", tmp_path / "cache"
    cwd.mkdir()
    env = {**{k: v for k, v in os.environ.items()
              if not k.startswith(("PYTEST_", "HYPOTHESIS_"))},
           "PYTHONPATH": str(ROOT), CACHE_ENV: str(cache)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(ROOT / "tests" / "test_keys.py") + "::test_key_shape_property"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert list(cwd.iterdir()) == []
    assert (cache / "hypothesis").is_dir()
