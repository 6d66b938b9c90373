"""Sources of runs that are not imported (our own runs): display name and how each names a
record. Imported sources declare theirs in their loader (loaders/sources.py reads both)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    key: str
    title: str
    record_prefix: str  # how the source itself refers to one record: "<prefix>/<external id>"


SOURCES = {
    "kernelindex": Source("kernelindex", "KernelIndex", "run"),
}


def source_title(key: str) -> str:
    return SOURCES[key].title if key in SOURCES else key


def external_reference(key: str, external_id: str) -> str:
    prefix = SOURCES[key].record_prefix if key in SOURCES else "record"
    return f"{prefix}/{external_id}"
