"""Expected failures of mutations, reported in the payload's `userErrors`."""

from __future__ import annotations

import strawberry

from resolvers.context import Info
from store.keys import ApiKey, Scope


# Both subgraphs' mutations return it (a value type): shareable.
@strawberry.federation.type(shareable=True, description="A problem with the input or the caller; nothing was written.")
class UserError:
    field: str | None
    message: str
    code: str


class Refusal(Exception):
    """Raised inside a mutation; turned into one userErrors entry."""

    def __init__(self, code: str, message: str, field: str | None = None):
        super().__init__(message)
        self.error = UserError(field=field, message=message, code=code)


def require_scope(info: Info, *scopes: Scope) -> ApiKey:
    key = info.context.principal
    if key is None:
        if info.context.key_presented:
            raise Refusal("UNAUTHENTICATED", "the API key is not valid", "authorization")
        raise Refusal("UNAUTHENTICATED", "this mutation needs an API key: Authorization: Bearer <key>", "authorization")
    if key.scope not in scopes:
        allowed = " or ".join(s.value for s in scopes)
        raise Refusal("FORBIDDEN", f"a {key.scope.value} key may not do this; it needs a {allowed} key", "authorization")
    return key
