"""Typed read models of the store's own (non-manifest) documents: what the store hands out.

Each model is the one place a document's shape is read: the store's read paths (the DataLoaders'
batched finds in store/lookups.py, pages, the event stream's documents) return these models, and
the GraphQL types read attributes. A document is written by its store module (store/groups.py,
store/notes.py); its model ignores fields it does not name, so a writer may add one first.

`read(collection, doc)` gives the model of a collection's document, or the document itself for
collections without one yet (manifest collections: the manifest models are being moved to the
v1alpha1 format; runs; jobs, attestations, events, keys: still dicts).
"""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from registry.ranking import RankRule


class ReadModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class GroupGpu(ReadModel):
    product: str
    architecture: str


class ComparisonGroupDocument(ReadModel):
    """`comparison_groups`: one group's identity, rank rule, size and #1 (store/groups.py)."""

    key: str = Field(alias="_id")
    definition_digest: str = Field(alias="definitionDigest")
    workload_digest: str = Field(alias="workloadDigest")
    protocol_digest: str | None = Field(None, alias="protocolDigest")
    environment_digest: str | None = Field(None, alias="environmentDigest")
    family: str
    family_version: str = Field(alias="familyVersion")
    gpu: GroupGpu
    rank_rule: RankRule = Field(alias="rankRule")
    title: str = ""
    size: int = 0
    ranked_size: int = Field(0, alias="rankedSize")
    leader_digest: str | None = Field(None, alias="leaderDigest")
    created_at: datetime | None = Field(None, alias="createdAt")
    # Its leaderboard's head (store/leaderboards.py): catalogRuns and the #1's row; None until built.
    leaderboard: dict[str, Any] | None = None


class NoteAuthor(ReadModel):
    name: str
    key_id: str = Field(alias="keyId")
    scope: str


class NoteDocument(ReadModel):
    """`notes`: an unsigned remark on a run (store/notes.py)."""

    id: str = Field(alias="_id")
    run_digest: str = Field(alias="runDigest")
    text: str
    author: NoteAuthor
    created_at: datetime = Field(alias="createdAt")
    seq: int


READ_MODELS: dict[str, type[ReadModel]] = {
    "comparison_groups": ComparisonGroupDocument,
    "notes": NoteDocument,
}


def read(collection: str, doc: dict[str, Any] | None) -> Any:
    """The read model of `collection`'s document (None stays None; a collection without a model
    gives the document as stored)."""
    model = READ_MODELS.get(collection)
    if doc is None or model is None:
        return doc
    return model.model_validate(doc)


# ---------------------------------------------------------------- serving evidence
# The KernelIndex catalog's serving objects (store/catalog.py writes them: the manifest exactly as
# exported, `_id` = its digest, and its `provenance`). Field names are the v1alpha1 schemas'
# (registry/schemas/serving-*.v1alpha1.schema.json, model-revision...); `spec` is also kept whole,
# as the manifest a client may ask for.


class ExportReference(ReadModel):
    file: str
    sha256: str


class ProvenanceRecord(ReadModel):
    """One entry of a catalog document's `provenance` (loaders/kernelindex_catalog/publish.py)."""

    export: ExportReference
    sources: list[str] = []
    row_id: str | None = Field(None, alias="rowId")


class ManifestDocument(ReadModel):
    """A stored v1alpha1 manifest of a serving kind: identity, editorial metadata, provenance."""

    digest: str = Field(alias="_id")
    api_version: str = Field(alias="apiVersion")
    kind: str
    metadata: dict[str, Any]  # as exported: name, title, sourceRefs, ...
    spec: dict[str, Any]
    provenance: list[ProvenanceRecord] = []

    @property
    def name(self) -> str:
        return self.metadata["name"]

    @property
    def title(self) -> str | None:
        return self.metadata.get("title")

    @property
    def source_urls(self) -> list[str]:
        return [ref["url"] for ref in self.metadata.get("sourceRefs") or () if ref.get("url")]

    def manifest(self) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": self.metadata, "spec": self.spec}


class ServingMeasurement(ReadModel):
    metric: str
    unit: str
    statistic: str
    value: float
    sample_count: int | None = Field(None, alias="sampleCount")


class ServingTopology(ReadModel):
    accelerator_vendor: str | None = Field(None, alias="acceleratorVendor")
    accelerator_model: str = Field(alias="acceleratorModel")
    accelerators_per_node: int = Field(alias="acceleratorsPerNode")
    node_count: int = Field(alias="nodeCount")
    interconnect: str | None = None


class ServingHarness(ReadModel):
    name: str
    version: str


class ServingRunSpec(ReadModel):
    """ServingRun `spec` (serving-run.v1alpha1.schema.json): the fields a listing reads."""

    model_digest: str = Field(alias="modelDigest")
    configuration_digest: str = Field(alias="configurationDigest")
    workload_digest: str = Field(alias="workloadDigest")
    topology: ServingTopology
    harness: ServingHarness
    quality_policy: str = Field(alias="qualityPolicy")
    status: str
    measurements: list[ServingMeasurement]
    observed_at: str = Field(alias="observedAt")
    placement: str | None = None
    caveats: list[str] = []
    source_native: dict[str, Any] | None = Field(None, alias="sourceNative")


class ServingRunDocument(ManifestDocument):
    """`serving_runs`: one ServingRun manifest (spec typed as `run`)."""

    @cached_property
    def run(self) -> ServingRunSpec:
        return ServingRunSpec.model_validate(self.spec)


READ_MODELS.update(
    {
        "serving_runs": ServingRunDocument,
        "model_revisions": ManifestDocument,
        "serving_configurations": ManifestDocument,
        "serving_stack_revisions": ManifestDocument,
        "serving_workloads": ManifestDocument,
    }
)
