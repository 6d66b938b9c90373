"""The commit that holds a revision's source files exactly as they are in this checkout.

It is the last commit that touched any of them, provided none is modified or untracked here;
otherwise (or without git, e.g. an installed wheel) there is none, and a manifest says nothing
rather than something wrong. Because the commit is the last one touching the paths, later
commits elsewhere do not change it.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


@functools.cache
def source_commit(paths: tuple[str, ...]) -> str | None:
    toplevel = _git("rev-parse", "--show-toplevel")
    if toplevel is None or Path(toplevel.strip()).resolve() != REPO_ROOT:
        return None  # not a checkout of this repository (e.g. a wheel inside another one)
    status = _git("status", "--porcelain", "--", *paths)
    if status is None or status.strip():
        return None
    commit = (_git("log", "-1", "--format=%H", "--", *paths) or "").strip()
    return commit or None
