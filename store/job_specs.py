"""What a benchmark job request resolves to: the definition, the implementation revision with
pinned code, the workload (optionally a subset of its cases) and the controlled protocol, each
pinned by digest, so that a runner executes exactly what was asked."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from registry import architectures
from registry.format import format_digest, parse_format_manifest
from store.publish import insert_ignoring_duplicates
from store.workload_subsets import subset_suite

Doc = dict[str, Any]
# Our harness's protocols: on a GPU, and the CPU smoke-test mode (never ranked with the former).
CONTROLLED_FAMILIES = ("kernelindex_controlled", "kernelindex_controlled_cpu")
OUR_PROJECT = "kernelindex"  # the `project` label of our harness's ImplementationRevisions


class JobSpecError(Exception):
    """A request that names something missing or unusable; `field` names the input field."""

    def __init__(self, code: str, message: str, field: str):
        super().__init__(message)
        self.code = code
        self.field = field


@dataclass(frozen=True)
class JobRequest:
    definition_digest: str
    implementation: str  # the ImplementationRevision's name
    gpu: str
    implementation_digest: str | None = None
    workload_digest: str | None = None
    protocol_digest: str | None = None
    cases: list[int] | None = None


def _manifest(doc: Doc) -> Doc:
    return {k: doc[k] for k in ("apiVersion", "kind", "metadata", "spec")}


def protocol_device(protocol: Doc) -> str:
    """Which kind of device a controlled protocol measures: its label, else its timer."""
    label = protocol["metadata"].get("labels", {}).get("device")
    if label:
        return label
    return "cpu" if protocol["spec"]["measurement"]["timer"].startswith("wall_clock") else "cuda"


async def resolve_job_spec(db: AsyncDatabase, request: JobRequest) -> Doc:
    """The job's spec (what store.jobs.request_job stores); JobSpecError when a part is missing.
    A subset of a workload's cases is stored as its own workload manifest (idempotent). The
    objects are the v1alpha1 format's (our harness's, registry/controlled_format.py)."""
    definition_digest = request.definition_digest
    if await db.definitions.find_one({"_id": definition_digest}, {"_id": 1}) is None:
        raise JobSpecError("NOT_FOUND", "no such definition", "definition")

    impl_query: Doc = {
        "spec.operation.specDigest": definition_digest,
        "metadata.name": request.implementation,
        "metadata.labels.project": OUR_PROJECT,
        "spec.source.contentDigest": {"$exists": True},
    }
    if request.implementation_digest:
        impl_query["_id"] = request.implementation_digest
    implementation = await db.implementations.find_one(impl_query, {"_id": 1, "spec": 1}, sort=[("storedAt", -1)])
    if implementation is None:
        raise JobSpecError(
            "UNKNOWN_IMPLEMENTATION",
            f"no controlled implementation named {request.implementation!r} (with pinned code) is registered for this definition",
            "implementation",
        )
    supported = architectures.declared(implementation["spec"])
    if not architectures.supports(supported, request.gpu):
        raise JobSpecError("UNSUPPORTED_GPU", architectures.refusal(request.implementation, supported, request.gpu), "gpu")

    if request.workload_digest:
        workload = await db.workloads.find_one({"_id": request.workload_digest, "spec.operationSpecDigest": definition_digest})
    else:
        suites = await db.workloads.find({"spec.operationSpecDigest": definition_digest, "kind": "WorkloadSuite"}).to_list()
        workload = max(suites, key=lambda s: (len(s["spec"]["cases"]), s["_id"]), default=None)
    if workload is None or workload["kind"] != "WorkloadSuite":
        raise JobSpecError("NOT_FOUND", "no such workload suite for this definition", "workload")
    suite = parse_format_manifest(_manifest(workload))
    if request.cases is not None:
        count = len(workload["spec"]["cases"])
        bad = [c for c in request.cases if not 0 <= c < count]
        if bad or not request.cases:
            raise JobSpecError("BAD_USER_INPUT", f"cases must be indexes 0..{count - 1} of the workload", "cases")
        suite = subset_suite(suite, request.cases)

    if request.protocol_digest:
        protocol = await db.protocols.find_one({"_id": request.protocol_digest})
    else:
        device = "cuda" if request.gpu.startswith("NVIDIA") else "cpu"
        candidates = (
            await db.protocols.find({"spec.comparability.family": {"$in": list(CONTROLLED_FAMILIES)}}).sort("storedAt", -1).to_list()
        )
        protocol = next((p for p in candidates if protocol_device(p) == device), None)
    if protocol is None or protocol["spec"]["comparability"]["family"] not in CONTROLLED_FAMILIES:
        raise JobSpecError("NOT_FOUND", "no controlled (kernelindex_controlled) protocol found; name one", "protocol")

    suite_digest = format_digest(suite)
    if suite_digest != workload["_id"]:
        document = {"_id": suite_digest, **suite.to_json(), "storedAt": datetime.now(UTC), "definitionDigest": definition_digest}
        await insert_ignoring_duplicates(db.workloads, [document])
    return {
        "definitionDigest": definition_digest,
        "implementationName": request.implementation,
        "gpu": request.gpu,
        "cases": sorted(set(request.cases)) if request.cases is not None else None,
        "expected": {
            "implementationDigest": implementation["_id"],
            "workloadDigest": suite_digest,
            "protocolDigest": protocol["_id"],
        },
    }
