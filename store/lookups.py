"""Documents by key, in batches: what the API's per-request DataLoaders ask the store for."""

from __future__ import annotations

from typing import Any

from store.client import Database
from store.read_models import read

Doc = dict[str, Any]


async def by_ids(db: Database, collection: str, ids: list[str]) -> dict[str, Any]:
    """The documents of `collection` whose `_id` is in `ids`, by `_id` (missing ones absent), as
    their read models where the collection has one (store/read_models.py)."""
    return {doc["_id"]: read(collection, doc) async for doc in db[collection].find({"_id": {"$in": ids}})}


async def where_in(db: Database, collection: str, field: str, values: list[str]) -> list[Any]:
    """The documents of `collection` whose `field` is one of `values` (read models, as by_ids)."""
    return [read(collection, doc) for doc in await db[collection].find({field: {"$in": values}}).to_list()]
