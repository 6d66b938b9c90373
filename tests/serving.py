"""`kernelindex serve` as a real process: start it on a home directory, wait for it, stop it.

`ServedStack` is the whole stack as a user starts it (the installed entry point, its output in a
log file beside the home, ready when it prints `gateway.stack.READY`); `start_serve`/`wait_ready`
are the bare process for tests that read its output as a pipe."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from gateway.stack import READY
from store.embedded import free_port
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


class ServedStack:
    """`kernelindex serve --port P *args` on `home` (bundled data unless args say `--no-data`);
    `env` adds to its environment (the stack's settings); `public_url` makes permalinks name it."""

    def __init__(self, home: Path, *args: str, public_url: bool = False, **env: str):
        home.mkdir(parents=True, exist_ok=True)
        self.home, self.port = home, free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/graphql"
        if public_url:
            env["KERNELINDEX_PUBLIC_URL"] = self.base
        self.env = env_for(home, **env)
        self.log = open(home.parent / f"stack-{self.port}.log", "w+")
        self.process = subprocess.Popen(
            [KERNELINDEX, "serve", "--port", str(self.port), *args], env=self.env, stdout=self.log, stderr=subprocess.STDOUT, text=True
        )

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def wait_ready(self, timeout: float = 300):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"serve exited early: {self.output()}")
            if READY in self.output():
                return self
            time.sleep(0.3)
        raise AssertionError(f"the stack did not start: {self.output()}")

    def post(self, query: str, variables: dict | None = None, key: str | None = None, timeout: float = 60) -> dict:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.post(self.url, json={"query": query, "variables": variables or {}}, headers=headers, timeout=timeout).json()

    def data(self, query: str, variables: dict | None = None) -> dict:
        body = self.post(query, variables)
        assert "errors" not in body, body
        return body["data"]

    def cli(self, *args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([KERNELINDEX, *args], env={**self.env, **(env or {})}, capture_output=True, text=True, timeout=timeout)

    def stop(self) -> str:
        """SIGTERM (SIGKILL after 60 s), then everything it printed."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.output()
