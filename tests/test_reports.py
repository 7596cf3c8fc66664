"""Reports: the versioned JSON report and its schema, the Markdown summary of `run --summary-md`,
and the HTML page of `report --html`, which is loaded and clicked in a real headless Chromium."""

from __future__ import annotations

import base64
import contextlib
import copy
import html
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from conformance.reports.html import Column, render_html
from conformance.reports.json_report import summary_markdown
from conformance.resources import lua_dir, schema

LUA_DIR = lua_dir()

SCHEMA = schema("report")
SELECTION = "band-bump or delayed-score or key-naming or properties"
SEED, EXAMPLES = 7, 3
OUTCOMES = ("passed", "failed", "errored", "skipped", "xfailed")
# The failing candidate's expectations: one expected failure, one expected skip; their reasons
# carry the characters a page or a summary must escape.
XFAIL_ID, SKIP_ID = "band-bump/4097-saturates", "delayed-score/delay-one-year"
EXPECTATIONS = f"""expectations:
  "{XFAIL_ID}": {{outcome: fail, reason: "we cap <bands> & {{keys}}"}}
  "{SKIP_ID}": {{outcome: skip, reason: 'no "year" delays <yet>'}}
"""
CLICKED = "band-bump/2-same-ms"  # a vector the broken copy fails with a diff
HOSTILE = "<script>window.pwned = 1</script> {\"a\": 'b'} & </pre><b>not bold</b>"


def cli(*args: str, timeout: float = 180, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True,
                          text=True, timeout=timeout, check=False, env=env)


def broken_lua(directory: Path) -> Path:
    """A copy of our scripts with the wrong band shift (F*0x800) and no changeDelay script."""
    lua = directory / "lua"
    shutil.copytree(LUA_DIR, lua)
    include = lua / "includes" / "getDelayedScore.lua"
    text = include.read_text(encoding="utf-8")
    band = ("  local bandFloor = fireAt * 0x1000\n"
            "  local bandCeiling = (fireAt + 1) * 0x1000 - 1\n")
    assert band in text, "getDelayedScore.lua changed: update this test"
    include.write_text(text.replace(band, band.replace("0x1000", "0x800")), encoding="utf-8")
    (lua / "changeDelay-4.lua").unlink()
    return lua


@dataclass(frozen=True)
class Runs:
    """Two real runs of the CLI on the session Redis, and what they wrote."""

    passing: subprocess.CompletedProcess[str]
    failing: subprocess.CompletedProcess[str]
    passing_json: Path
    failing_json: Path
    summary: Path
    before: str  # what the summary file held before both runs appended to it

    def documents(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text(encoding="utf-8"))
                for p in (self.passing_json, self.failing_json)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Runs:
    tmp = tmp_path_factory.mktemp("reports")
    lua = broken_lua(tmp)
    expect = tmp / "expect.yaml"
    expect.write_text(EXPECTATIONS, encoding="utf-8")
    summary = tmp / "summary.md"
    before = "## Earlier step\n\nits own text, no final newline"
    summary.write_text(before, encoding="utf-8")
    common = ["run", "-q", "--redis", redis_url, "-k", SELECTION, "--seed", str(SEED),
              "--examples", str(EXAMPLES), "--summary-md", str(summary)]
    passing_json, failing_json = tmp / "reference.json", tmp / "broken.json"
    passing = cli(*common, "--report-json", str(passing_json))
    failing = cli(*common, "--candidate", f"scripts:{lua}", "--expect", str(expect),
                  "--report-json", str(failing_json))
    return Runs(passing, failing, passing_json, failing_json, summary, before)


def test_runs_exit_as_documented(runs: Runs) -> None:
    assert runs.passing.returncode == 0, runs.passing.stdout[-3000:] + runs.passing.stderr
    assert runs.failing.returncode == 1, runs.failing.stdout[-3000:] + runs.failing.stderr


# --- the JSON report and its schema ---------------------------------------------------------

def test_schema_is_valid_2020_12() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(SCHEMA)


def test_real_reports_match_the_schema(runs: Runs) -> None:
    validator = Draft202012Validator(SCHEMA)
    for document in runs.documents():
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
        assert errors == []


