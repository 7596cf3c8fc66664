"""The releases page (`report --releases`, built by ci/releases.sh): a row per release, its
identified range in words, an area cell per vector area coloured by its counts, the failing ids,
escaping, one-line errors for bad input; in headless Chromium, one `<tr>` per release whose range
text agrees with its identify result.

`test_built_page_in_chromium` checks the page ci/releases.sh built: it runs when
BMQC_RELEASES_DIR names that OUTDIR (.ci/run sets it), and is skipped otherwise.
"""

from __future__ import annotations

import copy
import html
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from chromium_helpers import devtools, load, problems
from report_helpers import HOSTILE

from conformance.reports.releases import load_releases, range_text, render_releases
from tests.cli_helpers import cli


def _row(slug: str, identify: dict[str, Any], *, protocol: str | None = "6.4.0",
         areas: dict[str, dict[str, int]] | None = None, failed: list[str] | None = None,
         known: str | None = None) -> dict[str, Any]:
    return {"name": f"pypi bullmq {slug}", "slug": slug, "kind": "scripts", "registry": "pypi",
            "package": "bullmq", "version": "1.0.0", "protocol": protocol,
            "identify": identify, "areas": areas or {}, "failed": failed or [], "errored": [],
            "known": known, "problems": []}


def _span(since: str, until: str | None) -> dict[str, Any]:
    return {"since": since, "until": until}


def _found(protocol: dict[str, Any] | None, closest: dict[str, Any] | None = None,
           older: bool = False) -> dict[str, Any]:
    return {"candidate": "c", "protocol": protocol, "closest": closest,
            "evidence": [], "older_than_supported": older}


# Four releases, one of each kind of range: fits with no end, fits a closed range, fits none,
# older than supported.
DOCUMENT: dict[str, Any] = {
    "releases_version": 1, "suite_version": "0.1.0", "redis": "local redis 7.0.15",
    "areas": ["band-bump", "change-priority", "pause"],
    "rows": [
        _row("a", _found(_span("6.3.7", None), _span("6.3.7", None)),
             areas={"band-bump": {"passed": 3, "skipped": 2},
                    "change-priority": {"passed": 5}, "pause": {"skipped": 4}}),
        _row("b", _found(_span("5.1.10", "5.5.4"), _span("5.1.10", "5.5.4")), protocol="5.1.10",
             areas={"band-bump": {"passed": 1}}),
        _row("c", _found(None, _span("5.28.0", "6.0.0")), protocol="5.81.5",
             areas={"change-priority": {"passed": 1, "failed": 2},
                    "pause": {"passed": 2, "failed": 1}},
             failed=["change-priority/one", "change-priority/two", "pause/three<i>"],
             known="ARGV[2] is <the full key> & more"),
        _row("d", _found(None, None, older=True), protocol=None),
    ],
}
RANGES = {"a": "6.3.7 on", "b": "5.1.10 up to 5.5.4",
          "c": "none fits (closest 5.28.0 up to 6.0.0)", "d": "older than supported"}


@pytest.fixture
def releases_json(tmp_path: Path) -> Path:
    path = tmp_path / "releases.json"
    path.write_text(json.dumps(DOCUMENT), encoding="utf-8")
    return path


def _render(tmp_path: Path, document: dict[str, Any] = DOCUMENT) -> str:
    path = tmp_path / "in.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return render_releases(load_releases(path))


def test_range_text_of_each_kind_of_result() -> None:
    for row in DOCUMENT["rows"]:
        assert range_text(row["identify"]) == RANGES[row["slug"]]
    assert range_text(_found(None)) == "none fits"


def test_page_has_a_row_per_release_with_range_area_cells_and_bugs(tmp_path: Path) -> None:
    text = _render(tmp_path)
    rows = re.findall(r'<tr id="r-(\w)" class="release (\w+)">(.*?)</tr>', text)
    assert [(slug, state) for slug, state, _ in rows] == [
        ("a", "good"), ("b", "good"), ("c", "bad"), ("d", "good")]
    cells = {slug: re.findall(r'<td class="(sum \w+|o-absent)"[^>]*>([^<]*)</td>', body)
             for slug, _, body in rows}
    assert cells == {
        "a": [("sum good", "3/3"), ("sum good", "5/5"), ("sum none", "0/0")],
        "b": [("sum good", "1/1"), ("o-absent", ""), ("o-absent", "")],
        "c": [("o-absent", ""), ("sum bad", "1/3"), ("sum bad", "2/3")],
        "d": [("o-absent", ""), ("o-absent", ""), ("o-absent", "")],
    }
    ranges = dict(re.findall(r'<tr id="r-(\w)".*?<td class="range"[^>]*>(.*?)</td>', text))
    assert ranges == RANGES
    assert "<summary>3 failed: change-priority 2, pause 1</summary>" in text
    assert "<li>pause/three&lt;i&gt;</li>" in text and "<i>" not in text
    assert "known bug: ARGV[2] is &lt;the full key&gt; &amp; more" in text
    heads = re.findall(r'<th scope="col" class="area"><span>(.*?)</span>', text)
    assert heads == ["band-bump", "change-priority", "pause"]
    for absent in ("src=", "href=", "@import", "url(", "<link", "<img", "<script"):
        assert absent not in text


