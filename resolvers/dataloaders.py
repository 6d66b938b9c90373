"""Per-request DataLoaders: every lookup by key in one request is one batched query.

Created in `get_context` for each request, so nothing is cached across requests and a query's
number of round trips does not grow with the number of items it returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from strawberry.dataloader import DataLoader

from resolvers.node_types import NODE_TYPES
from resolvers.v1alpha1 import workload_definition_digest
from store.chunks import chunked
from store.client import Database
from store.lookups import by_ids, where_in

Doc = dict[str, Any]
# One query per loader for any page (first ≤ 100): a constant number of round trips per request.
LOADER_BATCH = 100


def _by_id_loader(db: Database, collection: str) -> DataLoader[str, Doc | None]:
    async def load(keys: list[str]) -> list[Doc | None]:
        found: dict[str, Doc] = {}
        for chunk in chunked(list(dict.fromkeys(keys)), LOADER_BATCH):
            found.update(await by_ids(db, collection, chunk))
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

    runs: DataLoader[str, Doc | None]
    definitions: DataLoader[str, Doc | None]
    workloads: DataLoader[str, Doc | None]
    implementations: DataLoader[str, Doc | None]
    protocols: DataLoader[str, Doc | None]
    environments: DataLoader[str, Doc | None]
    groups: DataLoader[str, Doc | None]
    attestations: DataLoader[str, Doc | None]
    notes: DataLoader[str, Doc | None]
    jobs: DataLoader[str, Doc | None]
    code_pins: DataLoader[str, Doc | None]
    run_rows: DataLoader[str, Doc | None]
    serving_runs: DataLoader[str, Doc | None]
    # What a serving run names, by digest (store/read_models.py ManifestDocument).
    model_revisions: DataLoader[str, Doc | None]
    serving_configurations: DataLoader[str, Doc | None]
    serving_stack_revisions: DataLoader[str, Doc | None]
    serving_workloads: DataLoader[str, Doc | None]

    def __init__(self, db: Database):
        # By key, one per node type (runs, definitions, ..., groups, notes, jobs).
        for node_type in NODE_TYPES.values():
            setattr(self, node_type.loader, _by_id_loader(db, node_type.collection))
        self.code_pins = _by_id_loader(db, "code_pins")
        # A run's leaderboard row (store/run_rows.py), where it has one: what an entity lookup
        # reads when the query asks nothing a row leaves out (Run.resolve_reference).
        self.run_rows = _by_id_loader(db, "run_rows")
        for collection in ("model_revisions", "serving_configurations", "serving_stack_revisions", "serving_workloads"):
            setattr(self, collection, _by_id_loader(db, collection))

        async def groups_of_definitions(keys: list[str]) -> list[Doc]:
            return await where_in(db, "comparison_groups", "definitionDigest", keys)

        async def workloads_of_definitions(keys: list[str]) -> list[Doc]:
            # Our suites name their definition in spec.definitionDigest; v1alpha1 workloads (the
            # catalog's) in spec.operationSpecDigest, kept beside the manifest as definitionDigest.
            ours, theirs = await asyncio.gather(
                where_in(db, "workloads", "spec.definitionDigest", keys), where_in(db, "workloads", "definitionDigest", keys)
            )
            return ours + theirs

        self.groups_by_definition = _grouped_loader(groups_of_definitions, lambda g: g.definition_digest)
        self.workloads_by_definition = _grouped_loader(workloads_of_definitions, workload_definition_digest)

    def for_type(self, type_name: str) -> DataLoader[str, Doc | None]:
        return getattr(self, NODE_TYPES[type_name].loader)
