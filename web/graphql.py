"""The web pages' only data source: GraphQL over HTTP, with httpx, to a configured endpoint."""

from __future__ import annotations

import time
from typing import Any

import httpx

from web.timing import record_graphql


class GraphQLError(RuntimeError):
    """The API answered with errors (or not at all); `codes` are the errors' extension codes."""

    def __init__(self, messages: list[str], codes: list[str]):
        super().__init__("; ".join(messages))
        self.codes = codes


class GraphQLClient:
    """POSTs documents to `url`. `transport` lets the single-process server reach its own
    /graphql without a socket; a separate web process leaves it unset (plain HTTP)."""

    def __init__(self, url: str, *, transport: httpx.AsyncBaseTransport | None = None, timeout: float = 10.0):
        self.url = url
        self._transport = transport
        self._timeout = timeout
        self._http: httpx.AsyncClient | None = None

    def _client(self) -> httpx.AsyncClient:
        # Made on first use, so it belongs to the serving event loop.
        if self._http is None:
            # Idle sockets are let go after 2 s, before the gateway's own 5 s keep-alive closes them:
            # the client closing first means no query is ever sent on a socket the server just shut.
            limits = httpx.Limits(keepalive_expiry=2.0)
            self._http = httpx.AsyncClient(transport=self._transport, timeout=self._timeout, limits=limits)
        return self._http

    async def query(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            response = await self._client().post(self.url, json={"query": document, "variables": variables or {}})
            body = response.json()
        except (httpx.HTTPError, ValueError) as error:
            raise GraphQLError([f"the API did not answer: {type(error).__name__}"], ["UNAVAILABLE"]) from None
        finally:
            record_graphql(time.perf_counter() - started)
        errors = body.get("errors") or []
        if errors or body.get("data") is None:
            raise GraphQLError(
                [e.get("message", "error") for e in errors] or [f"HTTP {response.status_code}"],
                [(e.get("extensions") or {}).get("code", "") for e in errors],
            )
        return body["data"]

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
