"""Source snapshots: the exact bytes a source gave us, addressed by their sha256."""

from __future__ import annotations

from datetime import datetime

from bson import Binary
from pymongo.asynchronous.database import AsyncDatabase

from registry.digest import sha256_digest


async def save_snapshot(
    db: AsyncDatabase, *, source: str, url: str, fetched_at: datetime, body: bytes, status: int = 200
) -> str:
    """Keep a response once; the same bytes fetched again add nothing. Returns the digest."""
    digest = sha256_digest(body)
    await db.source_snapshots.update_one(
        {"_id": digest},
        {
            "$setOnInsert": {
                "source": source,
                "url": url,
                "fetchedAt": fetched_at,
                "sha256": digest.removeprefix("sha256:"),
                "status": status,
                "size": len(body),
                "body": Binary(body),
            }
        },
        upsert=True,
    )
    return digest
