"""What the wheel holds: the packages, the CUDA sources they build, the gateway's JavaScript and npm
lock files, and the bundled data `serve` imports (data/, as the package `kernelindex_data`); nothing
of the lab notebook (benchmark results, logs, profiles, development scripts live in lab/), none of
the controlled runs' raw samples, charts and logs, and no node_modules. The wheel is built once per
session from a copy of the tree (tests/wheel_build.py; tests/test_plain_install.py installs it)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from kernels.ops.qkv_qknorm_backward import ext_streamnorm

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
PACKAGES = (
    "registry/",
    "store/",
    "loaders/",
    "resolvers/",
    "server/",
    "web/",
    "gateway/",
    "cli/",
    "client/",
    "kernels/",
    "mcp_server/",
    "kernelindex_data/",
)
NOT_SHIPPED = (".json.gz", ".log", ".txt", ".dsse.json", ".md", ".png", ".sh")
# The catalog's README says where the export comes from (with its NOTICE and licence): it travels with it.
PROVENANCE = {"kernelindex_data/kernelindex-catalog/README.md"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel_names(kernelindex_wheel) -> list[str]:
    with zipfile.ZipFile(kernelindex_wheel) as zf:
        return zf.namelist()


def shipped(names: list[str]) -> list[str]:
    return [n for n in names if ".dist-info/" not in n]


def test_the_wheel_holds_packages_only(wheel_names):
    assert [n for n in shipped(wheel_names) if not n.startswith(PACKAGES)] == []
    assert not [n for n in wheel_names if n.startswith(("lab/", "bench/", "data/", "tests/"))]


def test_no_npm_tree_is_in_the_wheel(wheel_names):
    # tests/wheel_build.py put stand-in node_modules in gateway/ and web/assets/, as `make setup` does.
    assert [n for n in wheel_names if "node_modules" in n] == []


def test_no_benchmark_results_or_lab_files_in_the_wheel(wheel_names):
    assert not [n for n in shipped(wheel_names) if n.endswith(NOT_SHIPPED) and n not in PROVENANCE]
    assert not [n for n in wheel_names if "/results/" in n or "/bench/" in n]


def test_the_cuda_sources_the_library_builds_are_in_the_wheel(wheel_names):
    for path in ext_streamnorm.LIBRARY.files():
        assert str(path.relative_to(ROOT)) in wheel_names


def test_the_gateway_config_and_both_npm_lock_files_are_in_the_wheel(wheel_names):
    for name in ("gateway.config.mjs", "compose.mjs", "package.json", "package-lock.json"):
        assert f"gateway/{name}" in wheel_names
    for name in ("package.json", "package-lock.json"):
        assert f"web/assets/{name}" in wheel_names


def what_serve_imports() -> set[Path]:
    """The files of data/ that server/bootstrap.py reads, found by its own rules."""
    from loaders.sources import loaders

    files = {DATA / "__init__.py", DATA / "code-pins.json"}
    for loader in loaders():
        folder = DATA / (loader.bundled or f"snapshots/{loader.key}")
        files |= {p for p in folder.rglob("*") if p.is_file()}
    files |= {p for p in (DATA / "kernelindex-catalog").iterdir() if p.is_file()}  # the export, its pointer, NOTICE, licence, README
    files |= set((DATA / "controlled").rglob("manifests.json"))
    files |= set((DATA / "verified").glob("*.json"))
    files |= set((DATA / "runners").glob("*.pem"))
    return files


def test_the_wheel_holds_the_bundled_data_serve_imports_and_no_more(wheel_names):
    in_wheel = {n.removeprefix("kernelindex_data/") for n in wheel_names if n.startswith("kernelindex_data/")}
    expected = {str(p.relative_to(DATA)) for p in what_serve_imports()}
    assert in_wheel == expected
    # What stays in the repository: the controlled runs' raw samples, charts, logs and checks.
    left = {str(p.relative_to(DATA)) for p in DATA.rglob("*") if p.is_file() and "__pycache__" not in p.parts} - expected
    assert any(n.endswith("raw.json") for n in left) and any(n.endswith("chart.png") for n in left)


def test_the_wheel_is_a_few_megabytes(kernelindex_wheel):
    # ~3.9 MB today, 3.1 MB of it the catalog export (Zstandard, incompressible); the raw samples
    # and charts left in the repository would add ~1 MB more, node_modules hundreds.
    assert kernelindex_wheel.stat().st_size < 6_000_000
