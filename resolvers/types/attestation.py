"""Attestation: a partner's signed reproduction of a run. Never changes the run's evidence level."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import strawberry
from strawberry.scalars import JSON

from resolvers import ids
from resolvers.context import Info
from resolvers.cost_limit import MANIFEST_KIB, SMALL_JSON_KIB, weighs
from resolvers.types.common import Long, format_ns
from resolvers.types.node import Node
from resolvers.types.protocol import manifest_json


@strawberry.type(description="Where a reproduction measured, as its signed result states it.")
class AttestationEnvironment:
    gpu: str
    architecture: str
    driver: str | None
    cuda: str | None
    host: str | None

    @strawberry.field(description='e.g. "NVIDIA H200 (sm_90)"')
    def display(self) -> str:
        return f"{self.gpu} ({self.architecture})"


@strawberry.type(description="The reproduction's suite-level value, and how it compares with the run's own.")
class AttestationAggregate:
    statistic: str
    value_ns: Long
    display: str
    run_value_ns: Long | None = strawberry.field(description="The run's own value of the same statistic; null when it reports none.")
    ratio_to_run: float | None = strawberry.field(
        description="valueNs / runValueNs: above 1, the reproduction measured slower than the run; null without a run value."
    )


def _gpu_key(name: str) -> str:
    """ "NVIDIA H200", "nvidia  h200", "H200" -> "h200": one GPU however a partner spells it."""
    words = name.casefold().split()
    return " ".join(words[1:] if words[:1] == ["nvidia"] else words)


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

    @strawberry.field(description="The GPU and software the reproduction ran on (its signed result's environment).")
    def environment(self) -> AttestationEnvironment | None:
        env = (self.measurement or {}).get("environment")
        if not isinstance(env, dict) or not env.get("gpu"):
            return None
        return AttestationEnvironment(
            gpu=env["gpu"], architecture=env.get("architecture", "?"), driver=env.get("driver"), cuda=env.get("cuda"), host=env.get("host")
        )

    @strawberry.field(description="The reproduction's aggregate (statistic, value) and its ratio to the run's own value.")
    async def aggregate(self, info: Info) -> AttestationAggregate | None:
        agg = (self.measurement or {}).get("aggregate")
        if not isinstance(agg, dict) or not isinstance(agg.get("valueNs"), int):
            return None
        run = await info.context.loaders.runs.load(self.subject_digest)
        run_value = ((run or {}).get("spec", {}).get("timing", {}).get("latencyNs") or {}).get(agg["statistic"])
        ratio = agg["valueNs"] / run_value if isinstance(run_value, int | float) and run_value > 0 else None
        return AttestationAggregate(
            statistic=agg["statistic"],
            value_ns=Long(agg["valueNs"]),
            display=format_ns(agg["valueNs"]),
            run_value_ns=Long(int(run_value)) if ratio is not None else None,
            ratio_to_run=ratio,
        )

    @strawberry.field(
        description="Whether the reproduction measured on the run's cohort: the same GPU (product and architecture) as the run. "
        "False: a measurement elsewhere, not a replication of this run."
    )
    async def matches_cohort(self, info: Info) -> bool:
        env = self.environment()
        run = await info.context.loaders.runs.load(self.subject_digest)
        if env is None or run is None:
            return False
        environment = await info.context.loaders.environments.load(run["spec"]["environmentDigest"])
        hardware = (environment or {}).get("spec", {}).get("hardware", {})
        if not hardware.get("product") or _gpu_key(hardware["product"]) != _gpu_key(env.gpu):
            return False
        return not hardware.get("architecture") or env.architecture.casefold() == hardware["architecture"].casefold()

    @classmethod
    async def resolve_reference(cls, info: Info, id: strawberry.ID) -> Attestation | None:
        doc = await info.context.loaders.attestations.load(ids.decode_as(id, "Attestation"))
        return cls.from_doc(doc) if doc else None
