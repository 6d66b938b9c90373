"""Serving evidence: a ServingRun (MLPerf Inference results, from the KernelIndex catalog) with the
model, configuration, serving stack and workload it names. Listed, never ranked: no rank, group
or #1 here, and serving runs are never mixed into kernel comparison groups.

Fields are the v1alpha1 schemas' (registry/schemas/serving-*.v1alpha1.schema.json,
model-revision.v1alpha1.schema.json); the manifests are as stored, with their digests.
"""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.scalars import JSON

from resolvers import ids
from resolvers.context import Info
from resolvers.cost_limit import SMALL_JSON_KIB, weighs
from resolvers.types.common import Label, labels_of
from resolvers.types.connection import Connection
from resolvers.types.node import Node
from resolvers.types.run import Provenance, provenance_of
from store.read_models import ManifestDocument, ServingRunDocument


@strawberry.type(description="A manifest this record consists of: its kind, digest and name.")
class ManifestDigest:
    kind: str
    digest: str
    name: str


def _digest_of(doc: ManifestDocument) -> ManifestDigest:
    return ManifestDigest(kind=doc.kind, digest=doc.digest, name=doc.name)


@strawberry.type(description="A model revision (ModelRevision manifest).")
class ModelRevision:
    digest: str
    name: str
    title: str | None
    model: str = strawberry.field(description='spec.model, e.g. "Llama-2-70B (MLPerf reference)".')
    parameter_count: int | None
    context_length: int | None
    license: str | None
    manifest: JSON = strawberry.field(directives=weighs(SMALL_JSON_KIB))

    @classmethod
    def from_doc(cls, doc: ManifestDocument) -> ModelRevision:
        spec = doc.spec
        return cls(
            digest=doc.digest,
            name=doc.name,
            title=doc.title,
            model=spec["model"],
            parameter_count=spec.get("parameterCount"),
            context_length=spec.get("contextLength"),
            license=spec.get("license"),
            manifest=doc.manifest(),
        )


@strawberry.type(description="A serving stack at one revision (ServingStackRevision manifest).")
class ServingStackRevision:
    digest: str
    name: str
    project: str = strawberry.field(description='spec.project.name; MLPerf\'s submitter, e.g. "AMD (MLPerf submitter)".')
    version: str | None = strawberry.field(description="spec.revision.version: the software as the submitter states it.")
    api_protocol: str | None
    manifest: JSON = strawberry.field(directives=weighs(SMALL_JSON_KIB))

    @classmethod
    def from_doc(cls, doc: ManifestDocument) -> ServingStackRevision:
        spec = doc.spec
        return cls(
            digest=doc.digest,
            name=doc.name,
            project=spec["project"]["name"],
            version=(spec.get("revision") or {}).get("version"),
            api_protocol=spec.get("apiProtocol"),
            manifest=doc.manifest(),
        )


@strawberry.type(description="How a model was served (ServingConfiguration manifest).")
class ServingConfiguration:
    digest: str
    name: str
    dtype: str | None
    quantization: str | None
    system: str | None = strawberry.field(description='spec.options.system: the system under test, e.g. "Supermicro AS-8125GS-TNMR2".')
    options: list[Label] = strawberry.field(description="spec.options (system, software, availability, ...).")
    stack_digest: str | None
    manifest: JSON = strawberry.field(directives=weighs(SMALL_JSON_KIB))

    @strawberry.field(description="The serving stack it names (spec.stackDigest).")
    async def stack(self, info: Info) -> ServingStackRevision | None:
        if self.stack_digest is None:
            return None
        doc = await info.context.loaders.serving_stack_revisions.load(self.stack_digest)
        return ServingStackRevision.from_doc(doc) if doc else None

    @classmethod
    def from_doc(cls, doc: ManifestDocument) -> ServingConfiguration:
        spec = doc.spec
        options = spec.get("options") or {}
        return cls(
            digest=doc.digest,
            name=doc.name,
            dtype=spec.get("dtype"),
            quantization=spec.get("quantization"),
            system=options.get("system"),
            options=labels_of(options),
            stack_digest=spec.get("stackDigest"),
            manifest=doc.manifest(),
        )


