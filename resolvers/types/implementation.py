"""Implementation: one revision of one implementation of a definition."""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.scalars import JSON

from resolvers import ids
from resolvers.context import Info
from resolvers.types.node import Node
from resolvers.types.protocol import manifest_json


@strawberry.type
class CodeReference:
    repository: str | None
    commit: str | None
    path: str | None
    entry_point: str | None
    digest: str | None
    language: str | None


@strawberry.federation.type(keys=["id"], description="An implementation revision (ImplementationRevision manifest).")
class Implementation(Node):
    id: strawberry.ID
    digest: str
    name: str
    project: str
    revision: str
    definition_digest: str
    code: CodeReference | None
    source: str | None
    external_id: str | None
    manifest: JSON

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Implementation:
        spec = doc["spec"]
        code = spec.get("code")
        source = spec.get("source") or {}
        return cls(
            id=strawberry.ID(ids.encode("Implementation", doc["_id"])),
            digest=doc["_id"],
            name=spec["name"],
            project=spec["project"],
            revision=spec["revision"],
            definition_digest=spec["definitionDigest"],
            code=CodeReference(
                repository=code.get("repository"),
                commit=code.get("commit"),
                path=code.get("path"),
                entry_point=code.get("entryPoint"),
                digest=code.get("digest"),
                language=code.get("language"),
            )
            if code
            else None,
            source=source.get("source"),
            external_id=source.get("externalId"),
            manifest=manifest_json(doc),
        )

    @classmethod
    async def resolve_reference(cls, info: Info, id: strawberry.ID) -> Implementation | None:
        doc = await info.context.loaders.implementations.load(ids.decode_as(id, "Implementation"))
        return cls.from_doc(doc) if doc else None
