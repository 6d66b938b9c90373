"""Who is calling: an API key from `Authorization: Bearer <key>` (HTTP) or from the
`connection_init` payload (WebSocket: {"Authorization": "Bearer <key>"} or {"apiKey": "<key>"})."""

from __future__ import annotations

from typing import Any

from store.client import Database
from store.keys import ApiKey, authenticate


def bearer_from_headers(headers: Any) -> str | None:
    value = headers.get("authorization") if headers is not None else None
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def bearer_from_connection_params(params: dict[str, Any] | None) -> str | None:
    if not isinstance(params, dict):
        return None
    if isinstance(params.get("apiKey"), str):
        return params["apiKey"]
    value = params.get("Authorization") or params.get("authorization")
    if isinstance(value, str):
        scheme, _, token = value.partition(" ")
        return token.strip() if scheme.lower() == "bearer" else None
    return None


async def principal_for(db: Database, token: str | None) -> tuple[ApiKey | None, bool]:
    """(key, presented): a presented key that does not authenticate is reported as such."""
    if token is None:
        return None, False
    return await authenticate(db, token), True
