"""Skipping source records that are stored already, unchanged. A loader fingerprints each record:
its own code, and everything the record's run is made from. A record whose current run carries
the same fingerprint (store/source_records.py) would be rebuilt into the same run, so it is
counted `unchanged` without normalizing, digesting or publishing it; only the others are built.
A loader computes fingerprints; the pipeline (loaders/pipeline.py) alone looks them up."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any


@cache
def code_fingerprint(*modules: ModuleType) -> bytes:
    """What turns records into manifests: these loader modules, the manifest models and the
    digest recipe. A change to any of them makes every record's fingerprint new, so every
    record is built again once (a run that comes out the same is `unchanged`)."""
    import registry.digest
    import registry.manifests

    files = [Path(module.__file__) for module in (*modules, registry.manifests, registry.digest)]
    return hashlib.sha256(b"".join(path.read_bytes() for path in files)).digest()


def record_fingerprint(code: bytes, *parts: Any) -> str:
    """sha256 of `code` (code_fingerprint) and the record's parts, as canonical JSON."""
    record = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(code + record.encode()).hexdigest()
