"""Environment: the GPU and software a run executed on."""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.scalars import JSON

from resolvers import ids
from resolvers.context import Info
from resolvers.cost_limit import MANIFEST_KIB, weighs
from resolvers.types.common import Label, labels_of
from resolvers.types.node import Node
from resolvers.types.protocol import manifest_json
from resolvers.v1alpha1 import software_field, software_libraries


@strawberry.type
class Gpu:
    vendor: str | None
    product: str
    architecture: str

    @strawberry.field(description='e.g. "NVIDIA B200 (sm_100)"')
    def display(self) -> str:
        return f"{self.product} ({self.architecture})"


@strawberry.federation.type(keys=["id"], description="An execution environment (ExecutionEnvironment manifest).")
class Environment(Node):
    id: strawberry.ID
    digest: str
    name: str
    title: str | None
    gpu: Gpu
    driver: str | None
    cuda: str | None
    os: str | None
    libraries: list[Label]
    manifest: JSON = strawberry.field(directives=weighs(MANIFEST_KIB))

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Environment:
        spec = doc["spec"]
        hardware = spec["hardware"]
        return cls(
            id=strawberry.ID(ids.encode("Environment", doc["_id"])),
            digest=doc["_id"],
            name=doc["metadata"]["name"],
            title=doc["metadata"].get("title"),
            gpu=Gpu(vendor=hardware.get("vendor"), product=hardware["product"], architecture=hardware["architecture"]),
            driver=software_field(spec, "driver"),
            cuda=software_field(spec, "cuda"),
            os=software_field(spec, "os"),
            libraries=labels_of(software_libraries(spec)),
            manifest=manifest_json(doc),
        )

    @classmethod
    async def resolve_reference(cls, info: Info, id: strawberry.ID) -> Environment | None:
        doc = await info.context.loaders.environments.load(ids.decode_as(id, "Environment"))
        return cls.from_doc(doc) if doc else None
