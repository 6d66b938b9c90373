"""The layer contracts (pyproject.toml, `lint-imports`) hold on the tree, and fail on a violation."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("registry", "store", "loaders", "resolvers", "server", "web", "gateway", "cli", "client", "kernels")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
    )


def copy_tree(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("node_modules", "__pycache__", "*.so"))
    return tmp_path


def test_the_tree_keeps_every_contract():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("registry/digest.py", "import store.client  # noqa", "registry (the rules) imports nothing of ours"),
        ("resolvers/ids.py", "import pymongo  # noqa", "Only store speaks to MongoDB"),
        ("kernels/operations.py", "import store.client  # noqa", "kernels imports registry and client only"),
        ("store/chunks.py", "import resolvers.ids  # noqa", "Layers: each imports only the layers beneath it"),
        (
            "loaders/sol_execbench/loader.py",
            "import store.client  # noqa",
            "Source loaders never hold the database: only the import pipeline imports store",
        ),
        ("loaders/gpumode/parse.py", "import loaders.pipeline  # noqa", "Sources do not import the pipeline, which holds the database"),
    ],
)
def test_a_violation_breaks_the_build(tmp_path, module, line, broken):
    tree = copy_tree(tmp_path)
    target = tree / module
    target.write_text(target.read_text() + "\n" + line + "\n")
    result = lint(tree)
    assert result.returncode != 0
    assert f"{broken} BROKEN" in result.stdout