@strawberry.type(description="A service-level objective of a serving workload (spec.slo[]).")
class ServingObjective:
    metric: str
    statistic: str
    operator: str
    value: float
    unit: str

    @strawberry.field(description='e.g. "p99 ttft_ms <= 450 ms"')
    def display(self) -> str:
        return f"{self.statistic} {self.metric} {self.operator} {self.value:g} {self.unit}"


@strawberry.type(description="The load a serving run was measured under (ServingWorkload manifest).")
class ServingWorkload:
    digest: str
    name: str
    title: str | None
    dataset: str | None = strawberry.field(description="spec.dataset.name")
    streaming: bool | None
    load_generation: str | None
    arrival: str | None
    slo: list[ServingObjective]
    manifest: JSON = strawberry.field(directives=weighs(SMALL_JSON_KIB))

    @classmethod
    def from_doc(cls, doc: ManifestDocument) -> ServingWorkload:
        spec = doc.spec
        return cls(
            digest=doc.digest,
            name=doc.name,
            title=doc.title,
            dataset=(spec.get("dataset") or {}).get("name"),
            streaming=spec.get("streaming"),
            load_generation=spec.get("loadGeneration"),
            arrival=spec.get("arrival"),
            slo=[
                ServingObjective(**{k: o[k] for k in ("metric", "statistic", "operator", "value", "unit")}) for o in spec.get("slo") or ()
            ],
            manifest=doc.manifest(),
        )


@strawberry.type(description="One measurement of a serving run, as reported (spec.measurements[]).")
class ServingMeasurement:
    metric: str
    statistic: str
    unit: str
    value: float
    sample_count: int | None

    @strawberry.field(description='e.g. "8,840.42 tokens_s (reported)"')
    def display(self) -> str:
        return f"{self.value:,.2f} {self.unit} ({self.statistic})"


@strawberry.type
class ServingTopology:
    accelerator_vendor: str | None
    accelerator_model: str
    accelerators_per_node: int
    node_count: int
    interconnect: str | None

    @strawberry.field(description="acceleratorsPerNode × nodeCount")
    def total_accelerators(self) -> int:
        return self.accelerators_per_node * self.node_count


@strawberry.type
class ServingHarness:
    name: str
    version: str


