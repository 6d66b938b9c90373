"""Storage that cannot be written, with real processes on real file systems (tmpfs mounts: the
machine must allow mounting, as root in CI's container does; else these are skipped): a
read-only home and a home too small for the data. Each is one `error:` line naming the path
and the cause; never a traceback. (A disk that fills while
the stack runs is not here: WiredTiger's preallocated 10 MB log takes the writes that follow, so
the failure shows only later; store.client.unavailable() codes it STORAGE_UNAVAILABLE then.)"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.command import KERNELINDEX
from tests.serving import env_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]


@contextlib.contextmanager
def tmpfs(path: Path, size: str, read_only: bool = False):
    """A tmpfs of `size` at `path` (skips the test where mounting is not allowed)."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        (path / "home").mkdir()
        if read_only:
            subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)
        yield path / "home"
    finally:
        for _ in range(20):  # bounded: a process of the test may still hold it for a moment
            if subprocess.run(["umount", str(path)], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
        else:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _run(args: list[str], home: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([KERNELINDEX, *args], env=env_for(home), capture_output=True, text=True, timeout=timeout)


# `serve` must write its home, so it names the read-only file system; a verb only reads the running
# stack's address from the home, so with none running it says so (never starts a database there).
@pytest.mark.parametrize(
    ("command", "cause"),
    [(["serve", "--port", "0"], "Read-only file system"), (["keys", "list"], "no KernelIndex database is running")],
)
def test_a_read_only_home_is_one_error_line_naming_the_path(tmp_path, command, cause):
    with tmpfs(tmp_path / "ro", "1m", read_only=True) as home:
        done = _run(command, home)
    # Before: a 40-line double traceback.
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(home) in errors[0] and cause in errors[0], done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_a_home_too_small_for_the_data_is_one_error_line_at_start(tmp_path):
    with tmpfs(tmp_path / "small", "3m") as home:
        done = _run(["serve", "--port", "0"], home)
    # Before: the database's raw "internal server error" dictionary in a traceback.
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert "STORAGE_UNAVAILABLE" in errors[0] and str(home / "db") in errors[0] and "no space left" in errors[0], errors
    assert "Traceback" not in done.stderr and "internal server error" not in done.stderr
