"""Definition: an operation (OperationSpec manifest), its workloads and comparison groups."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated, Any

import strawberry
from strawberry.scalars import JSON

from resolvers import ids, v1alpha1
from resolvers.context import Info
from resolvers.cost_limit import MANIFEST_KIB, PAGE, weighs
from resolvers.node_types import owned_here
from resolvers.types.connection import Connection
from resolvers.types.node import Node
from resolvers.types.protocol import manifest_json
from store.queries import related_definitions

if TYPE_CHECKING:
    from resolvers.types.group import ComparisonGroup
    from resolvers.types.job import BenchmarkJob, JobState
    from resolvers.types.workload import Workload


@strawberry.type
class Axis:
    name: str
    type: str
    value: int | None
    expression: str | None
    description: str | None


@strawberry.type
class TensorSpec:
    name: str
    shape: list[str] | None = strawberry.field(description="Axis names or literal sizes; null for a scalar.")
    dtype: str
    description: str | None


@strawberry.type
class DefinitionRelation:
    relation: str
    source: str | None
    benchmark: str | None
    definition_digest: str | None
    notes: str | None


def _tensors(tensors: list[dict[str, Any]]) -> list[TensorSpec]:
    return [
        TensorSpec(
            name=t["name"],
            shape=None if t.get("shape") is None else [str(s) for s in t["shape"]],
            dtype=t["dtype"],
            description=t.get("description"),
        )
        for t in tensors
    ]


@strawberry.federation.type(keys=["id"], description="An operation definition (OperationSpec manifest).")
class Definition(Node):
    id: strawberry.ID
    digest: str
    name: str
    title: str | None
    description: str
    semantics: str | None
    tags: list[str]
    axes: list[Axis]
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    relations: list[DefinitionRelation]
    source: str | None
    reference_digest: str | None = strawberry.field(description="Digest of the source's reference code; the code itself is not stored.")
    manifest: JSON = strawberry.field(directives=weighs(MANIFEST_KIB))
    related_lookup: strawberry.Private[asyncio.Future | None] = None

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Definition:
        spec = doc["spec"]
        reference = spec.get("reference") or {}
        return cls(
            id=strawberry.ID(ids.encode("Definition", doc["_id"])),
            digest=doc["_id"],
            name=v1alpha1.definition_name(doc),
            # A source's own display title, kept beside a v1alpha1 manifest (SOL-ExecBench's kernel
            # title, as the seed page shows it), else the manifest's.
            title=doc.get("sourceTitle") or doc["metadata"].get("title"),
            description=v1alpha1.definition_description(doc),
            semantics=v1alpha1.definition_semantics(doc),
            tags=v1alpha1.definition_tags(doc),
            axes=[Axis(**a) for a in v1alpha1.definition_axes(doc)],
            inputs=_tensors(v1alpha1.definition_tensors(doc, "inputs")),
            outputs=_tensors(v1alpha1.definition_tensors(doc, "outputs")),
            relations=[
                DefinitionRelation(
                    relation=r["relation"],
                    source=r.get("source"),
                    benchmark=r.get("benchmark"),
                    definition_digest=r.get("definitionDigest"),
                    notes=r.get("notes"),
                )
                for r in v1alpha1.definition_relations(doc)
            ],
            source=reference.get("source"),
            reference_digest=reference.get("referenceDigest"),
            manifest=manifest_json(doc),
        )

    @strawberry.field(description="Workload suites defined for this operation.")
    async def workloads(self, info: Info) -> list[Annotated[Workload, strawberry.lazy("resolvers.types.workload")]]:
        from resolvers.types.workload import Workload

        return [Workload.from_doc(d) for d in await info.context.loaders.workloads_by_definition.load(self.digest)]

    @strawberry.field(description="Definitions that compute the same math (e.g. ours and the source's).")
    async def related_definitions(self, info: Info) -> list[Definition]:
        # Asked twice by a page that shows them and their groups (comparisonGroups(includeRelated:)),
        # often at once: one look-up per definition and request.
        if self.related_lookup is None:
            self.related_lookup = asyncio.ensure_future(
                related_definitions(
                    info.context.db,
                    digest=self.digest,
                    name=self.name,
                    names=[r.benchmark for r in self.relations if r.benchmark],
                    digests=[r.definition_digest for r in self.relations if r.definition_digest],
                )
            )
        return [Definition.from_doc(d) for d in await self.related_lookup]

    @strawberry.field(description="Comparison groups of this definition; with includeRelated, also of related definitions.")
    async def comparison_groups(
        self, info: Info, include_related: bool = False
    ) -> list[Annotated[ComparisonGroup, strawberry.lazy("resolvers.types.group")]]:
        from resolvers.types.group import ComparisonGroup

        digests = [self.digest]
        if include_related:
            digests += [d.digest for d in await self.related_definitions(info)]
        docs = await info.context.loaders.groups_by_definition.load_many(digests)
        return [ComparisonGroup.from_doc(g) for batch in docs for g in batch]

    @strawberry.field(
        description="Benchmark jobs asked for this definition, newest first (from the benchmarks subgraph).", directives=[PAGE]
    )
    async def jobs(
        self,
        info: Info,
        first: int = 20,
        after: str | None = None,
        state: Annotated[JobState, strawberry.lazy("resolvers.types.job")] | None = None,
    ) -> Connection[Annotated[BenchmarkJob, strawberry.lazy("resolvers.types.job")]]:
        from resolvers.types.job import job_connection

        return await job_connection(info, {"definitionDigest": self.digest}, first, after, state)

    @classmethod
    def key_only(cls, key: str) -> Definition:
        """A Definition known by its key alone, as the benchmarks subgraph resolves the registry's
        references: that subgraph shows only `id` and `jobs`, which read nothing else, so the
        registry's document is not read again there (the other fields stay empty, never shown)."""
        return cls(
            id=strawberry.ID(ids.encode("Definition", key)),
            digest=key,
            name="",
            title=None,
            description="",
            semantics=None,
            tags=[],
            axes=[],
            inputs=[],
            outputs=[],
            relations=[],
            source=None,
            reference_digest=None,
            manifest={},
        )

    @classmethod
    async def resolve_reference(cls, info: Info, id: strawberry.ID) -> Definition | None:
        key = ids.decode_as(id, "Definition")
        if not owned_here(info.schema, "Definition"):
            return cls.key_only(key)
        doc = await info.context.loaders.definitions.load(key)
        return cls.from_doc(doc) if doc else None


@strawberry.type(description="A page of definitions matching a search, and how many match in all.")
class DefinitionSearch(Connection[Definition]):
    total_count: int
