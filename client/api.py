"""The one GraphQL-over-HTTP client of our command-line tools (`attest`, `jobs`, the runner).

It speaks to the API only, never to the database: a runner or a partner may sit anywhere.
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx

DEFAULT_API = "http://127.0.0.1:8000/graphql"


class ApiError(RuntimeError):
    """The API refused the call or could not be reached; the message says which. `codes`: the
    errors' `extensions.code` values (UNAVAILABLE when the API did not answer with JSON)."""

    def __init__(self, message: str, codes: list[str] | None = None):
        super().__init__(message)
        self.codes = codes or []


def api_url(given: str | None) -> str:
    """--api, else KERNELINDEX_API, else the local gateway; a base URL gets /graphql appended."""
    url = (given or os.environ.get("KERNELINDEX_API") or DEFAULT_API).rstrip("/")
    return url if url.endswith("/graphql") else url + "/graphql"


class ApiClient:
    def __init__(self, url: str, api_key: str | None, timeout_s: float = 60.0):
        self.url = api_url(url)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(timeout=timeout_s, headers=headers)

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def query(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """The `data` of a GraphQL answer; ApiError for transport problems and `errors`."""
        try:
            response = self.http.post(self.url, json={"query": query, "variables": variables or {}})
        except httpx.HTTPError as error:
            raise ApiError(
                f"cannot reach {self.url}: {error or type(error).__name__} (start the stack with `kernelindex serve`, "
                "or name the API with --api / KERNELINDEX_API)",
                ["UNAVAILABLE"],
            ) from None
        try:
            body = response.json()
        except json.JSONDecodeError:
            raise ApiError(f"{self.url} answered HTTP {response.status_code} without JSON", ["UNAVAILABLE"]) from None
        if body.get("errors"):
            codes = [str((e.get("extensions") or {}).get("code") or "") for e in body["errors"]]
            raise ApiError(f"{self.url}: " + "; ".join(e.get("message", "?") for e in body["errors"]), codes)
        return body["data"]

    def mutate(self, query: str, variables: dict[str, Any], field: str) -> dict[str, Any]:
        """A mutation's payload; its `userErrors` become one ApiError naming each code."""
        payload = self.query(query, variables)[field]
        if payload.get("userErrors"):
            raise ApiError("; ".join(f"{e['code']}: {e['message']}" for e in payload["userErrors"]))
        return payload
