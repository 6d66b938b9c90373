"""The pinned npm packages beside a package.json and its lock file, wherever KernelIndex is installed.

Two trees need them: gateway/ (Hive Gateway and the federation composers, run by `serve`) and
web/assets/ (GraphiQL and React, served by the pages). A checkout has them where `make setup` puts
them, `npm ci` beside the lock file (gateway/node_modules). A wheel ships the package.json and the
lock file only (node_modules is ~590 MB): `serve` runs `npm ci` once into the user's cache directory,

    <user cache>/kernelindex/npm/<name>-<sha256 of the lock file, 16 hex>/node_modules

(`~/.cache/kernelindex/npm/...` on Linux; XDG_CACHE_HOME moves it), so a new lock file gets a tree
of its own and an unchanged one is never installed twice. The JavaScript files that import those
packages (the gateway's config, the composer) are copied into a folder under that tree named by their
own digest: Node resolves `import "@graphql-hive/gateway"` from the importing file's folder upward.
This module lives in web/ (the lowest layer that needs it); gateway/stack.py uses it too.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

NODE_MAJOR = 20  # Hive Gateway 2 and the composers need Node.js >= 20
MANIFESTS = ("package.json", "package-lock.json")
DONE = ".kernelindex-installed"  # written last: a tree without it is an interrupted install


class NodePackagesError(Exception):
    """The packages are not installed and cannot be: one line for the user."""


@dataclass(frozen=True)
class Tree:
    """Where a project's packages are installed (`root/node_modules`) and where its JavaScript
    files are (`files`, under `root`, so their imports resolve)."""

    root: Path
    files: Path

    @property
    def modules(self) -> Path:
        return self.root / "node_modules"

    def bin(self, name: str) -> Path:
        return self.modules / ".bin" / name


def lock_digest(project: Path) -> str:
    return hashlib.sha256((project / "package-lock.json").read_bytes()).hexdigest()[:16]


def cache_root(name: str, project: Path) -> Path:
    from platformdirs import user_cache_path

    return user_cache_path("kernelindex", appauthor=False) / "npm" / f"{name}-{lock_digest(project)}"


def _installed(root: Path) -> bool:
    return (root / "node_modules" / ".package-lock.json").is_file()


def find(name: str, project: Path) -> Tree | None:
    """The installed tree of `project` (a folder with package.json and package-lock.json): the
    checkout's own node_modules, else the user cache's; None when neither is installed."""
    if _installed(project):
        return Tree(project, project)
    root = cache_root(name, project)
    if (root / DONE).is_file() and _installed(root):
        return Tree(root, root)
    return None


def ensure(name: str, project: Path, what: str, files: tuple[str, ...] = (), say: Callable[[str], None] = print) -> Tree:
    """`find`, else `npm ci` into the user cache (once per lock file; concurrent callers wait for
    one install). `files` (JavaScript that imports the packages) are placed where they resolve them.
    `what` names the packages in the progress line. NodePackagesError when node or npm is missing
    or the install fails."""
    tree = find(name, project)
    if tree is None:
        root = cache_root(name, project)
        root.parent.mkdir(parents=True, exist_ok=True)
        with open(root.parent / f"{root.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # a second serve starting now waits for this install
            if not ((root / DONE).is_file() and _installed(root)):
                _npm_ci(project, root, what, say)
        tree = Tree(root, root)
    if not files or tree.root == project:
        return tree
    # In the cache: the files in a folder named by their digest (two versions sharing a lock file
    # never run each other's config), written whole before use.
    digest = hashlib.sha256(b"".join((project / f).read_bytes() for f in files)).hexdigest()[:16]
    folder = tree.root / f"files-{digest}"
    if not all((folder / f).is_file() for f in files):
        folder.mkdir(exist_ok=True)
        for f in files:
            partial = folder / f"{f}.{os.getpid()}.partial"
            shutil.copyfile(project / f, partial)
            os.replace(partial, folder / f)
    return Tree(tree.root, folder)


def _npm_ci(project: Path, root: Path, what: str, say: Callable[[str], None]) -> None:
    _check_node()
    if root.exists():  # an interrupted install: start again
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for manifest in MANIFESTS:
        shutil.copyfile(project / manifest, root / manifest)
    say(f"installing {what} (npm ci, pinned by {project / 'package-lock.json'}) into {root}: once per lock file, a few minutes ...")
    try:
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=root, capture_output=True, text=True, timeout=1800
        )
    except subprocess.TimeoutExpired:
        raise NodePackagesError(f"npm ci for {what} did not finish within 30 minutes (in {root})") from None
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        detail = " / ".join(lines[-3:]) or f"exit code {done.returncode}"
        raise NodePackagesError(f"npm ci for {what} failed in {root}: {detail}")
    (root / DONE).write_text(lock_digest(project) + "\n")
    say(f"installed {what} into {root}")


def _check_node() -> None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        raise NodePackagesError(
            f"{' and '.join(missing)} not found on PATH: KernelIndex runs Hive Gateway on Node.js >= {NODE_MAJOR}; "
            "install Node.js (it comes with npm, e.g. `apt-get install nodejs npm` or https://nodejs.org), then run this again"
        )
    try:
        version = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        major = int(version.lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return  # an unusual node: let npm and the gateway say what is wrong
    if major < NODE_MAJOR:
        raise NodePackagesError(f"node {version} is too old: Hive Gateway needs Node.js >= {NODE_MAJOR}; upgrade it, then run this again")
