"""An HTTP client on the real ASGI app (lifespan included), bound to the test's database."""

from __future__ import annotations

import httpx
import pytest_asyncio
from asgi_lifespan import LifespanManager

from gateway.app import create_app
from gateway.settings import Settings


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
