"""Implementation: one revision of one implementation of a definition."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import strawberry
from strawberry.scalars import JSON

from registry import architectures
from resolvers import ids, v1alpha1
from resolvers.context import Info
from resolvers.cost_limit import MANIFEST_KIB, PAGE, weighs
from resolvers.node_types import owned_here
from resolvers.types.connection import Connection
from resolvers.types.node import Node
from resolvers.types.protocol import manifest_json

if TYPE_CHECKING:
    from resolvers.types.job import BenchmarkJob, JobState


@strawberry.type(
    description="Where the code of a revision lives: its digest covers the files at `paths`, the entry point and the variant; `commit` holds exactly those files."
)
class CodeReference:
    repository: str | None
    commit: str | None
    path: str | None
    paths: list[str] | None
    entry_point: str | None
    digest: str | None
    language: str | None
    url: str | None = strawberry.field(description="A link to the code at that commit, when the commit is known.")

    @classmethod
    def of(cls, code: dict[str, Any], pin: dict[str, Any] | None, source_url: str | None) -> CodeReference:
        """The manifest's code, completed by the pin kept for its digest (data/code-pins.json),
        which is preferred: it was checked against git history."""
        pin = pin or {}
        commit = pin.get("commit") or code.get("commit")
        url = f"{source_url}/tree/{commit}/{code['path']}" if source_url and commit and code.get("path") else None
        return cls(
            repository=pin.get("repository") or code.get("repository"),
            commit=commit,
            path=code.get("path"),
            paths=pin.get("paths") or code.get("paths"),
            entry_point=code.get("entryPoint"),
            digest=code.get("digest"),
            language=code.get("language"),
            url=url,
        )


async def code_reference(info: Info, doc: dict[str, Any] | None) -> CodeReference | None:
    """An ImplementationRevision document's code, with its pin if one is kept."""
    code = v1alpha1.implementation_code(doc) if doc else None
    if not code:
        return None
    pin = await info.context.loaders.code_pins.load(code["digest"]) if code.get("digest") else None
    return CodeReference.of(code, pin, info.context.source_url)


@strawberry.federation.type(keys=["id"], description="An implementation revision (ImplementationRevision manifest).")
class Implementation(Node):
    id: strawberry.ID
    digest: str
    name: str
    project: str
    revision: str
    definition_digest: str
    source: str | None
    external_id: str | None
    architectures: list[str] = strawberry.field(
        description='GPU architectures the code runs on ("sm_90", "sm_100"; "sm_*" any NVIDIA GPU, "*" any device); empty for imported code we cannot run.'
    )
    manifest: JSON = strawberry.field(directives=weighs(MANIFEST_KIB))
    doc: strawberry.Private[dict[str, Any]]

    @strawberry.field
    async def code(self, info: Info) -> CodeReference | None:
        return await code_reference(info, self.doc)

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Implementation:
        spec = doc["spec"]
        fields = v1alpha1.implementation_fields(doc)
        return cls(
            id=strawberry.ID(ids.encode("Implementation", doc["_id"])),
            digest=doc["_id"],
            name=fields["name"],
            project=fields["project"],
            revision=fields["revision"],
            definition_digest=fields["definitionDigest"],
            source=fields["source"],
            external_id=fields["externalId"],
            architectures=list(v1alpha1.implementation_architectures(doc) or architectures.declared(spec)),
            manifest=manifest_json(doc),
            doc=doc,
        )

    @strawberry.field(description="Benchmark jobs asked for this revision, newest first (from the benchmarks subgraph).", directives=[PAGE])
    async def jobs(
        self,
        info: Info,
        first: int = 20,
        after: str | None = None,
        state: Annotated[JobState, strawberry.lazy("resolvers.types.job")] | None = None,
    ) -> Connection[Annotated[BenchmarkJob, strawberry.lazy("resolvers.types.job")]]:
        from resolvers.types.job import job_connection

        return await job_connection(info, {"expected.implementationDigest": self.digest}, first, after, state)

    @classmethod
    def key_only(cls, key: str) -> Implementation:
        """An Implementation known by its key alone, as the benchmarks subgraph resolves the
        registry's references (it shows only `id` and `jobs`): see Definition.key_only."""
        return cls(
            id=strawberry.ID(ids.encode("Implementation", key)),
            digest=key,
            name="",
            project="",
            revision="",
            definition_digest="",
            source=None,
            external_id=None,
            architectures=[],
            manifest={},
            doc={"_id": key},
        )

    @classmethod
    async def resolve_reference(cls, info: Info, id: strawberry.ID) -> Implementation | None:
        key = ids.decode_as(id, "Implementation")
        if not owned_here(info.schema, "Implementation"):
            return cls.key_only(key)
        doc = await info.context.loaders.implementations.load(key)
        return cls.from_doc(doc) if doc else None
