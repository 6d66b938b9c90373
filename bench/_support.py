"""What the benchmarks share: percentiles, child processes (wait until one answers, stop them),
graphql-transport-ws subscribers, and the closing line with the machine's load.

Imported as `_support` (each benchmark puts bench/ on sys.path, as it puts the repository there).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pymongo import monitoring


def percentile(values: list[float], q: float) -> float:
    """The value at rank round(q% of n-1) of the sorted values; NaN for none."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


# ---------------------------------------------------------------- writes and CPU time

WRITES = {
    "insert",
    "update",
    "delete",
    "findAndModify",
    "bulkWrite",
    "create",
    "createIndexes",
    "collMod",
    "drop",
    "dropIndexes",
    "commitTransaction",
}


class WriteCounter(monitoring.CommandListener):
    """Counts the write commands a client sends (an unchanged re-import must send none)."""

    def __init__(self):
        self.count = 0
        self.by_command: dict[str, int] = {}

    def started(self, event):
        if event.command_name in WRITES:
            self.count += 1
            self.by_command[event.command_name] = self.by_command.get(event.command_name, 0) + 1

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def process_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of another process (the database server), from /proc."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- the database and child processes


@contextmanager
def database_server(prefix: str, announce: Callable[[str], object] | None = None) -> Iterator[str]:
    """MONGODB_URI, or else an embedded SecantusDB on a temporary directory while the block runs."""
    if os.environ.get("MONGODB_URI"):
        yield os.environ["MONGODB_URI"]
        return
    from store.embedded import EmbeddedServer

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        with EmbeddedServer(Path(tmp) / "db", log_path=Path(tmp) / "secantusd.log") as server:
            if announce:
                announce(f"SecantusDB on {server.uri} (data in {tmp})")
            yield server.uri


def wait_ready(process: subprocess.Popen, ready: Callable[[], bool], what: str, timeout: float) -> None:
    """Until `ready()` (an HTTP error counts as not yet); SystemExit if `process` exits first or
    `timeout` seconds pass."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with code {process.returncode} while starting")
        try:
            if ready():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    stop(process)
    raise SystemExit(f"{what} did not answer within {timeout:g} s")


def answers(url: str) -> Callable[[], bool]:
    """A `ready` for wait_ready: GET `url` is 200."""
    import httpx

    return lambda: httpx.get(url, timeout=1).status_code == 200


def stop(*processes: subprocess.Popen, timeout: float = 10) -> None:
    """SIGTERM to all, then wait for each; SIGKILL to one still there after `timeout` seconds."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ---------------------------------------------------------------- subscribers


async def subscribe(url: str, query: str, **options):
    """A graphql-transport-ws connection with one subscription (id "1") to `query`."""
    from websockets.asyncio.client import connect

    socket = await connect(url, subprotocols=["graphql-transport-ws"], ping_interval=None, max_queue=None, **options)
    await socket.send(json.dumps({"type": "connection_init", "payload": {}}))
    ack = json.loads(await socket.recv())
    assert ack["type"] == "connection_ack", ack
    await socket.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))
    return socket


async def events(socket) -> AsyncIterator[tuple[float, dict]]:
    """(wall-clock time of receipt, data) of each `next` message until the socket closes; pings
    are answered, anything else is printed to stderr."""
    async for raw in socket:
        now = time.time()
        message = json.loads(raw)
        if message["type"] == "ping":
            await socket.send('{"type":"pong"}')
        elif message["type"] == "next":
            yield now, message["payload"]["data"]
        else:
            print(f"unexpected message: {message}", file=sys.stderr)


async def close_subscribers(tasks: list[asyncio.Task], receipts: list, out: Path) -> None:
    """A subscriber process's end: its receipts to `out` for the parent, DONE, every socket closed."""
    out.write_text(json.dumps(receipts))
    print("DONE", flush=True)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


# ---------------------------------------------------------------- the closing line


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def closing_line(started: float, load_before: str) -> str:
    """How long the benchmark took (since perf_counter() `started`) and the load around it."""
    return (
        f"total {time.perf_counter() - started:.0f} s; load average {load_before} at the start, "
        f"{load_average()} at the end ({os.cpu_count()} CPUs)"
    )
