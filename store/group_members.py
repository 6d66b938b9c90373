"""A comparison group's runs, read in rank order through the `group_rank` index.

Every run of a group carries `groupKey` and `rankOrder` (its rank; UNRANKED_ORDER for current runs
without a rank and for superseded runs), indexed as (groupKey, rankOrder, seq). SecantusDB uses
that index only for an equality on `groupKey` plus a range on `rankOrder`: add `current: true` to
the filter and it scans the whole collection (26 ms at 10,000 runs, growing with the store), and a
`limit` does not stop a scan early. So these reads ask for bounded rank ranges without `current`
and drop superseded runs here; a range costs about what the documents in it cost to fetch.
"""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

Doc = dict[str, Any]

UNRANKED_ORDER = 2**31 - 1
BY_RANK = [("rankOrder", 1), ("seq", 1)]


def rank_order(rank: int | None) -> int:
    """A sortable stand-in for rank: unranked runs list after every ranked one."""
    return UNRANKED_ORDER if rank is None else rank


async def current_members(
    db: AsyncDatabase, group_key: str, projection: dict[str, int], session: AsyncClientSession | None = None
) -> list[Doc]:
    """Every current run of the group (ranked ones first, then the rest)."""
    fields = {**projection, "current": 1}
    ranked = await db.runs.find({"groupKey": group_key, "rankOrder": {"$lt": UNRANKED_ORDER}}, fields, session=session).to_list()
    rest = await db.runs.find({"groupKey": group_key, "rankOrder": UNRANKED_ORDER}, fields, session=session).to_list()
    return [doc for doc in ranked + rest if doc["current"]]


async def group_runs_page(
    db: AsyncDatabase, *, group_key: str, ranked_size: int, first: int, after: tuple[int, int] | None
) -> tuple[list[Doc], bool]:
    """Best first (rank, then publication order), unranked runs last; keyset-paged on
    (rankOrder, seq). Returns (page, has_next_page).

    Ranked runs are read in windows of rank values that grow geometrically (a page of 50 from a
    1,000-run group fetches about 52 documents). Competition ranks never exceed the number of
    ranked runs, so the window that would pass `ranked_size` reads up to UNRANKED_ORDER instead:
    a `ranked_size` read a moment before a publish still finds every ranked run."""
    wanted = first + 1
    after_order, after_seq = after if after is not None else (0, -1)
    docs: list[Doc] = []

    def keep(found: list[Doc]) -> None:
        docs.extend(d for d in found if d["current"] and (d["rankOrder"], d["seq"]) > (after_order, after_seq))

    low, window = after_order, wanted + 2
    while len(docs) < wanted and low < UNRANKED_ORDER:
        high = low + window if low + window <= ranked_size else UNRANKED_ORDER
        keep(await db.runs.find({"groupKey": group_key, "rankOrder": {"$gte": low, "$lt": high}}).sort(BY_RANK).to_list())
        low, window = high, window * 4
    if len(docs) < wanted:
        floor = after_seq if after_order == UNRANKED_ORDER else -1
        keep(await db.runs.find({"groupKey": group_key, "rankOrder": UNRANKED_ORDER, "seq": {"$gt": floor}}).sort(BY_RANK).to_list())
    return docs[:first], len(docs) > first
