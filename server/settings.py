"""Settings from the environment."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field


def _flag(name: str) -> bool:
    return os.environ.get(name, "") in {"1", "true", "yes"}


@dataclass(frozen=True)
class Settings:
    mongodb_uri: str | None = field(default_factory=lambda: os.environ.get("MONGODB_URI") or None)
    database: str = field(default_factory=lambda: os.environ.get("KERNELINDEX_DATABASE", "kernelindex"))
    public_url: str = field(default_factory=lambda: os.environ.get("KERNELINDEX_PUBLIC_URL", "http://127.0.0.1:8000"))
    # Where this repository's source can be browsed: code links are {source_url}/tree/{commit}/{path}.
    source_url: str = field(default_factory=lambda: os.environ.get("KERNELINDEX_SOURCE_URL", "https://github.com/kernelindex/kernelindex"))
    debug: bool = field(default_factory=lambda: _flag("KERNELINDEX_DEBUG"))
    # Query limits: enforced by the subgraphs (server/schema.py) and, with these same numbers, by
    # Hive Gateway before it plans anything (gateway/gateway.config.mjs reads them from
    # KERNELINDEX_QUERY_LIMITS, which `serve` sets from query_limits()).
    max_depth: int = 12
    max_tokens: int = 4000
    max_aliases: int = 30
    max_directives: int = 50
    max_fragments: int = 100
    max_fields: int = 500  # graphql-core aborts validation at ~1,000 identical fields (its overlap budget)
    max_body_bytes: int = 1_048_576
    # Hard end-to-end bound on one GraphQL request, at the gateway and in each subgraph.
    request_deadline_s: float = field(default_factory=lambda: float(os.environ.get("KERNELINDEX_REQUEST_DEADLINE_S", "30")))
    # Web origins allowed to call the API from a browser (CORS), comma-separated; none by default.
    cors_origins: tuple[str, ...] = field(
        default_factory=lambda: tuple(o.strip() for o in os.environ.get("KERNELINDEX_CORS_ORIGINS", "").split(",") if o.strip())
    )

    def query_limits(self) -> dict[str, int | float]:
        """The limits the gateway applies, as it reads them (KERNELINDEX_QUERY_LIMITS)."""
        return {
            "maxDepth": self.max_depth,
            "maxTokens": self.max_tokens,
            "maxAliases": self.max_aliases,
            "maxDirectives": self.max_directives,
            "maxFragments": self.max_fragments,
            "maxFields": self.max_fields,
            "maxBodyBytes": self.max_body_bytes,
            "requestDeadlineMs": int(self.request_deadline_s * 1000),
        }

    def gateway_env(self) -> dict[str, str]:
        """What the gateway's process is started with, so it applies the subgraphs' numbers."""
        return {"KERNELINDEX_QUERY_LIMITS": json.dumps(self.query_limits()), "KERNELINDEX_CORS_ORIGINS": ",".join(self.cors_origins)}
