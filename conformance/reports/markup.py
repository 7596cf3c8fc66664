"""What the HTML pages of `report` share: escaping, the Content Security Policy, the document
shell with the inlined style, and the per-area cell.

Each page is one self-contained file: inline CSS (and script, when it has one), no fonts,
images or requests; its Content Security Policy forbids any.
"""

from __future__ import annotations

from html import escape

from conformance.core.outcomes import Tally
from conformance.core.resources import report_asset

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def e(text: object) -> str:
    """`text` escaped for HTML text and attribute values."""
    return escape(str(text), quote=True)


def area_cell(tally: Tally | None, title: str = "", *, compact: bool = False) -> str:
    """An area's summary cell: passed/applicable (+ skipped, unless `compact`), green when
    every applicable vector passed, red when one failed or errored, grey when none applied or
    the area is absent (`tally` None); `title` is its tooltip."""
    tip = f' title="{e(title)}"' if title else ""
    if tally is None:
        return f'<td class="o-absent"{tip}></td>'
    state = "bad" if tally.failed or tally.errored else "good" if tally.passed else "none"
    skipped = (f' <span class="skips">+{tally.skipped} skipped</span>'
               if tally.skipped and not compact else "")
    return f'<td class="sum {state}"{tip}>{tally.passed}/{tally.applicable}{skipped}</td>'


def document(title: str, body: str, *, script: str | None = None,
             head: str = "") -> str:
    """A complete page: `title`, the report style, `head` (more head markup), `body`, and
    `script` (inlined) at the end when given. `title` is escaped; `body` is markup."""
    tail = f"<script>{script}</script>" if script is not None else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{e(title)}</title>"
        f"<style>{report_asset('page.css')}</style>{head}"
        f"</head><body>{body}{tail}</body></html>\n")
