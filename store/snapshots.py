"""Source snapshots: the exact bytes a source gave us, addressed by their sha256."""

from __future__ import annotations

from datetime import datetime

from bson import Binary
from pymongo.asynchronous.database import AsyncDatabase

from registry.digest import sha256_digest


async def save_snapshots(db: AsyncDatabase, *, source: str, responses: list[tuple[str, datetime, bytes, int]]) -> int:
    """Keep many responses (url, fetched_at, body, status) at once: one read to learn which are
    kept already, one insert for the rest. An unchanged re-fetch writes nothing. Returns how
    many were new."""
    from store.chunks import chunked
    from store.publish import insert_ignoring_duplicates

    docs: dict[str, dict] = {}
    for url, fetched_at, body, status in responses:
        digest = sha256_digest(body)
        # Content-addressed: the same bytes from another URL are the same snapshot (first kept).
        docs.setdefault(
            digest,
            {
                "_id": digest,
                "source": source,
                "url": url,
                "fetchedAt": fetched_at,
                "sha256": digest.removeprefix("sha256:"),
                "status": status,
                "size": len(body),
                "body": Binary(body),
            },
        )
    kept: set[str] = set()
    for chunk in chunked(sorted(docs)):
        async for doc in db.source_snapshots.find({"_id": {"$in": chunk}}, {"_id": 1}):
            kept.add(doc["_id"])
    missing = [doc for digest, doc in docs.items() if digest not in kept]
    await insert_ignoring_duplicates(db.source_snapshots, missing)
    return len(missing)
