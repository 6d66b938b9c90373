"""Per-request DataLoaders: every lookup by key in one request is one batched query.

Created in `get_context` for each request, so nothing is cached across requests and a query's
number of round trips does not grow with the number of items it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase
from strawberry.dataloader import DataLoader

from store.chunks import chunked

Doc = dict[str, Any]
# One query per loader for any page (first ≤ 100): a constant number of round trips per request.
LOADER_BATCH = 100


def _by_id_loader(db: AsyncDatabase, collection: str) -> DataLoader[str, Doc | None]:
    async def load(keys: list[str]) -> list[Doc | None]:
        found: dict[str, Doc] = {}
        for chunk in chunked(list(dict.fromkeys(keys)), LOADER_BATCH):
            async for doc in db[collection].find({"_id": {"$in": chunk}}):
                found[doc["_id"]] = doc
        return [found.get(key) for key in keys]

    return DataLoader(load_fn=load)


def _grouped_loader(
    fetch: Callable[[list[str]], Coroutine[Any, Any, list[Doc]]], key_of: Callable[[Doc], str]
) -> DataLoader[str, list[Doc]]:
    """Loads, for each key, the documents that `key_of` maps to it."""

    async def load(keys: list[str]) -> list[list[Doc]]:
        buckets: dict[str, list[Doc]] = {key: [] for key in keys}
        for chunk in chunked(list(buckets), LOADER_BATCH):
            for doc in await fetch(chunk):
                buckets[key_of(doc)].append(doc)
        return [buckets[key] for key in keys]

    return DataLoader(load_fn=load)


class Loaders:
    """One DataLoader per lookup the schema makes."""

    def __init__(self, db: AsyncDatabase):
        self.runs = _by_id_loader(db, "runs")
        self.definitions = _by_id_loader(db, "definitions")
        self.workloads = _by_id_loader(db, "workloads")
        self.implementations = _by_id_loader(db, "implementations")
        self.protocols = _by_id_loader(db, "protocols")
        self.environments = _by_id_loader(db, "environments")
        self.groups = _by_id_loader(db, "comparison_groups")
        self.attestations = _by_id_loader(db, "attestations")
        self.code_pins = _by_id_loader(db, "code_pins")

        async def groups_of_definitions(keys: list[str]) -> list[Doc]:
            return await db.comparison_groups.find({"definitionDigest": {"$in": keys}}).to_list()

        async def workloads_of_definitions(keys: list[str]) -> list[Doc]:
            return await db.workloads.find({"spec.definitionDigest": {"$in": keys}}).to_list()

        self.groups_by_definition = _grouped_loader(groups_of_definitions, lambda d: d["definitionDigest"])
        self.workloads_by_definition = _grouped_loader(
            workloads_of_definitions, lambda d: d["spec"]["definitionDigest"]
        )

    def for_type(self, type_name: str) -> DataLoader[str, Doc | None]:
        return {
            "Run": self.runs,
            "Definition": self.definitions,
            "Workload": self.workloads,
            "Implementation": self.implementations,
            "Protocol": self.protocols,
            "Environment": self.environments,
            "ComparisonGroup": self.groups,
            "Attestation": self.attestations,
        }[type_name]
