"""One `kernelindex serve` (the installed entry point, bundled data, like `make serve`) for the
tests of the agents' and machines' surfaces: MCP, the reading CLI, feeds."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from store.embedded import free_port
from tests.command import KERNELINDEX


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/agents/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.slow)
            if shutil.which("node") is None:
                item.add_marker(pytest.mark.skip(reason="node is not installed (the stack runs Hive Gateway)"))


class Stack:
    def __init__(self, home: Path):
        self.home, self.port = home, free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            **{k: v for k, v in os.environ.items() if k != "MONGODB_URI"},
            "KERNELINDEX_HOME": str(home),
            "KERNELINDEX_PUBLIC_URL": self.base,  # permalinks name this stack
            "PYTHONUNBUFFERED": "1",
        }
        self.log = open(home.parent / f"stack-{self.port}.log", "w+")
        self.process = subprocess.Popen(
            [KERNELINDEX, "serve", "--port", str(self.port)], env=self.env, stdout=self.log, stderr=subprocess.STDOUT, text=True
        )
        self.url = f"{self.base}/graphql"

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def wait_ready(self, timeout: float = 300) -> Stack:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"serve exited early: {self.output()}")
            if "KernelIndex is ready" in self.output():
                return self
            time.sleep(0.3)
        raise AssertionError(f"the stack did not start: {self.output()}")

    def data(self, query: str, variables: dict | None = None) -> dict:
        body = httpx.post(self.url, json={"query": query, "variables": variables or {}}, timeout=60).json()
        assert "errors" not in body, body
        return body["data"]

    def cli(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([KERNELINDEX, *args], env={**self.env, **(env or {})}, capture_output=True, text=True, timeout=120)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    home = tmp_path_factory.mktemp("agents-stack") / "home"
    started = Stack(home).wait_ready()
    yield started
    started.stop()
