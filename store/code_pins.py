"""Code pins in the database: the data file's pins (registry/code.py), readable by every process."""

from __future__ import annotations

from pymongo import ReplaceOne
from pymongo.asynchronous.database import AsyncDatabase

from registry.code import CodePin


async def save_pins(db: AsyncDatabase, pins: dict[str, CodePin]) -> int:
    """Store each pin under its code digest; a pin already stored as given is not written again.
    Returns how many were written."""
    stored = {doc["_id"]: doc async for doc in db.code_pins.find({"_id": {"$in": list(pins)}})}
    writes = []
    for digest, pin in pins.items():
        doc = pin.model_dump(exclude_none=True)
        if {k: v for k, v in stored.get(digest, {}).items() if k != "_id"} != doc:
            writes.append(ReplaceOne({"_id": digest}, doc, upsert=True))
    if writes:
        await db.code_pins.bulk_write(writes, ordered=False)
    return len(writes)
