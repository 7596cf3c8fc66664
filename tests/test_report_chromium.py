"""The HTML page of `report --html` in a real headless Chromium (driven over the DevTools
protocol): the matrix renders with every row and colour, a click unfolds a failing cell's diff
and a second folds it, hostile text stays text, nothing but the page is fetched, and a `#open=`
fragment opens its cell on load."""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from report_helpers import CLICKED, HOSTILE, OUTCOMES, Runs, report_document

from conformance.reports.html import Column, render_html

pytestmark = pytest.mark.chromium


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
    document = report_document([{"id": "x/1", "area": "x", "outcome": "errored",
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
