"""The HTML page of `report --html` in a real headless Chromium (driven over the DevTools
protocol): the matrix renders with every row and colour, a click unfolds a failing cell's diff
and a second folds it, hostile text stays text, nothing but the page is fetched, and a `#open=`
fragment opens its cell on load."""

from __future__ import annotations

import base64
import html
import json
import re
import struct
import subprocess
from pathlib import Path

import pytest
from chromium_helpers import base_args, devtools, load, problems
from report_helpers import CLICKED, HOSTILE, OUTCOMES, Runs, report_document

from conformance.reports.html import Column, render_html

pytestmark = pytest.mark.chromium

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
        load(client, page.as_uri())
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
        assert problems(client) == []


def test_hostile_text_stays_text_in_chromium(chromium: str, tmp_path: Path) -> None:
    document = report_document([{"id": "x/1", "area": "x", "outcome": "errored",
                           "message": HOSTILE}], candidate="<b>c</b>")
    out = tmp_path / "hostile.html"
    out.write_text(render_html([Column("h.json", document)]), encoding="utf-8")
    with devtools(chromium, tmp_path) as client:
        load(client, out.as_uri() + "#open=c1-x/1")
        assert client.evaluate("window.pwned === undefined")
        assert client.evaluate('document.querySelectorAll("script").length') == 1
        assert client.evaluate('document.querySelector("tr.detail pre").children.length') == 0
        assert client.evaluate('document.querySelector("tr.detail pre").textContent') == HOSTILE
        assert client.evaluate('document.querySelector(".cand").textContent') == "<b>c</b>"
        assert problems(client) == []


def test_fragment_opens_its_cell_onload(chromium: str, page: Path, tmp_path: Path) -> None:
    url = f"{page.as_uri()}#open=c2-{CLICKED}"
    proc = subprocess.run([*base_args(chromium, tmp_path / "profile"), "--dump-dom", url],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    opened = re.findall(r'<tr class="detail open" id="d(.*?)">', proc.stdout)
    assert opened == [html.escape(f"c2-{CLICKED}")]
    assert f'id="c2-{CLICKED}" aria-expanded="true"' in proc.stdout
    assert proc.stdout.count('aria-expanded="true"') == 1
