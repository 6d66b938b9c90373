"""What `serve` last loaded of its bundled data in full: a fingerprint of the data's files and of
the code that imports them (server/bootstrap.py computes it). A start that finds the same one
imports nothing: a restart then waits only for its processes. It is removed when a load begins and written
when every step of it has succeeded, so a start that failed, crashed or was stopped mid-way loads
again (each step is idempotent)."""

from __future__ import annotations

from datetime import datetime

from pymongo.asynchronous.database import AsyncDatabase

COLLECTION = "bundled_data_loads"
_KEY = "bundled-data"


async def last_fingerprint(db: AsyncDatabase) -> str | None:
    doc = await db[COLLECTION].find_one({"_id": _KEY})
    return doc["fingerprint"] if doc else None


async def record(db: AsyncDatabase, fingerprint: str, at: datetime) -> None:
    await db[COLLECTION].replace_one({"_id": _KEY}, {"_id": _KEY, "fingerprint": fingerprint, "loadedAt": at}, upsert=True)


async def forget(db: AsyncDatabase) -> None:
    await db[COLLECTION].delete_one({"_id": _KEY})
