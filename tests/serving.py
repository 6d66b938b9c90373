"""`kernelindex serve` as a real process: start it on a home directory, wait for it, stop it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from tests.command import KERNELINDEX


def env_for(home: Path, **extra: str) -> dict[str, str]:
    """This environment without MONGODB_URI (so the embedded database is used), on `home`."""
    env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    return {**env, "KERNELINDEX_HOME": str(home), "PYTHONUNBUFFERED": "1", **extra}


def start_serve(home: Path, port: int, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [KERNELINDEX, "serve", "--port", str(port), *extra],
        env=env_for(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_ready(proc: subprocess.Popen, port: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited early: {proc.stdout.read()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("serve did not become ready")


def stop(proc: subprocess.Popen) -> str:
    """SIGTERM, then everything it printed."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    return out
