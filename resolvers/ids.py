"""Opaque global IDs: base64url of "<Type>:<key>". The same ID is the federation key."""

from __future__ import annotations

import base64
import binascii

from resolvers.node_types import NODE_TYPES

TYPES = frozenset(NODE_TYPES)


class BadGlobalId(ValueError):
    pass


def _shown(value: str, limit: int = 60) -> str:
    """A client's ID quoted in an error message, cut short (it may be 100 KB)."""
    return repr(value) if len(value) <= limit else repr(value[:limit]) + f"… ({len(value):,} characters)"


def encode(type_name: str, key: str) -> str:
    return base64.urlsafe_b64encode(f"{type_name}:{key}".encode()).decode().rstrip("=")


def decode(global_id: str) -> tuple[str, str]:
    """(type name, key); BadGlobalId when the ID is not one of ours."""
    try:
        padded = global_id + "=" * (-len(global_id) % 4)
        text = base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        raise BadGlobalId(f"{_shown(global_id)} is not a valid ID") from None
    type_name, _, key = text.partition(":")
    if type_name not in TYPES or not key:
        raise BadGlobalId(f"{_shown(global_id)} is not a valid ID")
    return type_name, key


def decode_as(global_id: str, expected: str) -> str:
    type_name, key = decode(global_id)
    if type_name != expected:
        raise BadGlobalId(f"{_shown(global_id)} is a {type_name} ID, expected a {expected} ID")
    return key
