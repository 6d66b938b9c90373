"""Which source records are stored as current runs, with the fingerprint of what they were
made from (a loader's metadata annotation `sourceRecord`): lets a loader answer "unchanged"
without rebuilding a run whose source record and normalization code are the same as before."""

from __future__ import annotations

from pymongo.asynchronous.database import AsyncDatabase

from store.chunks import chunked

ANNOTATION = "sourceRecord"


async def stored_fingerprints(db: AsyncDatabase, source: str, external_ids: list[str]) -> dict[str, str]:
    """externalId → the `sourceRecord` annotation of its current run (runs without one are left out)."""
    found: dict[str, str] = {}
    projection = {"externalId": 1, f"metadata.annotations.{ANNOTATION}": 1}
    for chunk in chunked(sorted(set(external_ids))):
        query = {"source": source, "externalId": {"$in": chunk}, "current": True}
        async for doc in db.runs.find(query, projection):
            fingerprint = doc.get("metadata", {}).get("annotations", {}).get(ANNOTATION)
            if fingerprint:
                found[doc["externalId"]] = fingerprint
    return found
