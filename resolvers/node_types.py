"""The one list of node types: GraphQL name, collection, DataLoader, owning subgraph and class.

IDs (`resolvers.ids`), the DataLoaders, `node`/`nodes` lookups, entity resolution and both
subgraph schemas read this list; a new node type is one line here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

REGISTRY = "registry"
BENCHMARKS = "benchmarks"


@dataclass(frozen=True)
class NodeType:
    name: str  # the GraphQL type name, also the prefix of its global IDs
    collection: str
    loader: str  # the attribute of resolvers.dataloaders.Loaders that loads it by key
    module: str  # where its Strawberry class lives (imported on use: the types import resolvers.ids)
    subgraph: str  # the subgraph that owns and resolves it
    entity: bool = True  # a federation entity (@key(fields: "id"))

    @property
    def cls(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)


NODE_TYPES: dict[str, NodeType] = {
    t.name: t
    for t in (
        NodeType("Run", "runs", "runs", "resolvers.types.run", REGISTRY),
        NodeType("Definition", "definitions", "definitions", "resolvers.types.definition", REGISTRY),
        NodeType("Workload", "workloads", "workloads", "resolvers.types.workload", REGISTRY),
        NodeType("Implementation", "implementations", "implementations", "resolvers.types.implementation", REGISTRY),
        NodeType("Protocol", "protocols", "protocols", "resolvers.types.protocol", REGISTRY),
        NodeType("Environment", "environments", "environments", "resolvers.types.environment", REGISTRY),
        NodeType("ComparisonGroup", "comparison_groups", "groups", "resolvers.types.group", REGISTRY),
        NodeType("Attestation", "attestations", "attestations", "resolvers.types.attestation", REGISTRY),
        NodeType("ServingRun", "serving_runs", "serving_runs", "resolvers.types.serving", REGISTRY),
        NodeType("Note", "notes", "notes", "resolvers.types.note", REGISTRY, entity=False),
        NodeType("BenchmarkJob", "jobs", "jobs", "resolvers.types.job", BENCHMARKS),
    )
}


def entity_classes(subgraph: str | None = None) -> list[Any]:
    """The Strawberry classes of the federation entities a subgraph owns (None: all)."""
    return [t.cls for t in NODE_TYPES.values() if t.entity and subgraph in (None, t.subgraph)]


def owned_here(schema: Any, type_name: str) -> bool:
    """Whether `schema` (a request's `info.schema`) resolves `type_name`'s own fields: the owning
    subgraph and the combined schema do; another subgraph only adds fields to it (CONTRIBUTED)."""
    subgraph = getattr(schema, "subgraph", None)
    return subgraph is None or NODE_TYPES[type_name].subgraph == subgraph