def test_reports_carry_the_run_info(runs: Runs, redis_server: Any) -> None:
    passing, failing = runs.documents()
    for document in (passing, failing):
        assert document["report_version"] == 1
        assert document["suite_version"] == "0.1.0"
        assert (document["seed"], document["examples"]) == (SEED, EXAMPLES)
        assert document["profile"] == "bullmq"
        assert document["redis"]["kind"] == "url"
        assert document["redis"]["engine"] == redis_server.engine
        assert document["redis"]["version"] == redis_server.version
        outcomes = [r["outcome"] for r in document["results"]]
        assert document["totals"] == {o: outcomes.count(o) for o in OUTCOMES}
    assert passing["candidate"] == "reference"
    assert failing["candidate"].startswith("scripts:") and failing["candidate"].endswith("lua")
    assert "(8/9 scripts)" in failing["candidate_version"]  # changeDelay-4.lua removed


def test_failing_report_has_every_outcome_and_the_diffs(runs: Runs) -> None:
    results = {r["id"]: r for r in runs.documents()[1]["results"]}
    assert {r["outcome"] for r in results.values()} == set(OUTCOMES)
    clicked = results[CLICKED]
    assert clicked["outcome"] == "failed"
    assert clicked["message"].splitlines()[0] == "2 difference(s) in Redis state"
    assert "member '1': expected score 6963200020480000 (F=1700000005000 +0), actual " \
           "3481600010240000 (F=850000002500 +0)" in clicked["message"]
    assert results[XFAIL_ID]["outcome"] == "xfailed"
    assert results[SKIP_ID]["outcome"] == "skipped"
    assert 'no "year" delays <yet>' in results[SKIP_ID]["message"]
    errored = [r for r in results.values() if r["outcome"] == "errored"]
    assert errored and all("missing script changeDelay-4.lua" in r["message"] for r in errored)


@pytest.mark.parametrize(
    ("breaks", "where"),
    [
        (lambda d: d.pop("report_version"), "report_version"),
        (lambda d: d.update(report_version=2), "report_version"),
        (lambda d: d.pop("seed"), "seed"),
        (lambda d: d.update(examples=-1), "examples"),
        (lambda d: d["results"][0].update(outcome="crashed"), "outcome"),
        (lambda d: d["results"][0].pop("message"), "message"),
        (lambda d: d["totals"].pop("xfailed"), "xfailed"),
        (lambda d: d["redis"].update(kind="ftp"), "kind"),
        (lambda d: d.update(extra=1), "extra"),
    ],
    ids=["no-version", "version-2", "no-seed", "negative-examples", "unknown-outcome",
         "no-message", "no-xfailed-total", "unknown-kind", "unknown-field"],
)
def test_schema_rejects_what_is_not_a_report(runs: Runs, breaks: Any, where: str) -> None:
    document = copy.deepcopy(runs.documents()[1])
    breaks(document)
    errors = list(Draft202012Validator(SCHEMA).iter_errors(document))
    assert errors and any(where in e.message or where in e.absolute_path for e in errors)


# --- the Markdown summary ----------------------------------------------------------------------

def _sections(text: str) -> list[str]:
    return re.split(r"(?m)^(?=### bullmq-conformance: )", text)


def _table(section: str) -> dict[str, list[int]]:
    rows = {}
    for line in section.splitlines():
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[1:] and all(c.isdigit() for c in cells[1:]):
            rows[cells[0]] = [int(c) for c in cells[1:]]
    return rows


def test_summary_is_appended_after_what_was_there(runs: Runs) -> None:
    text = runs.summary.read_text(encoding="utf-8")
    earlier, first, second = _sections(text)
    assert earlier == runs.before + "\n\n"
    assert first.startswith("### bullmq-conformance: reference: passed (")
    assert second.startswith("### bullmq-conformance: scripts:")
    assert first.endswith("\n\n") and second.endswith("\n") and not second.endswith("\n\n")


