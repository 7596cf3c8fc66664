"""Where the bundled vectors and reference scripts live (beside the package, in the checkout)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VECTORS_DIR = ROOT / "vectors"
LUA_DIR = ROOT / "lua"
SCHEMA_PATH = VECTORS_DIR / "schema.json"
