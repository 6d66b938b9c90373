"""A frozen database (SIGSTOP of the embedded `secantusd-py` under a real `kernelindex serve`):
requests fail with a code within the deadline instead of hanging, the gateway's /readiness goes
503 within 5 s and back to 200 after SIGCONT. A killed one (SIGKILL, clients busy): the stack
stops with its one `error:` line, no traceback before it."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.faults.edge import EdgeStack

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]

DEADLINE_S = 6


def _readiness(stack: EdgeStack) -> int:
    try:
        return httpx.get(f"{stack.base}/readiness", timeout=10).status_code
    except httpx.HTTPError:
        return 0


def _until(predicate, timeout: float, step: float = 0.25) -> float | None:
    """Seconds until `predicate()` held (None: not within `timeout`)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(step)
    return None


def test_a_frozen_database_gives_coded_errors_and_a_failing_readiness(tmp_path):
    stack = EdgeStack(tmp_path / "home", KERNELINDEX_REQUEST_DEADLINE_S=str(DEADLINE_S)).wait_ready()
    database = stack.database_pid()
    stopped = False
    try:
        assert _readiness(stack) == 200
        query = "{ runs(first: 3) { nodes { digest title } } }"
        assert "errors" not in stack.post(query).json()

        os.kill(database, signal.SIGSTOP)
        stopped = True
        # Before: 200 throughout a 20 s stall.
        to_unready = _until(lambda: _readiness(stack) != 200, timeout=15)
        assert to_unready is not None and to_unready < 5, f"/readiness still 200 after {to_unready} s"
        report = httpx.get(f"{stack.base}/readiness", timeout=10)
        assert report.status_code == 503 and "healthz" in report.text

        # Before: every request hung for the whole stall. Now each is answered, with a code,
        # within the deadline (a few at once: none waits for another).
        def ask(_):
            started = time.monotonic()
            response = stack.post(query, timeout=DEADLINE_S + 20)
            return time.monotonic() - started, response.status_code, response.json()

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(ask, range(4)))
        for took, _status, body in answers:
            assert took < DEADLINE_S + 5, (took, body)
            codes = {e.get("extensions", {}).get("code") for e in body.get("errors", [])}
            assert codes and codes <= {"DATABASE_UNAVAILABLE", "DEADLINE_EXCEEDED"}, body

        os.kill(database, signal.SIGCONT)
        stopped = False
        assert _until(lambda: _readiness(stack) == 200, timeout=30) is not None
        assert "errors" not in stack.post(query).json()
    finally:
        if stopped:
            os.kill(database, signal.SIGCONT)
        output = stack.stop()
    # The stall is said, not a flood of tracebacks.
    assert output.count("Traceback") == 0, output[-3000:]


def test_a_killed_database_stops_the_stack_with_one_line_and_no_traceback(tmp_path):
    stack = EdgeStack(tmp_path / "home").wait_ready()
    database = stack.database_pid()
    stop = threading.Event()

    def load() -> None:
        for _ in range(400):  # bounded: 400 requests or until the stack is gone
            if stop.is_set():
                return
            try:
                stack.post("{ runs(first: 5) { nodes { digest title group { size } } } }", timeout=10)
            except httpx.HTTPError:
                time.sleep(0.05)

    clients = [threading.Thread(target=load) for _ in range(4)]
    try:
        for client in clients:
            client.start()
        time.sleep(1.0)
        os.kill(database, signal.SIGKILL)
        stack.process.wait(timeout=60)
    finally:
        stop.set()
        for client in clients:
            client.join(timeout=30)
        output = stack.stop()
    # Before: ~320 lines of subgraph tracebacks (masked errors logged with their stack) ahead of
    # the one error: line.
    assert stack.process.returncode != 0
    assert "error: the embedded database exited unexpectedly" in output, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
