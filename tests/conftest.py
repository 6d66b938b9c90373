"""Shared fixtures: one real SecantusDB server per test session, a fresh database per test.

Set MONGODB_URI to run the suite against another MongoDB-compatible server instead.
"""

from __future__ import annotations

import os
import uuid

import httpx
import pytest
import pytest_asyncio
from asgi_lifespan import LifespanManager

from server.app import create_app
from server.settings import Settings
from store.client import make_client
from store.embedded import EmbeddedServer
from store.schema import ensure_schema


@pytest.fixture(scope="session")
def mongo_uri():
    if os.environ.get("MONGODB_URI"):
        yield os.environ["MONGODB_URI"]
        return
    with EmbeddedServer(":memory:", failpoints=True) as server:
        yield server.uri


@pytest_asyncio.fixture(scope="session")
async def mongo_client(mongo_uri):
    client = make_client(mongo_uri)
    yield client
    await client.close()


@pytest_asyncio.fixture
async def db(mongo_client):
    name = f"test_{uuid.uuid4().hex[:12]}"
    database = mongo_client[name]
    await ensure_schema(database)
    yield database
    await mongo_client.drop_database(name)


@pytest_asyncio.fixture
async def api(db, mongo_uri):
    app = create_app(mongo_uri, Settings(database=db.name, mongodb_uri=mongo_uri))
    async with LifespanManager(app) as manager:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://kernelindex.test") as client:
            yield GraphQLClient(client)


class GraphQLClient:
    def __init__(self, http: httpx.AsyncClient):
        self.http = http

    async def post(self, query: str, variables: dict | None = None, headers: dict | None = None) -> dict:
        response = await self.http.post("/graphql", json={"query": query, "variables": variables or {}}, headers=headers or {})
        return response.json()

    async def data(self, query: str, variables: dict | None = None, headers: dict | None = None) -> dict:
        body = await self.post(query, variables, headers)
        assert "errors" not in body, body["errors"]
        return body["data"]


@pytest.fixture
def live_site(db, mongo_uri):
    """The real app on a real uvicorn server (a thread) on a free loopback port, bound to the
    test's database; yields its base URL."""
    import threading
    import time

    import uvicorn

    from store.embedded import free_port

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(mongo_uri, Settings(database=db.name)), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
