"""Which source records are stored as current runs, with the fingerprint of what they were
made from (a loader's `Bundle.source_record`, kept in the run document's `sourceRecord` beside
the manifest): lets a loader answer "unchanged" without rebuilding a run whose source record and
normalization code are the same as before. It is a loader's cache key, not part of the published
record, and it is updated when a rebuilt run turns out unchanged (a manifest's digest covers only
its spec, so new loader code mostly rebuilds the same runs)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

from pymongo import UpdateOne
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from store.chunks import IN_CHUNK, chunked

FIELD = "sourceRecord"


async def current_runs_of_records(
    db: AsyncDatabase,
    source: str,
    external_ids: Iterable[str],
    projection: dict[str, int],
    *,
    session: AsyncClientSession | None = None,
    chunk: int = IN_CHUNK,
) -> AsyncIterator[dict[str, Any]]:
    """The current runs of `source` that hold these source records (`externalId`s), with
    `projection` and `externalId`. Only the ids are sent: SecantusDB walks the `external_id` index
    for an `$in` on `externalId` alone, and with `source` and `current` beside it scans every run
    (a cost that grows with the store, paid per chunk by every import); the rest is checked here."""
    fields = {**projection, "externalId": 1, "source": 1, "current": 1}
    for ids in chunked(sorted(set(external_ids)), chunk):
        async for doc in db.runs.find({"externalId": {"$in": ids}}, fields, session=session):
            if doc.get("source") == source and doc.get("current") is True:
                yield doc


async def stored_fingerprints(
    db: AsyncDatabase, source: str, external_ids: list[str], *, definition_digest: str | None = None
) -> dict[str, str]:
    """externalId → the fingerprint of its current run (runs without one are left out). Given the
    definition all their runs belong to, one indexed query for that definition's runs instead of
    one per 50 ids (a record whose run has another definition is built again, as it must be)."""
    found: dict[str, str] = {}
    projection = {"_id": 0, "externalId": 1, FIELD: 1}
    if definition_digest is not None:
        wanted = set(external_ids)
        async for doc in db.runs.find({"definitionDigest": definition_digest, "source": source, "current": True}, projection):
            if doc.get(FIELD) and doc.get("externalId") in wanted:
                found[doc["externalId"]] = doc[FIELD]
        return found
    async for doc in current_runs_of_records(db, source, external_ids, projection):
        if doc.get(FIELD):
            found[doc["externalId"]] = doc[FIELD]
    return found


async def remember(db: AsyncDatabase, fingerprints: dict[str, str]) -> None:
    """Keep `fingerprints` ({run digest: fingerprint}) on runs that were already stored, e.g.
    rebuilt after the loader changed and found unchanged, so the next import skips them."""
    if fingerprints:
        await db.runs.bulk_write(
            [
                UpdateOne({"_id": digest, FIELD: {"$ne": fingerprint}}, {"$set": {FIELD: fingerprint}})
                for digest, fingerprint in fingerprints.items()
            ],
            ordered=False,
        )


async def has_current_runs(db: AsyncDatabase, source: str) -> bool:
    """Whether any current run of `source` is stored (a first import has nothing to look up)."""
    return await db.runs.find_one({"source": source, "current": True}, {"_id": 1}) is not None


async def name_older_runs(db: AsyncDatabase, source: str, names: list[str]) -> int:
    """Give the current runs of `source` stored by the older dialect without an externalId (our
    controlled runs before v1alpha1) their manifest name as one, for those named in `names`: the
    format's run of the same name (sourceNative.externalId = the name) then supersedes them as
    any corrected source record is superseded. Idempotent; a crash between this and the write
    leaves only names that the next write completes."""
    updated = 0
    for chunk in chunked(sorted(set(names))):
        # The name first: SecantusDB serves the filter from the first of its fields with an index
        # (store/schema.py run_name) and checks the rest on what it finds.
        query = {"metadata.name": {"$in": chunk}, "source": source, "current": True, "externalId": {"$exists": False}}
        result = await db.runs.update_many(query, [{"$set": {"externalId": "$metadata.name"}}])
        updated += result.modified_count
    return updated
