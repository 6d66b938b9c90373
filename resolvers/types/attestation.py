"""Attestation: a partner's signed reproduction of a run. Never changes the run's evidence level."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import strawberry
from strawberry.scalars import JSON

from resolvers import ids
from resolvers.context import Info
from resolvers.cost_limit import MANIFEST_KIB, SMALL_JSON_KIB, weighs
from resolvers.types.node import Node
from resolvers.types.protocol import manifest_json


@strawberry.federation.type(keys=["id"], description="A signed statement about a run (Attestation manifest).")
class Attestation(Node):
    id: strawberry.ID
    digest: str
    subject_digest: str
    predicate_type: str
    author: str
    key_id: str | None
    verified: bool
    attested_at: datetime
    measurement: JSON = strawberry.field(directives=weighs(SMALL_JSON_KIB))
    envelope: JSON = strawberry.field(description="The DSSE envelope as submitted.", directives=weighs(SMALL_JSON_KIB))
    manifest: JSON = strawberry.field(directives=weighs(MANIFEST_KIB))

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Attestation:
        spec = doc["spec"]
        return cls(
            id=strawberry.ID(ids.encode("Attestation", doc["_id"])),
            digest=doc["_id"],
            subject_digest=spec["subjectDigest"],
            predicate_type=spec["predicateType"],
            author=spec["author"]["name"],
            key_id=spec["author"].get("keyId"),
            verified=spec["verified"],
            attested_at=datetime.fromisoformat(spec["attestedAt"].replace("Z", "+00:00")),
            measurement=spec.get("measurement", {}),
            envelope=spec["envelope"],
            manifest=manifest_json(doc),
        )

    @classmethod
    async def resolve_reference(cls, info: Info, id: strawberry.ID) -> Attestation | None:
        doc = await info.context.loaders.attestations.load(ids.decode_as(id, "Attestation"))
        return cls.from_doc(doc) if doc else None
