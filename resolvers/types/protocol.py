"""Protocol: how a run was measured and checked, and what it may be compared with."""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.scalars import JSON

from registry.sources import harness_notes
from resolvers import ids
from resolvers.context import Info
from resolvers.cost_limit import MANIFEST_KIB, weighs
from resolvers.types.node import Node
from resolvers.v1alpha1 import harness_version


def _notes(annotated: list[str], spec: dict[str, Any]) -> list[str]:
    """The protocol's own annotations, then ours about its harness version (registry/sources.py)."""
    return annotated + [n for n in harness_notes(spec["harness"]["name"], harness_version(spec)) if n not in annotated]


@strawberry.type
class Harness:
    name: str
    version: str


@strawberry.federation.type(keys=["id"], description="A benchmark protocol (BenchmarkProtocol manifest).")
class Protocol(Node):
    id: strawberry.ID
    digest: str
    name: str
    title: str | None
    harness: Harness
    timer: str
    primary_statistic: str
    warmups: int | None
    samples: int | None
    l2_flush: bool | None
    measurement_notes: str | None
    correctness_reference: str
    comparator: str
    correctness_rounds: int | None
    correctness_policy: str | None = strawberry.field(
        description="The correctness policy as published; null when the source did not publish it."
    )
    comparability_family: str
    comparability_version: str
    comparability_notes: str | None
    notes: list[str]
    manifest: JSON = strawberry.field(directives=weighs(MANIFEST_KIB))

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Protocol:
        spec = doc["spec"]
        measurement, correctness = spec["measurement"], spec["correctness"]
        comparability = spec["comparability"]
        annotations = doc["metadata"].get("annotations", {})
        labels = doc["metadata"].get("labels") or {}
        return cls(
            id=strawberry.ID(ids.encode("Protocol", doc["_id"])),
            digest=doc["_id"],
            name=doc["metadata"]["name"],
            title=doc["metadata"].get("title"),
            harness=Harness(name=spec["harness"]["name"], version=harness_version(spec)),
            timer=measurement["timer"],
            primary_statistic=measurement["primaryStatistic"],
            warmups=measurement.get("warmups", measurement.get("warmupIterations")),
            samples=measurement.get("samples"),
            # Our controlled protocol in the format keeps these as labels (registry/controlled_format.py).
            l2_flush=measurement["l2Flush"] if "l2Flush" in measurement else _label_bool(labels.get("l2_flush")),
            measurement_notes=measurement.get("notes"),
            correctness_reference=correctness["reference"],
            comparator=correctness["comparator"],
            correctness_rounds=correctness.get("rounds") or (int(labels["rounds"]) if labels.get("rounds", "").isdigit() else None),
            correctness_policy=correctness.get("policy"),
            comparability_family=comparability["family"],
            comparability_version=comparability.get("version") or harness_version(spec),
            comparability_notes=comparability.get("notes"),
            notes=_notes([annotations[k] for k in sorted(annotations)], spec),
            manifest=manifest_json(doc),
        )

    @classmethod
    async def resolve_reference(cls, info: Info, id: strawberry.ID) -> Protocol | None:
        doc = await info.context.loaders.protocols.load(ids.decode_as(id, "Protocol"))
        return cls.from_doc(doc) if doc else None


def _label_bool(value: str | None) -> bool | None:
    return None if value is None else value == "true"


def manifest_json(doc: dict[str, Any]) -> dict[str, Any]:
    """The canonical manifest of a stored document (store bookkeeping left out)."""
    return {k: doc[k] for k in ("apiVersion", "kind", "metadata", "spec")}