def test_summary_tables_match_the_json(runs: Runs) -> None:
    sections = _sections(runs.summary.read_text(encoding="utf-8"))[1:]
    for section, document in zip(sections, runs.documents(), strict=True):
        header = next(line for line in section.splitlines() if line.startswith("| area"))
        assert [c.strip() for c in header.strip("|").split("|")] == ["area", *OUTCOMES]
        table = _table(section)
        expected: dict[str, Counter[str]] = {}
        for result in document["results"]:
            expected.setdefault(result["area"], Counter())[result["outcome"]] += 1
        assert table.pop("total") == [document["totals"][o] for o in OUTCOMES]
        assert list(table) == list(expected)  # the areas, in run order
        for area, counts in expected.items():
            assert table[area] == [counts[o] for o in OUTCOMES], area


def test_summary_names_the_run(runs: Runs, redis_server: Any) -> None:
    sections = _sections(runs.summary.read_text(encoding="utf-8"))[1:]
    for section, document in zip(sections, runs.documents(), strict=True):
        info = section.splitlines()[2]
        plain = re.sub(r"\\(.)", r"\1", info)
        assert info.startswith("bullmq-conformance 0.1.0 · candidate ")
        assert "\\[" in info and "\\]" in info  # Markdown link brackets, escaped
        assert f"candidate {document['candidate']} [{document['candidate_version']}] · " \
               f"profile bullmq · redis url {redis_server.engine} {redis_server.version}" \
               in plain
        assert info.endswith(f"seed {SEED}, {EXAMPLES} examples")


def test_summary_shows_the_first_five_failures_with_their_diffs(runs: Runs) -> None:
    passing, failing = _sections(runs.summary.read_text(encoding="utf-8"))[1:]
    assert "First failures" not in passing and "```" not in passing
    document = runs.documents()[1]
    failures = [r for r in document["results"] if r["outcome"] in ("failed", "errored")]
    assert len(failures) > 5
    assert f"#### First failures (5 of {len(failures)})" in failing
    blocks = re.findall(r"(?ms)^\*\*(.+?)\*\* \((\w+)\)\n\n```text\n(.*?)\n```$", failing)
    assert [(i.replace("\\", ""), o, m) for i, o, m in blocks] == [
        (r["id"], r["outcome"], r["message"]) for r in failures[:5]]


