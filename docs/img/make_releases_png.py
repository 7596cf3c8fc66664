"""Regenerate docs/img/releases.png, the README's picture of the releases page.

    bash ci/releases.sh --redis local OUTDIR && python docs/img/make_releases_png.py OUTDIR

Builds the page from OUTDIR/releases.json (`report --releases`) and takes a 2200x1350
screenshot of it in headless Chromium (Debian package chromium). The page names releases by
package and version and runs from relative paths (ci/releases.py), so the picture shows no
path of the machine it was made on.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from make_report_png import screenshot  # beside this file: the same shot, another page

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    """Make the picture; exit non-zero with one line if a step fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, help="the OUTDIR of ci/releases.sh")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("needs chromium on PATH (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="bmqc-png-") as scratch:
        page = Path(scratch) / "releases.html"
        proc = subprocess.run([sys.executable, "-m", "conformance", "report", "--releases",
                               str(page), str(args.outdir / "releases.json")], cwd=ROOT,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"report --releases exited {proc.returncode}: {proc.stderr.strip()}")
        out = ROOT / "docs" / "img" / "releases.png"
        screenshot(chromium, page.as_uri(), out, "2200,1350", Path(scratch) / "profile")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
