"""What the README and the docs say, held against the code and the files they describe.

Each test reads its facts from the source of truth (the argument parser, the plugin's option
table, the bundled vector files, the Lua directory), never from a run's output, so a new option,
a new script or a regenerated vector set that the prose does not follow fails here.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from conformance.cli.commands import build_parser
from conformance.core.options import CURRENT_PROTOCOL, SHARED
from reference_impl.getter_ops import PLAIN_READS
from reference_impl.scheduler_ops import CLIENT_SIDE

ROOT = Path(__file__).resolve().parents[1]  # the checkout (tests run from it)
README = (ROOT / "README.md").read_text(encoding="utf-8")

#: Hosts of package registries and distribution mirrors. A fact's link names the upstream
#: repository's release, changelog, issue or pull request instead; a script takes its mirror
#: from the machine it runs on.
REGISTRY_HOSTS = ("pypi.org", "pythonhosted.org", "npmjs.com", "npmjs.org", "yarnpkg.com",
                  "debian.org", "ubuntu.com", "crates.io", "hex.pm", "proxy.golang.org",
                  "nuget.org", "rubygems.org")
#: Where a vector's note may point: an upstream repository's pull request, issue, release tag,
#: or a file in it (a changelog).
UPSTREAM_LINK = re.compile(
    r"https://github\.com/[\w.-]+/[\w.-]+/(pull/\d+|issues/\d+|releases/tag/[\w.-]+|blob/\S+)")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _vector_documents() -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8"))
            for path in sorted((ROOT / "vectors" / "json").glob("*.json"))]


def _fenced_block(starting: str) -> str:
    """The README's fenced block whose first line starts with `starting`."""
    match = re.search(r"^```[a-z]*\n(" + re.escape(starting) + r".*?)^```$", README,
                      re.MULTILINE | re.DOTALL)
    assert match, f"no fenced block starting {starting!r} in the README"
    return match.group(1)


def test_vector_links_point_at_upstream_repositories() -> None:
    links = [link for doc in _vector_documents() for note in doc["notes"].values()
             for link in note.get("links", ())]
    assert links
    for link in links:
        assert UPSTREAM_LINK.fullmatch(link), f"{link}: not an upstream release, issue or PR"


def test_no_registry_host_in_docs_ci_or_vectors() -> None:
    files = [*sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "vectors").rglob("*.*")),
             # (the npm packages CI installs under ci/ are not ours)
             *sorted(p for p in (ROOT / "ci").rglob("*") if p.is_file()
                     and "node_modules" not in p.parts)]
    found: list[str] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # not text
        found.extend(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, text.index(host)) + 1}: "
                     f"{host}" for host in REGISTRY_HOSTS if host in text)
    assert not found, found


def test_readme_plugin_options_are_the_plugins() -> None:
    """The README's list of plugin options names each `--bmq-` option, and no other."""
    listed = re.search(r"^- \*\*Options\*\* \(`pytest --help`.*?(?=^- \*\*|^\n)", README,
                       re.MULTILINE | re.DOTALL)
    assert listed, "no plugin options list in the README"
    named = set(re.findall(r"--bmq-[a-z-]+", listed.group(0)))
    assert named == {option.plugin for option in SHARED if option.plugin}


def _subcommands(parser: argparse.ArgumentParser, prefix: str = ""
                 ) -> list[tuple[str, argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = _subcommands(sub, f"{prefix}{name} ")
                found.extend(nested or [(f"{prefix}{name}", sub)])
    return found


def _usage_of(command: str) -> str:
    """Every line of the README's usage block for `command`, continuation lines included."""
    block = _fenced_block("bullmq-conformance run [")
    entries = re.split(r"^(?=bullmq-conformance )", block, flags=re.MULTILINE)
    return " ".join(e for e in entries if e.startswith(f"bullmq-conformance {command} "))


@pytest.mark.parametrize("command", [name for name, _ in _subcommands(build_parser())])
def test_readme_usage_names_every_option(command: str) -> None:
    parser = dict(_subcommands(build_parser()))[command]
    usage = _usage_of(command)
    assert usage, f"the README's Options block has no line for {command}"
    for action in parser._actions:
        flags = [f for f in action.option_strings if f not in ("-h", "--help")]
        if flags:
            assert any(re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", usage) for f in flags), \
                f"{command}: {flags[-1]} is missing from the README's Options block"


def test_readme_sample_run_agrees_with_the_bundled_vectors() -> None:
    """The sample output of a default run: its counts are those of the vector files."""
    sample = _fenced_block("bullmq-conformance 0.1.0: candidate reference [")
    current = _version(CURRENT_PROTOCOL)
    other_range = other_profile = needs_tag = judged = client_side = cron = 0
    for doc in _vector_documents():
        for test in doc["tests"]:
            applies = False
            until = test.get("until")
            if not (_version(test["since"]) <= current and (
                    until is None or current < _version(until))):
                other_range += 1
            elif test.get("profile", "bullmq") != "bullmq":
                other_profile += 1
            elif "hash-tag" in test.get("needs", ()):
                needs_tag += 1
            else:
                judged += 1
                applies = True
            # The client's own computations and reads: our scripts skip them (cron parity; a
            # job and its logs read by id).
            ops = {step["op"] for step in test["when"]}
            cron += applies and bool(ops & set(CLIENT_SIDE))
            client_side += applies and bool(ops & {*CLIENT_SIDE, *PLAIN_READS})
    scripts = len(list((ROOT / "lua").glob("*-[0-9]*.lua")))
    found = re.search(r"\((\d+)/(\d+) scripts\)", sample)
    assert found and found.groups() == (str(scripts), str(scripts)), found
    vectors = other_range + other_profile + needs_tag + judged
    assert re.search(rf"^{vectors + 1} selected$", sample, re.MULTILINE)  # + properties
    assert re.search(rf"^ +{other_range} x holds for another protocol range", sample, re.MULTILINE)
    assert re.search(rf"^ +{other_profile} x vector is for profile echomq", sample, re.MULTILINE)
    assert re.search(rf"^ +{needs_tag} x needs hash-tag", sample, re.MULTILINE)
    left_out = other_range + other_profile + needs_tag
    assert re.search(rf"^--- [a-z ]+ \({left_out}\) ---$", sample, re.MULTILINE)
    assert re.search(rf"^--- skipped by the candidate \({client_side}\) ---$", sample,
                     re.MULTILINE)
    assert re.search(rf"^ +{cron} x candidate does not support nextMillis", sample,
                     re.MULTILINE)
    # (+ 1: the properties item)
    assert re.search(rf"^{judged - client_side + 1} passed of {judged + 1} applicable, "
                     rf"{client_side} skipped by the candidate; {left_out} not applicable",
                     sample, re.MULTILINE)