def test_summary_without_report_json_uses_a_temporary_report(tmp_path: Path,
                                                           redis_url: str) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    summary = tmp_path / "summary.md"
    proc = cli("run", "-q", "--redis", redis_url, "-k", "4097", "--examples", "0",
               "--summary-md", str(summary), env={**os.environ, "TMPDIR": str(scratch)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert _table(summary.read_text(encoding="utf-8"))["total"] == [1, 0, 0, 0, 0]
    assert "properties off" in summary.read_text(encoding="utf-8")
    assert list(scratch.iterdir()) == []  # the temporary report is gone


def test_summary_into_a_missing_directory_is_a_usage_error(tmp_path: Path,
                                                         redis_url: str) -> None:
    proc = cli("run", "--redis", redis_url, "-k", "4097",
               "--summary-md", str(tmp_path / "no" / "summary.md"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--summary-md" in proc.stderr
    assert "passed" not in proc.stdout  # refused before running anything


def _document(results: list[dict[str, str]], candidate: str = "c") -> dict[str, Any]:
    totals = Counter(r["outcome"] for r in results)
    return {"report_version": 1, "suite_version": "0.1.0", "candidate": candidate,
            "candidate_version": "v", "profile": "bullmq", "seed": 1, "examples": 0,
            "redis": {"kind": "local", "engine": "redis", "version": "7.0.15",
                      "redis_version": "7.0.15", "cluster": False},
            "totals": {o: totals[o] for o in OUTCOMES}, "results": results}


def test_summary_fences_hold_any_text_and_cells_escape_pipes() -> None:
    message = "one ``` fence\n```` and four"
    results = [{"id": f"a|b/{n}", "area": "a|b", "outcome": "failed", "message": message}
               for n in range(7)]
    document = _document(results, candidate="x|<y>")
    assert not list(Draft202012Validator(SCHEMA).iter_errors(document))
    text = summary_markdown(document)
    assert "| a\\|b | 0 | 7 | 0 | 0 | 0 |" in text
    assert "#### First failures (5 of 7)" in text
    assert text.count(f"`````text\n{message}\n`````") == 5
    assert "x\\|\\<y\\>" in text and "<y>" not in text


# --- the HTML page -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("page") / "report.html"
    proc = cli("report", "--html", str(out), str(runs.passing_json), str(runs.failing_json))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {out}: 2 report(s), ")
    return out


def test_page_has_both_columns_every_vector_and_escaped_diffs(runs: Runs, page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    passing, failing = runs.documents()
    heads = re.findall(r'<th scope="col"><b>(\d)</b> <span class="cand">(.*?)</span>', text)
    assert heads == [("1", "reference"), ("2", html.escape(failing["candidate"]))]
    ids = {r["id"] for r in passing["results"]} | {r["id"] for r in failing["results"]}
    rows = re.findall(r'<tr class="vector"><th scope="row">(.*?)</th>', text)
    assert sorted(rows) == sorted(html.escape(i) for i in ids)
    for result in failing["results"]:
        if result["outcome"] in ("failed", "errored", "xfailed"):
            assert f"<pre>{html.escape(result['message'])}</pre>" in text, result["id"]
    clicked = next(r for r in failing["results"] if r["id"] == CLICKED)["message"]
    assert "member '1'" in clicked and "member '1'" not in text  # quotes are escaped
    assert 'title="no &quot;year&quot; delays &lt;yet&gt;"' in text
    for absent in ("src=", "href=", "@import", "url(", "<link", "<img", "<iframe"):
        assert absent not in text


def test_page_colours_cells_by_outcome(runs: Runs, page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    cells = Counter(re.findall(r'<td class="o o-(\w+)"', text))
    passing, failing = runs.documents()
    expected = Counter(r["outcome"] for r in passing["results"] + failing["results"])
    assert cells == expected  # no absent cell: both runs ran the same selection


def test_page_marks_runs_that_lack_a_vector_as_absent(runs: Runs, tmp_path: Path) -> None:
    passing, failing = runs.documents()
    fewer = copy.deepcopy(passing)
    fewer["results"] = [r for r in fewer["results"] if r["area"] != "key-naming"]
    text = render_html([Column("a.json", fewer), Column("b.json", failing)])
    key_naming = sum(1 for r in failing["results"] if r["area"] == "key-naming")
    assert text.count('<td class="o o-absent"></td>') == key_naming
    assert text.count('<td class="o-absent"></td>') == 1  # the key-naming area row


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read it (No such file or directory)"),
        ("{\"report_version\": 1,", "not JSON (Expecting"),
        ("{}", "not a bullmq-conformance report (version 1): at (top level): "
               "'report_version' is a required property"),
        ('{"suite_version": "0.1.0", "results": []}', "a report from an older suite"),
        ("[1, 2]", "not a bullmq-conformance report (version 1)"),
        (b"\xff\xfe{", "not a JSON report (not UTF-8 text)"),
    ],
    ids=["missing", "not-json", "empty-object", "older-report", "array", "not-utf8"],
)
def test_report_bad_input_is_a_one_line_usage_error(tmp_path: Path, content: str | bytes | None,
                                                    expected: str, runs: Runs) -> None:
    bad = tmp_path / "bad.json"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    elif content is not None:
        bad.write_text(content, encoding="utf-8")
    out = tmp_path / "out.html"
    proc = cli("report", "--html", str(out), str(runs.passing_json), str(bad))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"bullmq-conformance: {bad}: {expected}")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert not out.exists()


def test_report_into_a_missing_directory_is_a_usage_error(tmp_path: Path, runs: Runs) -> None:
    proc = cli("report", "--html", str(tmp_path / "no" / "out.html"), str(runs.passing_json))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "cannot write it" in proc.stderr


def test_report_needs_a_report(tmp_path: Path) -> None:
    proc = cli("report", "--html", str(tmp_path / "out.html"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "REPORT" in proc.stderr


def test_page_escapes_hostile_text() -> None:
    document = _document([{"id": "x/<i>1</i>", "area": "a&b", "outcome": "failed",
                           "message": HOSTILE}], candidate='<img src=x onerror="alert(1)">')
    text = render_html([Column("<b>.json", document)])
    for raw in (HOSTILE, "<script>window", "<img", "<i>1</i>", "<b>.json", "a&b<"):
        assert raw not in text
    assert f"<pre>{html.escape(HOSTILE)}</pre>" in text
    assert text.count("<script>") == 1  # the page's own


# --- in a real headless Chromium -------------------------------------------------------------

def _needed(what: str, install: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required under CI=true: {install}")
    pytest.skip(f"{what} is not installed ({install})")


@pytest.fixture(scope="session")
def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        _needed("chromium", "apt-get install chromium")
    assert found is not None
    return found


def _base_args(binary: str, profile: Path) -> list[str]:
    # A profile per browser: tests run in parallel; root needs --no-sandbox.
    return [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
            f"--user-data-dir={profile}", "--window-size=1200,900"]


class DevTools:
    """A minimal client of the DevTools protocol of one page (JSON over a WebSocket)."""

    def __init__(self, url: str) -> None:
        import websocket

        self.ws = websocket.create_connection(url, timeout=30, suppress_origin=True)
        self.events: list[dict[str, Any]] = []
        self._next = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        self.ws.send(json.dumps({"id": self._next, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self._next:
                assert "error" not in message, (method, message["error"])
                return dict(message["result"])
            self.events.append(message)

    def wait_for(self, event: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while not any(m.get("method") == event for m in self.events):
            assert time.monotonic() < deadline, f"no {event} within {timeout} s"
            self.events.append(json.loads(self.ws.recv()))
        return next(m for m in self.events if m.get("method") == event)

    def evaluate(self, expression: str) -> Any:
        reply = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in reply, reply["exceptionDetails"]
        return reply["result"].get("value")

    def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)


@contextlib.contextmanager
def devtools(binary: str, tmp_path: Path) -> Iterator[DevTools]:
    """A headless Chromium on a blank page, driven through its DevTools port."""
    try:
        import websocket  # noqa: F401
    except ModuleNotFoundError:
        _needed("the websocket-client package", "pip install -e '.[dev]'")
    profile = tmp_path / "profile"
    log = (tmp_path / "chromium.log").open("wb")
    proc = subprocess.Popen([*_base_args(binary, profile), "--remote-debugging-port=0",
                             "about:blank"], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)
    client = None
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        targets: list[dict[str, Any]] = []
        while not targets:
            assert proc.poll() is None, f"chromium exited {proc.returncode}: see {log.name}"
            assert time.monotonic() < deadline, f"no DevTools page within 60 s: see {log.name}"
            time.sleep(0.1)
            if not port_file.is_file() or not port_file.read_text().strip():
                continue
            port = port_file.read_text().split()[0]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                targets = [t for t in json.load(r) if t["type"] == "page"]
        client = DevTools(targets[0]["webSocketDebuggerUrl"])
        yield client
    finally:
        if client is not None:
            client.ws.close()
        # The browser's own process group: its renderer and helper processes, nothing else.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        log.close()


def _load(client: DevTools, url: str) -> None:
    for domain in ("Page", "Runtime", "Network", "Log"):
        client.call(f"{domain}.enable")
    client.call("Emulation.setDeviceMetricsOverride", width=1200, height=900,
                deviceScaleFactor=1, mobile=False)
    client.call("Page.navigate", url=url)
    client.wait_for("Page.loadEventFired")


def _problems(client: DevTools) -> list[Any]:
    """Script exceptions and console or browser errors (a CSP violation is one)."""
    return [m for m in client.events
            if m.get("method") == "Runtime.exceptionThrown"
            or (m.get("method") == "Runtime.consoleAPICalled" and m["params"]["type"] == "error")
            or (m.get("method") == "Log.entryAdded" and m["params"]["entry"]["level"] == "error")]


_ROW_STATE = """(() => {
  const row = document.getElementById(%s);
  const button = document.getElementById(%s);
  return {display: getComputedStyle(row).display, height: row.getBoundingClientRect().height,
          expanded: button.getAttribute("aria-expanded"),
          text: row.querySelector("pre").textContent};
})()"""


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_page_in_chromium_renders_and_a_click_unfolds_the_diff(
        chromium: str, page: Path, runs: Runs, tmp_path: Path) -> None:
    passing, failing = runs.documents()
    areas = {r["area"] for r in passing["results"] + failing["results"]}
    ids = {r["id"] for r in passing["results"] + failing["results"]}
    message = next(r for r in failing["results"] if r["id"] == CLICKED)["message"]
    cell = f"c2-{CLICKED}"
    state = _ROW_STATE % (json.dumps("d" + cell), json.dumps(cell))
    with devtools(chromium, tmp_path) as client:
        _load(client, page.as_uri())
        counts = client.evaluate("""(() => {
          const rows = [...document.querySelectorAll("#matrix tbody tr")];
          return {area: rows.filter(r => r.classList.contains("area")).length,
                  vector: rows.filter(r => r.classList.contains("vector")).length,
                  shown: rows.filter(r => r.getClientRects().length > 0).length,
                  columns: document.querySelectorAll("#matrix thead th").length,
                  bars: document.querySelectorAll("svg rect.bar").length};
        })()""")
        assert counts == {"area": len(areas), "vector": len(ids), "shown": len(areas) + len(ids),
                          "columns": 3, "bars": 2 * len(areas)}
        colours = client.evaluate(f"""Object.fromEntries({json.dumps(OUTCOMES)}.map(o =>
          [o, getComputedStyle(document.querySelector("td.o-" + o)).backgroundColor]))""")
        assert colours == {"passed": "rgb(201, 240, 211)", "failed": "rgb(255, 201, 201)",
                           "errored": "rgb(255, 216, 168)", "skipped": "rgb(233, 236, 239)",
                           "xfailed": "rgb(229, 219, 255)"}
        before = client.evaluate(state)
        assert before == {"display": "none", "height": 0, "expanded": "false", "text": message}
        point = client.evaluate(f"""(() => {{
          const button = document.getElementById({json.dumps(cell)});
          button.scrollIntoView({{block: "center"}});
          const box = button.getBoundingClientRect();
          const x = box.left + box.width / 2, y = box.top + box.height / 2;
          return {{x, y, hit: document.elementFromPoint(x, y) === button}};
        }})()""")
        assert point["hit"], "the failed cell is covered by something else"
        client.click(point["x"], point["y"])
        after = client.evaluate(state)
        assert after["display"] == "table-row" and after["height"] > 40
        assert after["expanded"] == "true" and after["text"] == message
        shot = base64.b64decode(client.call("Page.captureScreenshot", format="png")["data"])
        (tmp_path / "report.png").write_bytes(shot)
        assert _png_size(shot) == (1200, 900)
        client.click(point["x"], point["y"])
        assert client.evaluate(state)["display"] == "none"
        requests = [m["params"]["request"]["url"] for m in client.events
                    if m.get("method") == "Network.requestWillBeSent"]
        assert requests == [page.as_uri()]  # nothing fetched beside the page itself
        assert _problems(client) == []


def test_hostile_text_stays_text_in_chromium(chromium: str, tmp_path: Path) -> None:
    document = _document([{"id": "x/1", "area": "x", "outcome": "errored",
                           "message": HOSTILE}], candidate="<b>c</b>")
    out = tmp_path / "hostile.html"
    out.write_text(render_html([Column("h.json", document)]), encoding="utf-8")
    with devtools(chromium, tmp_path) as client:
        _load(client, out.as_uri() + "#open=c1-x/1")
        assert client.evaluate("window.pwned === undefined")
        assert client.evaluate('document.querySelectorAll("script").length') == 1
        assert client.evaluate('document.querySelector("tr.detail pre").children.length') == 0
        assert client.evaluate('document.querySelector("tr.detail pre").textContent') == HOSTILE
        assert client.evaluate('document.querySelector(".cand").textContent') == "<b>c</b>"
        assert _problems(client) == []


def test_fragment_opens_its_cell_on_load(chromium: str, page: Path, tmp_path: Path) -> None:
    url = f"{page.as_uri()}#open=c2-{CLICKED}"
    proc = subprocess.run([*_base_args(chromium, tmp_path / "profile"), "--dump-dom", url],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    opened = re.findall(r'<tr class="detail open" id="d(.*?)">', proc.stdout)
    assert opened == [html.escape(f"c2-{CLICKED}")]
    assert f'id="c2-{CLICKED}" aria-expanded="true"' in proc.stdout
    assert proc.stdout.count('aria-expanded="true"') == 1
