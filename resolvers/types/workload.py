"""Workload: a suite of concrete cases (WorkloadSuite manifest)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import strawberry
from strawberry.scalars import JSON

from resolvers import ids, v1alpha1
from resolvers.context import Info
from resolvers.cost_limit import MANIFEST_KIB, SMALL_JSON_KIB, weighs
from resolvers.types.node import Node
from resolvers.types.protocol import manifest_json

if TYPE_CHECKING:
    from resolvers.types.definition import Definition


@strawberry.type
class AxisBinding:
    name: str
    value: int


@strawberry.type
class WorkloadCase:
    index: int
    axes: list[AxisBinding]
    source_native: JSON = strawberry.field(description="Per-case numbers as the source gave them.", directives=weighs(SMALL_JSON_KIB))


@strawberry.federation.type(keys=["id"], description="A workload suite (WorkloadSuite manifest).")
class Workload(Node):
    id: strawberry.ID
    digest: str
    name: str
    title: str | None
    definition_digest: str
    case_count: int
    cases: list[WorkloadCase]
    aggregation: str
    comparator: str | None
    description: str | None
    manifest: JSON = strawberry.field(directives=weighs(MANIFEST_KIB))

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Workload:
        spec = doc["spec"]
        correctness = spec.get("correctness") or {}
        cases = v1alpha1.workload_cases(doc)
        return cls(
            id=strawberry.ID(ids.encode("Workload", doc["_id"])),
            digest=doc["_id"],
            name=doc["metadata"]["name"],
            title=doc["metadata"].get("title"),
            definition_digest=v1alpha1.workload_definition_digest(doc),
            case_count=len(cases),
            cases=[
                WorkloadCase(
                    index=c["index"],
                    axes=[AxisBinding(name=k, value=v) for k, v in c["axes"].items()],
                    source_native=c["sourceNative"],
                )
                for c in cases
            ],
            aggregation=v1alpha1.workload_aggregation(doc),
            comparator=correctness.get("comparator"),
            description=correctness.get("description"),
            manifest=manifest_json(doc),
        )

    @strawberry.field
    async def definition(self, info: Info) -> Annotated[Definition, strawberry.lazy("resolvers.types.definition")] | None:
        from resolvers.types.definition import Definition

        doc = await info.context.loaders.definitions.load(self.definition_digest)
        return Definition.from_doc(doc) if doc else None

    @classmethod
    async def resolve_reference(cls, info: Info, id: strawberry.ID) -> Workload | None:
        doc = await info.context.loaders.workloads.load(ids.decode_as(id, "Workload"))
        return cls.from_doc(doc) if doc else None
