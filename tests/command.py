"""The installed `kernelindex` entry point, as a user runs it (never `python -m`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# The console script pip wrote beside this interpreter (`pip install -e .`).
KERNELINDEX = str(Path(sys.executable).with_name("kernelindex"))


def kernelindex(*args: str, env: dict | None = None, **options) -> subprocess.CompletedProcess:
    """Run `kernelindex ARGS...`; `env` adds to (not replaces) this process's environment."""
    options.setdefault("timeout", 120)
    return subprocess.run([KERNELINDEX, *args], capture_output=True, text=True, env={**os.environ, **(env or {})}, **options)
