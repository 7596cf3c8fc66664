"""Regenerate docs/img/report.png, the README's picture of `bullmq-conformance report --html`.

    python docs/img/make_report_png.py [--redis SPEC]

Runs part of the vectors against the reference and against a broken copy of lua/ (wrong band
shift 0x800, changeDelay script removed, with an expectations file), builds the page from both
JSON reports, and takes a 1200x900 screenshot in headless Chromium (Debian package chromium)
with the first failed cell unfolded. Directory names are made relative first, so the picture
shows no path of the machine it was made on.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SELECTION = "band-bump or delayed-score or key-naming or properties"
EXPECTATIONS = """expectations:
  "band-bump/4097-saturates": {outcome: fail, reason: we cap a band at 2048 jobs}
  "delayed-score/delay-one-year": {outcome: skip, reason: no delays over a day yet}
"""
OPENED = "open=c2-band-bump/2-same-ms"


def screenshot(chromium: str, url: str, out: Path, size: str, profile: Path) -> None:
    """Save headless Chromium's picture of `url` (window `size`, "W,H") to `out`."""
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--hide-scrollbars", f"--user-data-dir={profile}", f"--window-size={size}",
         f"--screenshot={out}", url],
        capture_output=True, text=True, check=False, timeout=120)
    if proc.returncode != 0 or not out.is_file():
        sys.exit(f"chromium exited {proc.returncode}: {proc.stderr.strip()[-500:]}")


def _cli(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "conformance", *args], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        sys.exit(f"bullmq-conformance {args[0]} exited {proc.returncode}: {proc.stderr.strip()}")


def _relative(document: dict[str, object], prefixes: list[str]) -> dict[str, object]:
    text = json.dumps(document)
    for prefix in prefixes:
        text = text.replace(json.dumps(prefix)[1:-1], "")
    return dict(json.loads(text))


def main() -> int:
    """Make the picture; exit non-zero with one line if a step fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", default="auto", help="--redis of the two runs (default: auto)")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("needs chromium on PATH (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="bmqc-png-") as scratch:
        tmp = Path(scratch)
        lua = tmp / "lua-0x800"
        shutil.copytree(ROOT / "lua", lua)
        include = lua / "includes" / "getDelayedScore.lua"
        include.write_text(include.read_text(encoding="utf-8").replace(
            "fireAt * 0x1000", "fireAt * 0x800").replace(
            "(fireAt + 1) * 0x1000", "(fireAt + 1) * 0x800"), encoding="utf-8")
        (lua / "changeDelay-4.lua").unlink()
        (tmp / "expect.yaml").write_text(EXPECTATIONS, encoding="utf-8")
        common = ["-q", "--redis", args.redis, "-k", SELECTION, "--seed", "7", "--examples", "3"]
        _cli("run", *common, "--report-json", str(tmp / "raw-reference.json"))
        _cli("run", *common, "--candidate", f"scripts:{lua}", "--expect",
             str(tmp / "expect.yaml"), "--report-json", str(tmp / "raw-lua-0x800.json"))
        reports = []
        for name in ("reference", "lua-0x800"):
            document = json.loads((tmp / f"raw-{name}.json").read_text(encoding="utf-8"))
            report = tmp / f"{name}.json"
            report.write_text(json.dumps(_relative(document, [f"{tmp}/", f"{ROOT}/"])),
                              encoding="utf-8")
            reports.append(str(report))
        page = tmp / "report.html"
        _cli("report", "--html", str(page), *reports)
        out = ROOT / "docs" / "img" / "report.png"
        screenshot(chromium, f"{page.as_uri()}#{OPENED}", out, "1200,900", tmp / "profile")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
