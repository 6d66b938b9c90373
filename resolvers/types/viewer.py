"""`viewer`: the API key a request authenticates with (what `kernelindex mcp --http` checks)."""

from __future__ import annotations

import strawberry

from store.keys import ApiKey


@strawberry.type(description="The API key a request authenticates with: its ID, name and scope; never its secret.")
class Viewer:
    key_id: str
    name: str
    scope: str = strawberry.field(description="reader, partner, runner or maintainer.")

    @classmethod
    def of(cls, key: ApiKey) -> Viewer:
        return cls(key_id=key.id, name=key.name, scope=key.scope.value)
