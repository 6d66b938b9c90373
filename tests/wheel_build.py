"""One wheel of this tree per test session, built as `pip install .` builds one from a clone that
has been set up (`make setup` leaves npm trees in gateway/ and web/assets/): tests/conftest.py's
`kernelindex_wheel` fixture. The copy leaves out what a clone does not have (.venv, build output,
caches, the real node_modules, ~590 MB) and gets small stand-in npm trees in their place, so a wheel
that picked node_modules up (setuptools finds them as namespace packages) is seen."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_IN_A_CLONE = (".git", ".venv", "node_modules", "build", "*.egg-info", "__pycache__", ".kernelindex", ".pytest_cache", "*.so")
NPM_PROJECTS = ("gateway", "web/assets")


def build_wheel(workdir: Path) -> Path:
    tree = workdir / "kernelindex"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(*NOT_IN_A_CLONE))
    for project in NPM_PROJECTS:  # stand-ins for `npm ci`'s output (synthetic, for this check only)
        package = tree / project / "node_modules" / "some-package"
        package.mkdir(parents=True)
        (package.parent / ".package-lock.json").write_text("{}\n")
        (package / "package.json").write_text('{"name": "some-package"}\n')
        (package / "index.js").write_text("export {};\n")
    out = workdir / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(tree), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = out.glob("kernelindex-*.whl")
    return wheel
