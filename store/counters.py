"""Named counters in one collection (`counters`: `{_id: name, seq}`): the event sequence
(store/events.py), the stored-definitions number (store/definitions_stored.py) and the shape of
the leaderboards' rows once all have it (store/leaderboards.py)."""

from __future__ import annotations

from pymongo.asynchronous.database import AsyncDatabase


async def value(db: AsyncDatabase, name: str) -> int:
    """The counter's value, 0 before it was first raised."""
    counter = await db.counters.find_one({"_id": name}, {"seq": 1})
    return counter["seq"] if counter else 0
