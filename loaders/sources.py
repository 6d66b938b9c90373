"""The registry of sources: one line per source, its loader's module (`loaders/<name>/loader.py`,
holding `LOADER`, a `loaders.common.source.SourceLoader`). The command line (`kernelindex import
SOURCE`, its `-h`), `serve`'s start-up data (server/bootstrap.py, via loaders.pipeline) and the
run pages' source names read it; docs list what `kernelindex import -h` prints.

To add a source: write its folder (loaders/common/source.py says what to implement), then add
its module here. Nothing else changes.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loaders.common.source import SourceLoader

SOURCES: list[str] = [
    "loaders.sol_execbench.loader",
    "loaders.gpumode.loader",
    # Read whole (loaders/common/source.py WholeSourceLoader); last, so that `serve` imports it
    # after the snapshots (our own objects' metadata is the one kept).
    "loaders.kernelindex_catalog.loader",
]


def loaders() -> list[SourceLoader]:
    """Every registered source's loader, in registration order (imported on first use)."""
    return [_load(module) for module in SOURCES]


@cache
def _load(module: str) -> SourceLoader:
    return importlib.import_module(module).LOADER


def get(key: str) -> SourceLoader:
    for loader in loaders():
        if loader.key == key:
            return loader
    raise KeyError(f"no source {key!r}: registered are {', '.join(loader.key for loader in loaders())}")


def source_title(key: str) -> str:
    """A source's display name on run pages: its loader's, else registry/sources.py's (ours)."""
    from registry import sources

    for loader in loaders():
        if loader.key == key:
            return loader.record_title or loader.title
    return sources.source_title(key)


def external_reference(key: str, external_id: str) -> str:
    """How the source itself names one record: "<prefix>/<external id>"."""
    from registry import sources

    for loader in loaders():
        if loader.key == key:
            return f"{loader.record_prefix}/{external_id}"
    return sources.external_reference(key, external_id)
