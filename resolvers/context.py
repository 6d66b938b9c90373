"""The per-request context: the database, fresh DataLoaders, settings and the caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from strawberry.types import Info as StrawberryInfo

from resolvers.dataloaders import Loaders
from store.client import Database


@dataclass
class Context:
    db: Database
    loaders: Loaders
    public_url: str
    source_url: str | None = None  # base of code links (server.settings)
    request: Any = None
    response: Any = None
    principal: Any = None  # the authenticated API key, if any (see server.auth)
    key_presented: bool = False  # a key was sent (it may not have authenticated)
    connection_params: dict[str, Any] | None = None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))


Info = StrawberryInfo[Context, None]
