"""Shared fixtures: one real SecantusDB server per test session, a fresh database per test.

Set MONGODB_URI to run the suite against another MongoDB-compatible server instead.
"""

from __future__ import annotations

import os
import uuid

import pytest
import pytest_asyncio

from gateway.embedded import EmbeddedServer
from store.client import make_client
from store.schema import ensure_schema


@pytest.fixture(scope="session")
def mongo_uri():
    if os.environ.get("MONGODB_URI"):
        yield os.environ["MONGODB_URI"]
        return
    with EmbeddedServer(":memory:") as server:
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
