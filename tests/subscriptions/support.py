"""Live gateway processes (uvicorn on 127.0.0.1) and a small graphql-transport-ws client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from typing import Any

import httpx
from websockets.asyncio.client import connect

from store.embedded import free_port

SERVE = """
import sys, uvicorn
from server.app import create_app
from server.settings import Settings
uri, database, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
app = create_app(uri, Settings(database=database, mongodb_uri=uri))
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
"""


class Server:
    """One gateway process on one database."""

    def __init__(self, mongo_uri: str, database: str, port: int | None = None):
        self.port = port or free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVE, mongo_uri, database, str(self.port)],
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}/graphql"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}/graphql"

    def wait_ready(self, timeout: float = 60) -> Server:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the gateway exited early: {self.process.stdout.read()}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError("the gateway did not become ready")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextlib.contextmanager
def servers(mongo_uri: str, database: str, count: int = 1):
    started = [Server(mongo_uri, database) for _ in range(count)]
    try:
        for server in started:
            server.wait_ready()
        yield started
    finally:
        for server in started:
            server.stop()


async def graphql(url: str, query: str, variables: dict | None = None, key: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(url, json={"query": query, "variables": variables or {}}, headers=headers)
        return response.json()


class Connection:
    """One graphql-transport-ws connection; messages are sorted by operation id as they arrive."""

    def __init__(self, socket):
        self.socket = socket
        self.messages: dict[str, asyncio.Queue] = defaultdict(asyncio.Queue)
        self.reader = asyncio.create_task(self._read())
        self.closed: asyncio.Future = asyncio.get_running_loop().create_future()

    async def _read(self) -> None:
        try:
            async for raw in self.socket:
                message = json.loads(raw)
                if message.get("type") == "ping":
                    await self.socket.send(json.dumps({"type": "pong"}))
                    continue
                self.messages[message.get("id", "")].put_nowait(message)
        except Exception:  # noqa: BLE001 - a closed socket ends the reader
            pass
        finally:
            if not self.closed.done():
                self.closed.set_result((self.socket.close_code, self.socket.close_reason))

    async def subscribe(self, op_id: str, query: str, variables: dict | None = None) -> None:
        await self.socket.send(json.dumps({"id": op_id, "type": "subscribe", "payload": {"query": query, "variables": variables or {}}}))

    async def complete(self, op_id: str) -> None:
        await self.socket.send(json.dumps({"id": op_id, "type": "complete"}))

    async def receive(self, op_id: str, timeout: float = 10) -> dict[str, Any]:
        return await asyncio.wait_for(self.messages[op_id].get(), timeout)

    async def next_data(self, op_id: str, timeout: float = 10) -> dict[str, Any]:
        message = await self.receive(op_id, timeout)
        assert message["type"] == "next", message
        assert "errors" not in message["payload"], message
        return message["payload"]["data"]

    async def quiet(self, op_id: str, seconds: float = 1.0) -> None:
        """Assert that nothing arrives for `op_id` within `seconds`."""
        with contextlib.suppress(asyncio.TimeoutError):
            message = await self.receive(op_id, seconds)
            raise AssertionError(f"unexpected message: {message}")

    async def close(self) -> None:
        await self.socket.close()
        self.reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.reader


@contextlib.asynccontextmanager
async def ws_connection(url: str, payload: dict | None = None):
    async with connect(url, subprotocols=["graphql-transport-ws"], open_timeout=10, max_queue=None) as socket:
        await socket.send(json.dumps({"type": "connection_init", "payload": payload or {}}))
        ack = json.loads(await asyncio.wait_for(socket.recv(), 10))
        assert ack["type"] == "connection_ack", ack
        connection = Connection(socket)
        try:
            yield connection
        finally:
            await connection.close()


RUN_PUBLISHED = """subscription($filter: RunPublishedFilter, $after: String) {
  runPublished(filter: $filter, after: $after) { cursor publishedAt run { id digest name title evidenceLevel } } }"""
