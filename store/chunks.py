"""Batching helper: SecantusDB's `$in` slows down sharply past a few hundred values."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

IN_CHUNK = 50


def chunked(items: Sequence[T], size: int = IN_CHUNK) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])
