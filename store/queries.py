"""Read queries the API needs, keyset-paginated (never skip/limit over large offsets)."""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

Doc = dict[str, Any]


async def runs_page(
    db: AsyncDatabase, *, query: dict[str, Any], first: int, after_seq: int | None
) -> tuple[list[Doc], bool]:
    """Newest first. Returns (page, has_next_page)."""
    if after_seq is not None:
        query = {**query, "seq": {"$lt": after_seq}}
    docs = await db.runs.find(query).sort("seq", -1).limit(first + 1).to_list()
    return docs[:first], len(docs) > first


async def group_runs_page(
    db: AsyncDatabase, *, group_key: str, first: int, after: tuple[int, int] | None
) -> tuple[list[Doc], bool]:
    """Best first (rank, then publication order); unranked runs last."""
    query: dict[str, Any] = {"groupKey": group_key, "current": True}
    if after is not None:
        rank_order, seq = after
        query["$or"] = [
            {"rankOrder": {"$gt": rank_order}},
            {"rankOrder": rank_order, "seq": {"$gt": seq}},
        ]
    docs = await db.runs.find(query).sort([("rankOrder", 1), ("seq", 1)]).limit(first + 1).to_list()
    return docs[:first], len(docs) > first


async def attestations_page(
    db: AsyncDatabase, *, subject: str, first: int, after_seq: int | None
) -> tuple[list[Doc], bool]:
    query: dict[str, Any] = {"spec.subjectDigest": subject}
    if after_seq is not None:
        query["seq"] = {"$gt": after_seq}
    docs = await db.attestations.find(query).sort("seq", 1).limit(first + 1).to_list()
    return docs[:first], len(docs) > first
