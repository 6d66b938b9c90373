"""Errors meant for the client. Anything else is masked outside debug mode."""

from __future__ import annotations

from graphql import GraphQLError, GraphQLSyntaxError

from store.client import unavailable


class ClientError(Exception):
    """An expected failure with a message that is safe and useful to show."""

    def __init__(self, message: str, code: str = "BAD_USER_INPUT"):
        super().__init__(message)
        self.code = code
        # graphql-core copies an original error's `extensions` onto the located error.
        self.extensions = {"code": code}


def should_mask(error: GraphQLError) -> bool:
    original = error.original_error
    if original is None:
        return False  # syntax and validation errors (depth, tokens, aliases) are the client's
    if unavailable(original) is not None:
        return False  # the database is down or full: said with a code (add_code), not masked
    if error.path is None and isinstance(original, (GraphQLError, TypeError, ValueError)):
        # Raised before execution, while coercing the client's variables (a float for an ID,
        # a string for an Int): the message describes the client's input.
        return False
    return not isinstance(original, ClientError)


def add_code(error: GraphQLError) -> None:
    """Give a refusal graphql-core made its code: syntax GRAPHQL_PARSE_FAILED, validation
    (depth, aliases, unknown fields) GRAPHQL_VALIDATION_FAILED, a variable of the wrong type
    BAD_USER_INPUT. Errors that carry a code, and masked ones, are left as they are."""
    if (down := unavailable(error.original_error)) is not None:
        error.extensions = {**(error.extensions or {}), "code": down[0]}
        error.message = down[1]
        return
    if (error.extensions or {}).get("code") or should_mask(error):
        return
    if isinstance(error, GraphQLSyntaxError):
        code = "GRAPHQL_PARSE_FAILED"
    elif error.original_error is None and error.path is None:
        code = "GRAPHQL_VALIDATION_FAILED"
    elif error.path is None:
        code = "BAD_USER_INPUT"
    else:
        return
    error.extensions = {**(error.extensions or {}), "code": code}
