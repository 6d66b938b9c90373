"""Documents by key, in batches: what the API's per-request DataLoaders ask the store for."""

from __future__ import annotations

from typing import Any

from store.client import Database

Doc = dict[str, Any]


async def by_ids(db: Database, collection: str, ids: list[str]) -> dict[str, Doc]:
    """The documents of `collection` whose `_id` is in `ids`, by `_id` (missing ones absent)."""
    return {doc["_id"]: doc async for doc in db[collection].find({"_id": {"$in": ids}})}


async def where_in(db: Database, collection: str, field: str, values: list[str]) -> list[Doc]:
    """The documents of `collection` whose `field` is one of `values`."""
    return await db[collection].find({field: {"$in": values}}).to_list()