def test_a_scripts_row_says_how_many_of_its_queue_scripts_the_vectors_call(
        tmp_path: Path) -> None:
    document = copy.deepcopy(DOCUMENT)
    document["rows"][0]["scripts"] = {"covered": ["getCounts", "pause"],
                                      "uncovered": ["drain<x>"]}
    text = _render(tmp_path, document)
    covered = re.findall(r'<tr id="r-(\w)".*?<td class="(scripts|none)"([^>]*)>(.*?)</td>', text)
    assert [(slug, kind, shown) for slug, kind, _, shown in covered] == [
        ("a", "scripts", "2 of 3"), ("b", "none", "-"), ("c", "none", "-"), ("d", "none", "-")]
    assert 'title="not called by any vector: drain&lt;x&gt;"' in covered[0][2]
    assert "<x>" not in text


def test_hostile_names_stay_text(tmp_path: Path) -> None:
    document = copy.deepcopy(DOCUMENT)
    document["rows"][0]["name"] = HOSTILE
    document["areas"].append(HOSTILE)
    text = _render(tmp_path, document)
    assert HOSTILE not in text and text.count(html.escape(HOSTILE)) >= 2


def test_cli_writes_the_page(releases_json: Path, tmp_path: Path) -> None:
    out = tmp_path / "releases.html"
    proc = cli("report", "--releases", str(out), str(releases_json))
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == f"wrote {out}: 4 release(s), 3 areas\n"
    assert out.read_text(encoding="utf-8").count('<tr id="r-') == 4


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("rows"), "at (top level): 'rows' is a required property"),
        (lambda d: d["rows"][1].update(slug="a"), "row slug 'a' is used more than once"),
        (lambda d: d["rows"][0].update(kind="binary"), "at rows/0/kind: 'binary' is not one of"),
        (lambda d: d["rows"][0]["areas"]["pause"].update(lost=1), "at rows/0/areas/pause: "),
        (lambda d: d.update(releases_version=2), "at releases_version: 1 was expected"),
    ],
)
def test_bad_documents_are_one_line_usage_errors(
        tmp_path: Path, change: Any, message: str) -> None:
    document = copy.deepcopy(DOCUMENT)
    change(document)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    proc = cli("report", "--releases", str(tmp_path / "out.html"), str(path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"bullmq-conformance: {path}: ")
    assert message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "out.html").exists()


def test_cli_usage_errors(releases_json: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "o.html")
    for args, message in (
            ((str(releases_json),), "give --html OUT (a page of --report-json files) or "
             "--releases OUT (the releases page), one of them"),
            (("--html", out, "--releases", out, str(releases_json)), "one of them"),
            (("--releases", out, str(releases_json), str(releases_json)),
             "--releases takes one releases.json (ci/releases.sh writes it), not 2 files"),
            (("--releases", out, str(tmp_path / "none.json")),
             "cannot read it (No such file or directory)")):
        proc = cli("report", *args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


_ROWS = """[...document.querySelectorAll("#releases tbody tr")].map(r => ({
  id: r.id, range: r.querySelector("td.range").textContent,
  shown: r.getClientRects().length > 0}))"""


def _check_in_chromium(chromium: str, page: Path, document: dict[str, Any],
                       tmp_path: Path) -> None:
    """One shown `<tr>` per row of `document`, in order, whose range text is the one its
    identify result gives; nothing fetched but the page, no error."""
    with devtools(chromium, tmp_path) as client:
        load(client, page.as_uri())
        rows = client.evaluate(_ROWS)
        assert rows == [{"id": f"r-{row['slug']}", "range": range_text(row["identify"]),
                         "shown": True} for row in document["rows"]]
        colours = client.evaluate("""Object.fromEntries(["good", "bad", "none"].map(s =>
          [s, getComputedStyle(document.querySelector("#releases td.sum." + s))
              .backgroundColor]))""")
        assert colours == {"good": "rgb(201, 240, 211)", "bad": "rgb(255, 201, 201)",
                           "none": "rgb(233, 236, 239)"}
        requests = [m["params"]["request"]["url"] for m in client.events
                    if m.get("method") == "Network.requestWillBeSent"]
        assert requests == [page.as_uri()]
        assert problems(client) == []


@pytest.mark.chromium
def test_page_in_chromium(chromium: str, releases_json: Path, tmp_path: Path) -> None:
    page = tmp_path / "releases.html"
    assert cli("report", "--releases", str(page), str(releases_json)).returncode == 0
    # The ranges as written by hand above, not only as range_text computes them.
    assert [RANGES[row["slug"]] for row in DOCUMENT["rows"]] == [
        range_text(row["identify"]) for row in DOCUMENT["rows"]]
    _check_in_chromium(chromium, page, DOCUMENT, tmp_path)


@pytest.mark.chromium
def test_built_page_in_chromium(chromium: str, tmp_path: Path) -> None:
    """The page ci/releases.sh built: a row per release of its releases.json, and each row's
    range text agrees with that row's own identify JSON file (rows/<slug>.identify.json)."""
    built = os.environ.get("BMQC_RELEASES_DIR")
    if not built:
        pytest.skip("BMQC_RELEASES_DIR names no ci/releases.sh output (.ci/run sets it)")
    out = Path(built).resolve()
    document = json.loads((out / "releases.json").read_text(encoding="utf-8"))
    assert len(document["rows"]) == 45  # the pins of ci/releases.py, the Node client among them
    # The Rust SDK and the ports, through their bundled adapters.
    assert {row["slug"] for row in document["rows"] if row["kind"] in ("sdk", "port")} == {
        "sdk-crates-bullmq-official-1.4.4", "port-crates-bullrs-0.0.3",
        "port-crates-bullmq-rs-2.2.0"}
    for row in document["rows"]:
        own = json.loads((out / "rows" / f"{row['slug']}.identify.json").read_text("utf-8"))
        assert row["identify"] == own, row["slug"]
    _check_in_chromium(chromium, out / "releases.html", document, tmp_path)
