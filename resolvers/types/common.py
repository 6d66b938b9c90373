"""Small shared types: scalars, enums, labels, metrics, pagination."""

from __future__ import annotations

import base64
from enum import Enum
from typing import NewType

import strawberry

from registry.evidence import EvidenceLevel as DomainEvidenceLevel
from registry.manifests import RunStatus as DomainRunStatus

# Nanosecond counts overflow GraphQL's 32-bit Int past ~2.1 s. Mapped in the schema's config.
Long = NewType("Long", int)
LONG_SCALAR = strawberry.scalar(
    name="Long",
    serialize=int,
    parse_value=int,
    description="A 64-bit integer (durations in nanoseconds, counts).",
)

RunStatus = strawberry.enum(DomainRunStatus, name="RunStatus", description="Outcome of a run.")


@strawberry.enum(description="How much a run's number can be trusted; derived, never submitted.")
class EvidenceLevel(Enum):
    REPORTED = "Reported"
    REPRODUCIBLE = "Reproducible"
    KERNELINDEX_VERIFIED = "KernelIndex Verified"
    INDEPENDENTLY_REPLICATED = "Independently Replicated"

    @classmethod
    def of(cls, value: str) -> EvidenceLevel:
        return cls(DomainEvidenceLevel(value).value)


@strawberry.type
class Label:
    key: str
    value: str


def labels_of(mapping: dict[str, str] | None) -> list[Label]:
    return [Label(key=k, value=v) for k, v in sorted((mapping or {}).items())]


# Both subgraphs return it (a value type): shareable.
@strawberry.federation.type(shareable=True)
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


# Cursors name the list they page ("runs:<seq>"), so one list's cursor is refused by another.
CURSOR_KINDS = ("runs", "group", "attestations", "notes", "jobs", "events", "definitions", "serving")
MAX_CURSOR_PART = 2**63 - 1  # what the database compares (a larger number cannot be a position)


def encode_cursor(kind: str, *parts: object) -> str:
    return base64.urlsafe_b64encode(":".join((kind, *(str(p) for p in parts))).encode()).decode()


def shown(value: str, limit: int = 60) -> str:
    """A client's value quoted in an error message, cut short (it may be 100 KB)."""
    return repr(value) if len(value) <= limit else repr(value[:limit]) + f"… ({len(value):,} characters)"


def cursor_parts(cursor: str, kind: str) -> list[str]:
    """The parts of a cursor of `kind`; ClientError naming a malformed one or another list's."""
    from resolvers.errors import ClientError

    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8")
    except (ValueError, UnicodeError):
        raise ClientError(f"after: {shown(cursor)} is not a valid cursor") from None
    found, _, rest = text.partition(":")
    if found != kind:
        if found in CURSOR_KINDS:
            raise ClientError(f"after: {shown(cursor)} is a cursor of {found}, not of this list ({kind})")
        raise ClientError(f"after: {shown(cursor)} is not a valid cursor")
    return rest.split(":")


def decode_cursor(cursor: str, kind: str, arity: int) -> list[int]:
    from resolvers.errors import ClientError

    parts = cursor_parts(cursor, kind)
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        raise ClientError(f"after: {shown(cursor)} is not a valid cursor") from None
    if len(numbers) != arity or not all(0 <= n <= MAX_CURSOR_PART for n in numbers):
        raise ClientError(f"after: {shown(cursor)} is not a valid cursor")
    return numbers


MAX_PAGE = 100


def check_first(first: int) -> int:
    from resolvers.errors import ClientError

    if first < 0:
        raise ClientError("first: must be 0 or more")
    if first > MAX_PAGE:
        raise ClientError(f"first: {first} is above the maximum page size of {MAX_PAGE}")
    return first


def format_ns(value_ns: int) -> str:
    """Human display of a duration: 333636 → "333.6 µs"."""
    if value_ns >= 1_000_000_000:
        return f"{value_ns / 1e9:.3g} s"
    if value_ns >= 1_000_000:
        return f"{value_ns / 1e6:.1f} ms"
    if value_ns >= 1_000:
        return f"{value_ns / 1e3:.1f} µs"
    return f"{value_ns} ns"
