"""The event log: every publication and group change, in one total order (`seq`).

`seq` comes from a counter document so that it is one order across server processes; a
subscriber resumes after the last `seq` it saw. Blocks of numbers are reserved in one round trip.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from store import counters


async def reserve(db: AsyncDatabase, count: int, session: AsyncClientSession | None = None) -> int:
    """Reserve `count` consecutive sequence numbers; return the first. Inside the transaction that
    writes the events, concurrent writers conflict on the counter, so events commit in `seq` order."""
    counter = await db.counters.find_one_and_update(
        {"_id": "events"},
        {"$inc": {"seq": count}},
        upsert=True,
        return_document=ReturnDocument.AFTER,
        session=session,
    )
    return counter["seq"] - count + 1


def event_document(seq: int, type_: str, at: datetime, **data: Any) -> dict[str, Any]:
    return {"seq": seq, "type": type_, "at": at, **{k: v for k, v in data.items() if v is not None}}


async def append(db: AsyncDatabase, type_: str, at: datetime, *, session: AsyncClientSession | None = None, **data: Any) -> dict[str, Any]:
    seq = await reserve(db, 1, session)
    doc = event_document(seq, type_, at, **data)
    await db.events.insert_one(doc, session=session)
    return doc


async def last_seq(db: AsyncDatabase) -> int:
    """The newest sequence number handed out (0 before the first event)."""
    return await counters.value(db, "events")


async def after(db: AsyncDatabase, seq: int, limit: int = 1000) -> list[dict[str, Any]]:
    return await db.events.find({"seq": {"$gt": seq}}).sort("seq", 1).limit(limit).to_list()
