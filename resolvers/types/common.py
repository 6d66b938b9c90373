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


def encode_cursor(*parts: object) -> str:
    return base64.urlsafe_b64encode(":".join(str(p) for p in parts).encode()).decode()


def decode_cursor(cursor: str, arity: int) -> list[int]:
    from resolvers.errors import ClientError

    try:
        parts = [int(p) for p in base64.urlsafe_b64decode(cursor.encode()).decode().split(":")]
    except ValueError:
        raise ClientError(f"after: {cursor!r} is not a valid cursor") from None
    if len(parts) != arity:
        raise ClientError(f"after: {cursor!r} is not a valid cursor")
    return parts


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
