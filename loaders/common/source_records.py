"""Skipping source records that are stored already, unchanged. A loader fingerprints each record:
its own code, and everything the record's run is made from. A record whose current run carries
the same fingerprint (store/source_records.py) would be rebuilt into the same run, so it is
counted `unchanged` without normalizing, digesting or publishing it; only the others are built."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from store.client import Database
from store.source_records import stored_fingerprints


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


async def lookup_database(db: Database | None, source: str) -> Database | None:
    """The database to look fingerprints up in: None when it holds no current run of `source`
    yet (a first import: nothing can be unchanged, and no lookup need be made)."""
    if db is None or await db.runs.find_one({"source": source, "current": True}, {"_id": 1}) is None:
        return None
    return db


async def unchanged_records(
    db: Database | None, source: str, fingerprints: dict[str, str], *, definition_digest: str | None = None
) -> set[str]:
    """The external ids of `fingerprints` ({externalId: fingerprint}) whose current run was made
    from a record with that fingerprint (`definition_digest`: the one definition of all their
    runs, for a single query). Empty without a database (a dry run builds everything)."""
    if db is None or not fingerprints:
        return set()
    stored = await stored_fingerprints(db, source, list(fingerprints), definition_digest=definition_digest)
    return {external_id for external_id, fingerprint in fingerprints.items() if stored.get(external_id) == fingerprint}