@strawberry.federation.type(
    keys=["id"],
    description="A serving run (ServingRun manifest): one measured serving result, e.g. an MLPerf Inference entry. "
    "Listed with its manifests' digests, measurements and provenance; never ranked.",
)
class ServingRun(Node):
    id: strawberry.ID
    digest: str
    name: str
    title: str | None
    status: str
    observed_at: str = strawberry.field(description="spec.observedAt, as the manifest states it (RFC 3339).")
    harness: ServingHarness
    round: str = strawberry.field(description='spec.harness.version: the MLPerf round, e.g. "v5.1".')
    quality_policy: str
    scenario: str | None = strawberry.field(description="spec.sourceNative.scenario (MLPerf: offline, server, interactive).")
    benchmark: str | None = strawberry.field(description='spec.sourceNative.benchmark, e.g. "llama2-70b-99".')
    division: str | None
    category: str | None
    source: str | None = strawberry.field(description="spec.sourceNative.source, e.g. mlperf-inference.")
    external_id: str | None = strawberry.field(description='spec.sourceNative.externalId, e.g. "v5.1/5.1-0001" (round/entry).')
    topology: ServingTopology
    measurements: list[ServingMeasurement]
    caveats: list[str]
    source_urls: list[str] = strawberry.field(description="metadata.sourceRefs: where the source publishes this result.")
    source_native: JSON | None = strawberry.field(directives=weighs(SMALL_JSON_KIB))
    manifest: JSON = strawberry.field(directives=weighs(SMALL_JSON_KIB))
    model_digest: str
    configuration_digest: str
    workload_digest: str
    provenance_records: strawberry.Private[dict[str, Any]]

    @classmethod
    def from_doc(cls, doc: ServingRunDocument) -> ServingRun:
        run = doc.run
        native = run.source_native or {}
        topology = run.topology
        return cls(
            id=strawberry.ID(ids.encode("ServingRun", doc.digest)),
            digest=doc.digest,
            name=doc.name,
            title=doc.title,
            status=run.status,
            observed_at=run.observed_at,
            harness=ServingHarness(name=run.harness.name, version=run.harness.version),
            round=run.harness.version,
            quality_policy=run.quality_policy,
            scenario=native.get("scenario"),
            benchmark=native.get("benchmark"),
            division=native.get("division"),
            category=native.get("category"),
            source=native.get("source"),
            external_id=native.get("externalId"),
            topology=ServingTopology(
                accelerator_vendor=topology.accelerator_vendor,
                accelerator_model=topology.accelerator_model,
                accelerators_per_node=topology.accelerators_per_node,
                node_count=topology.node_count,
                interconnect=topology.interconnect,
            ),
            measurements=[
                ServingMeasurement(metric=m.metric, statistic=m.statistic, unit=m.unit, value=m.value, sample_count=m.sample_count)
                for m in run.measurements
            ],
            caveats=list(run.caveats),
            source_urls=doc.source_urls,
            source_native=run.source_native,
            manifest=doc.manifest(),
            model_digest=run.model_digest,
            configuration_digest=run.configuration_digest,
            workload_digest=run.workload_digest,
            provenance_records={"provenance": [p.model_dump(by_alias=True) for p in doc.provenance]},
        )

    @classmethod
    async def resolve_reference(cls, info: Info, id: strawberry.ID) -> ServingRun | None:
        doc = await info.context.loaders.serving_runs.load(ids.decode_as(id, "ServingRun"))
        return cls.from_doc(doc) if doc else None

    @strawberry.field(description="The model revision it served (spec.modelDigest).")
    async def model(self, info: Info) -> ModelRevision | None:
        doc = await info.context.loaders.model_revisions.load(self.model_digest)
        return ModelRevision.from_doc(doc) if doc else None

    @strawberry.field(description="How it was served (spec.configurationDigest).")
    async def configuration(self, info: Info) -> ServingConfiguration | None:
        doc = await info.context.loaders.serving_configurations.load(self.configuration_digest)
        return ServingConfiguration.from_doc(doc) if doc else None

    @strawberry.field(description="The load it was measured under (spec.workloadDigest).")
    async def workload(self, info: Info) -> ServingWorkload | None:
        doc = await info.context.loaders.serving_workloads.load(self.workload_digest)
        return ServingWorkload.from_doc(doc) if doc else None

    @strawberry.field(
        description="The digests of every manifest this record consists of: the run, its model, configuration, "
        "serving stack and workload (those the store holds)."
    )
    async def manifests(self, info: Info) -> list[ManifestDigest]:
        loaders = info.context.loaders
        out = [ManifestDigest(kind="ServingRun", digest=self.digest, name=self.name)]
        model = await loaders.model_revisions.load(self.model_digest)
        configuration = await loaders.serving_configurations.load(self.configuration_digest)
        stack_digest = configuration.spec.get("stackDigest") if configuration else None
        stack = await loaders.serving_stack_revisions.load(stack_digest) if stack_digest else None
        workload = await loaders.serving_workloads.load(self.workload_digest)
        return out + [_digest_of(doc) for doc in (model, configuration, stack, workload) if doc is not None]

    @strawberry.field(description="Where it comes from: the export file and its sha256, the original source, its licence and attribution.")
    async def provenance(self, info: Info) -> list[Provenance]:
        return await provenance_of(info, self.provenance_records)


@strawberry.type(description="One value a serving-run filter can take, with how many stored runs have it.")
class ServingFacetValue:
    value: str
    title: str
    count: int


@strawberry.type(description="Every value of each serving-run filter among the stored runs.")
class ServingRunFacets:
    total_count: int
    models: list[ServingFacetValue]
    scenarios: list[ServingFacetValue]
    accelerators: list[ServingFacetValue]
    accelerator_vendors: list[ServingFacetValue]
    systems: list[ServingFacetValue]
    rounds: list[ServingFacetValue]


@strawberry.type(description="A page of serving runs matching a filter, and how many match in all.")
class ServingRunPage(Connection[ServingRun]):
    total_count: int
