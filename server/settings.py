"""Settings from the environment."""

from __future__ import annotations

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
    max_depth: int = 12
    max_tokens: int = 4000
    max_aliases: int = 30
    max_body_bytes: int = 1_048_576
