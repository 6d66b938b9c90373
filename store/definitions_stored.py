"""A number that changes after definitions are stored: the listing of every definition that
store/queries.py keeps per process is whole while this number reads the same (one small document
by `_id`, where SecantusDB counts a collection by walking it: ~4 ms for the bundled data's 451
definitions, ~55 ms at 6,000).

It is raised after the insert, so a reader that sees the new number finds the new definitions. A
writer killed between its insert and the raise leaves the number behind: readers also count the
definitions now and then (store/queries.py RECOUNT_S), so that listing is whole again soon after."""

from __future__ import annotations

from pymongo.asynchronous.database import AsyncDatabase

from store import counters

_KEY = "definitions"  # its document in `counters` (beside the event counter)


async def raise_number(db: AsyncDatabase) -> None:
    await db.counters.update_one({"_id": _KEY}, {"$inc": {"seq": 1}}, upsert=True)


async def number(db: AsyncDatabase) -> int:
    return await counters.value(db, _KEY)
