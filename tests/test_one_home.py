"""One home per concept, for values the CI scripts and the tests used to spell again and again.

- The pinned official release: `PINNED_VERSION` in conformance/core/pins.py.
  pyproject.toml's dev extra spells it too, for pip (test_odd_candidates.py holds the two
  equal); the shell reads it through ci/lib.sh, messages and tests through the constant. The
  release list, ci/releases.toml, names it as one real release among those CI checks. Nowhere
  else under conformance/, ci/, .ci/run or tests/ spells it (README.md and docs/ are prose).
- The run prefix `bmqc-<run id>-`: conformance/core/queues.py builds and matches it; nothing
  else under conformance/, ci/ or .ci/ builds a queue name from the brand or matches one with a
  pattern of its own (temporary folders named `bmqc-bench-...` are not queue names).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from conformance.core.pins import PINNED_VERSION

ROOT = Path(__file__).resolve().parents[1]
SKIPPED_DIRS = {"node_modules", "__pycache__", ".git"}

#: The pinned version as written anywhere: not a part of a longer version (13.4.4, 3.4.41).
PINNED = re.compile(rf"(?<![\d.]){re.escape(PINNED_VERSION)}(?!\.?\d)")
#: Where the pinned version lives (paths from the repository root).
PINNED_HOMES = {
    "conformance/core/pins.py": "PINNED_VERSION, its one home",
    "ci/releases.toml": "the release list: the pinned release is one of the releases CI judges",
}

#: A queue name built from the brand, or matched by a pattern of one's own: `bmqc-{run}`,
#: `bmqc-${run}`, `"bmqc-" + run`, the bare brand as a string, `bmqc-[0-9a-f]+`, `bmqc-*`.
RUN_PREFIX = re.compile(r"""bmqc-\$?\{|bmqc-["']\s*[+%]|["']bmqc-["']|bmqc-\[|bmqc-\*""")
RUN_PREFIX_HOME = "conformance/core/queues.py"


def text_files(root: Path, *parts: str) -> Iterator[tuple[str, str]]:
    """(path from `root`, text) of every text file under (or at) `root / part`."""
    for part in parts:
        start = root / part
        paths = [start] if start.is_file() else sorted(start.rglob("*"))
        for path in paths:
            relative = path.relative_to(root)
            if not path.is_file() or SKIPPED_DIRS.intersection(relative.parts):
                continue
            try:
                yield relative.as_posix(), path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue  # not text


def spellings(files: Iterator[tuple[str, str]], pattern: re.Pattern[str]
              ) -> list[tuple[str, int, str]]:
    """(path, line number, line) of every line `pattern` finds."""
    return [(path, number, line.strip())
            for path, text in files
            for number, line in enumerate(text.splitlines(), 1) if pattern.search(line)]


def test_the_pinned_release_is_spelled_only_in_its_home() -> None:
    found = spellings(text_files(ROOT, "conformance", "ci", ".ci/run", "tests"), PINNED)
    stray = [f"{path}:{number}: {line}" for path, number, line in found
             if path not in PINNED_HOMES]
    assert stray == [], (f"bullmq {PINNED_VERSION} spelled outside its home (read "
                         "conformance.core.pins.PINNED_VERSION, or ci/lib.sh's "
                         "pinned_bullmq in a shell script):\n" + "\n".join(stray))
    home = [line for path, _, line in found if path == "conformance/core/pins.py"]
    assert home == [f'PINNED_VERSION = "{PINNED_VERSION}"'], home


def test_the_run_prefix_is_built_and_matched_only_in_its_home() -> None:
    found = spellings(text_files(ROOT, "conformance", "ci", ".ci"), RUN_PREFIX)
    stray = [f"{path}:{number}: {line}" for path, number, line in found
             if path != RUN_PREFIX_HOME]
    assert stray == [], ("the run prefix built or matched outside conformance/core/queues.py "
                         "(use QueueNames, run_prefix, one_off or RUN_PREFIX_RE):\n"
                         + "\n".join(stray))


def test_the_scans_find_what_they_look_for(tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "a.sh").write_text(
        f"pip install bullmq=={PINNED_VERSION}\nx=bmqc-${{run}}-000001\n"
        f"mktemp -t bmqc-bench-XXXXXX  # not a queue\n# bullmq {PINNED_VERSION}1 is another\n",
        encoding="utf-8")
    (tmp_path / "ci" / "b.py").write_text(
        'name = f"bmqc-{run_id}-000001"\nprefix = "bmqc-" + run_id\n'
        "RE = re.compile(r'bmqc-[0-9a-f]+-')\nmatch = '*bmqc-*'\n"
        'tempfile.mkdtemp(prefix="bmqc-fault-")\n', encoding="utf-8")
    (tmp_path / "ci" / "node_modules").mkdir()
    (tmp_path / "ci" / "node_modules" / "c.js").write_text(f"v = '{PINNED_VERSION}'\n")
    (tmp_path / "ci" / "d.bin").write_bytes(b"\xff\xfe" + PINNED_VERSION.encode())
    pinned = spellings(text_files(tmp_path, "ci"), PINNED)
    assert [(path, number) for path, number, _ in pinned] == [("ci/a.sh", 1)]
    prefix = spellings(text_files(tmp_path, "ci"), RUN_PREFIX)
    assert [(path, number) for path, number, _ in prefix] == [
        ("ci/a.sh", 2), ("ci/b.py", 1), ("ci/b.py", 2), ("ci/b.py", 3), ("ci/b.py", 4)]
