"""The wheel holds the packages and the CUDA sources they build, and nothing of the lab notebook:
no benchmark results, logs, profiles or development scripts (those live in lab/, outside every
installed package). Built with this environment's pip from a copy of the tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kernels.ops.qkv_qknorm_backward import ext_streamnorm

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("registry/", "store/", "loaders/", "resolvers/", "server/", "web/", "gateway/", "cli/", "client/", "kernels/", "mcp_server/")
NOT_SHIPPED = (".json.gz", ".log", ".txt", ".dsse.json", ".md", ".png", ".sh")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> list[str]:
    tree = tmp_path_factory.mktemp("tree") / "kernelindex"
    ignore = shutil.ignore_patterns(
        ".git",
        ".venv",
        "node_modules",
        "build",
        "*.egg-info",
        "__pycache__",
        ".kernelindex",
        ".hypothesis",
        ".pytest_cache",
        "data",
        "tests",
    )
    shutil.copytree(ROOT, tree, ignore=ignore)
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(tree), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = out.glob("kernelindex-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


def test_the_wheel_holds_packages_only(wheel_names):
    outside = [n for n in wheel_names if not n.startswith(PACKAGES) and ".dist-info/" not in n]
    assert outside == []
    assert not [n for n in wheel_names if n.startswith(("lab/", "bench/", "data/"))]


def test_no_benchmark_results_or_lab_files_in_the_wheel(wheel_names):
    assert not [n for n in wheel_names if n.endswith(NOT_SHIPPED) and ".dist-info/" not in n]
    assert not [n for n in wheel_names if "/results/" in n or "/bench/" in n]


def test_the_cuda_sources_the_library_builds_are_in_the_wheel(wheel_names):
    for path in ext_streamnorm.LIBRARY.files():
        assert str(path.relative_to(ROOT)) in wheel_names
