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


# What we know about how a harness version measures, beyond what its protocol manifest says
# (harness name, version → note). Shown with every protocol of that harness version, whichever
# dialect or path stored it: a manifest's digest is the seed system's and cannot carry it.
HARNESS_NOTES = {
    ("SOL-ExecBench evaluation stack", "v1.1"): "stack v1.1 computes the median of CUPTI spans although the documentation says mean",
}


def harness_notes(name: str, version: str) -> list[str]:
    note = HARNESS_NOTES.get((name, version))
    return [note] if note else []
