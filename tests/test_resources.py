"""Package data: found through importlib.resources, checked against a wheel's RECORD, and every
defect a one-line error (exit 2) that says to reinstall. ci/installed.sh damages a real wheel
install; here a fake installation (a dist-info RECORD beside the files) drives the checks."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

import conformance
from conformance import cli
from conformance.candidates.clients import bullmq_node
from conformance.core import resources
from conformance.core.errors import UsageError


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    for cached in (resources._record, resources._verify, resources.schema):
        cached.cache_clear()
    yield
    for cached in (resources._record, resources._verify, resources.schema):
        cached.cache_clear()


def _fake_install(tmp_path: Path, files: dict[str, bytes]) -> tuple[Path, metadata.Distribution]:
    """A site directory holding `files` and a dist-info whose RECORD hashes each of them."""
    site = tmp_path / "site"
    lines = []
    for name, data in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{name},sha256={digest},{len(data)}")
    info = site / "bullmq_conformance-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bullmq-conformance\n"
                                   "Version: 0.1.0\n")
    (info / "RECORD").write_text("\n".join([*lines, f"{info.name}/RECORD,,"]) + "\n")
    return site, metadata.PathDistribution(info)


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake wheel install that the running package counts as its own."""
    site, dist = _fake_install(tmp_path, {
        "conformance/bundled/vectors/a.yaml": b"schema_version: 1\n",
        "conformance/bundled/vectors/schema.json": b"{}",
        "conformance/bundled/lua/x-1.lua": b"return 1\n",
    })
    monkeypatch.setattr(resources.metadata, "distribution", lambda name: dist)
    monkeypatch.setattr(conformance, "__path__", [*conformance.__path__,
                                                  str(site / "conformance")])
    return site / "conformance" / "bundled"


def test_an_intact_install_verifies(installed: Path) -> None:
    assert resources.installed_from_wheel()
    resources.vectors_dir()
    resources.lua_dir()


def test_an_altered_file_is_corrupt(installed: Path) -> None:
    (installed / "vectors" / "a.yaml").write_bytes(b"schema_version: 3\n")
    with pytest.raises(resources.PackageDataError) as caught:
        resources.vectors_dir()
    message = str(caught.value)
    assert message.startswith(f"package data corrupt: {installed / 'vectors' / 'a.yaml'} (")
    assert "pip install --force-reinstall bullmq-conformance" in message
    assert "\n" not in message
    resources.lua_dir()  # the other directories are not affected


def test_a_deleted_file_is_missing(installed: Path) -> None:
    (installed / "lua" / "x-1.lua").unlink()
    with pytest.raises(resources.PackageDataError,
                       match=r"^package data missing: .*x-1\.lua; .*reinstall"):
        resources.lua_dir()


def test_another_copys_record_is_not_ours(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _, dist = _fake_install(tmp_path, {"conformance/bundled/lua/x-1.lua": b"1"})
    monkeypatch.setattr(resources.metadata, "distribution", lambda name: dist)
    assert not resources.installed_from_wheel()  # a checkout run beside an installed wheel


def test_a_schema_that_is_not_json_is_corrupt(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "report.schema.json"
    broken.write_text('{"type": ', encoding="utf-8")
    monkeypatch.setattr(resources, "schema_path", lambda name: broken)
    with pytest.raises(resources.PackageDataError, match=r"^package data corrupt: .*not JSON"):
        resources.schema("report")


def test_the_checkouts_data_is_found_through_its_packages() -> None:
    assert (resources.vectors_dir() / "schema.json").is_file()
    assert (resources.lua_dir() / "includes" / "getDelayedScore.lua").is_file()
    for name in ("adapter-protocol", "vector-file", "report"):
        assert resources.schema(name)["$id"].startswith(f"urn:bullmq-conformance:{name}:")


def test_the_node_adapter_runs_from_a_cache_copy(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "bundled"
    source.mkdir()
    for name in resources.NODE_ADAPTER_FILES:
        (source / name).write_text(f"{name}\n", encoding="utf-8")
    monkeypatch.setattr(bullmq_node, "node_adapter_source", lambda: source)
    monkeypatch.setenv(resources.CACHE_ENV, str(tmp_path / "cache"))
    with pytest.raises(UsageError, match=r"run `npm ci --prefix (\S+)` once") as caught:
        bullmq_node.node_adapter_dir()
    target = Path(str(caught.value).split("npm ci --prefix ")[1].split("`")[0])
    assert target.parent == tmp_path / "cache" and target.name.startswith("node-bullmq-")
    assert sorted(p.name for p in target.iterdir()) == sorted(resources.NODE_ADAPTER_FILES)
    (target / "node_modules" / "bullmq").mkdir(parents=True)
    assert bullmq_node.node_adapter_dir() == target
    # With the cache off, the one place left is the package's own directory.
    monkeypatch.setenv(resources.CACHE_ENV, "off")
    with pytest.raises(UsageError, match=f"npm ci --prefix {source}"):
        bullmq_node.node_adapter_dir()


def test_the_cache_copy_holds_every_module_the_node_adapter_requires() -> None:
    """The cache copy holds NODE_ADAPTER_FILES only: a local module the adapter's files require
    and the list lacks would be missing there, and the adapter would not start from a wheel."""
    import re

    source = resources.node_adapter_source()
    shipped = set(resources.NODE_ADAPTER_FILES)
    required: set[str] = set()
    for name in sorted(n for n in shipped if n.endswith(".js")):
        text = (source / name).read_text(encoding="utf-8")
        required |= {f"{found}.js" for found in re.findall(r"require\('\./([\w-]+)'\)", text)}
    assert "worker-ops.js" in required  # the pattern finds the adapter's own requires
    assert required <= shipped, sorted(required - shipped)


def test_adapter_example_writes_the_bundled_file_and_never_over_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "adapter.py"
    assert cli.main(["adapter", "example", "--out", str(out)]) == 0
    assert out.read_bytes() == resources.example_adapter().read_bytes()
    assert cli.main(["adapter", "example"]) == 0
    assert capsys.readouterr().out.endswith(out.read_text(encoding="utf-8"))
    out.write_text("mine\n", encoding="utf-8")
    assert cli.main(["adapter", "example", "--out", str(out)]) == 2
    assert out.read_text(encoding="utf-8") == "mine\n"
    assert "exists; not overwritten" in capsys.readouterr().err


def test_regenerate_will_not_rewrite_an_installed_wheel(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(resources, "installed_from_wheel", lambda: True)
    assert cli.main(["vectors", "regenerate"]) == 2
    assert capsys.readouterr().err.strip() == (
        "bullmq-conformance: vectors regenerate: the bundled vectors belong to the installed "
        "package; write elsewhere with --out DIR")
