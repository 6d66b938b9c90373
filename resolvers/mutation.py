"""The Mutation root: benchmark jobs (request, claim, start, complete, fail).

Every mutation checks the caller's scope first and answers expected failures in `userErrors`
(nothing written); unexpected ones are masked like any other error.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import strawberry

from registry import architectures
from registry.digest import manifest_digest
from registry.manifests import parse_manifest
from resolvers import ids
from resolvers.context import Info
from resolvers.types.job import BenchmarkJob, FailureCode
from resolvers.types.protocol import manifest_json
from resolvers.types.run import Run
from resolvers.user_errors import Refusal, UserError, require_scope
from store import jobs
from store.keys import Scope
from store.publish import insert_ignoring_duplicates, manifest_document
from store.verified_results import ResultError, accept_result
from store.workload_subsets import subset_suite

# Our harness's protocols: on a GPU, and the CPU smoke-test mode (never ranked with the former).
CONTROLLED_FAMILIES = ("kernelindex_controlled", "kernelindex_controlled_cpu")
MAX_LEASE_SECONDS = 24 * 3600


@strawberry.input
class BenchmarkJobRequestInput:
    definition: strawberry.ID
    implementation: str = strawberry.field(description="The ImplementationRevision's name, e.g. \"kernelindex-051-ext-cluster\" (registry entry \"ext-cluster\").")
    gpu: str = strawberry.field(description='GPU product, e.g. "NVIDIA H200"; a CPU model name for the CPU harness mode.')
    idempotency_key: str
    cases: list[int] | None = strawberry.field(default=None, description="Case indexes of the workload; all when omitted.")
    workload: strawberry.ID | None = strawberry.field(default=None, description="Default: the definition's largest suite.")
    protocol: strawberry.ID | None = strawberry.field(default=None, description="Default: the controlled protocol for the device.")
    implementation_digest: str | None = strawberry.field(default=None, description="Pin one revision; default: the newest.")


@strawberry.type
class BenchmarkJobPayload:
    job: BenchmarkJob | None = None
    created: bool = False
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class BenchmarkJobClaimInput:
    gpu: str
    lease_seconds: int = 900


@strawberry.input
class BenchmarkJobRef:
    job: strawberry.ID


@strawberry.input
class BenchmarkJobCompleteInput:
    job: strawberry.ID
    envelope: str = strawberry.field(description="The DSSE envelope (JSON text) with the signed in-toto statement.")


@strawberry.type
class BenchmarkJobCompletePayload:
    job: BenchmarkJob | None = None
    run: Run | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class BenchmarkJobFailInput:
    job: strawberry.ID
    code: FailureCode
    message: str


def _job_key(global_id: str) -> str:
    try:
        return ids.decode_as(global_id, "BenchmarkJob")
    except ids.BadGlobalId as error:
        raise Refusal("BAD_ID", str(error), "job") from None


async def _resolve_job_spec(info: Info, data: BenchmarkJobRequestInput) -> dict[str, Any]:
    db = info.context.db
    try:
        definition_digest = ids.decode_as(data.definition, "Definition")
    except ids.BadGlobalId as error:
        raise Refusal("BAD_ID", str(error), "definition") from None
    definition = await db.definitions.find_one({"_id": definition_digest})
    if definition is None:
        raise Refusal("NOT_FOUND", "no such definition", "definition")

    impl_query: dict[str, Any] = {"spec.definitionDigest": definition_digest, "spec.name": data.implementation, "spec.code.digest": {"$exists": True}}
    if data.implementation_digest:
        impl_query["_id"] = data.implementation_digest
    implementation = await db.implementations.find_one(impl_query, sort=[("storedAt", -1)])
    if implementation is None:
        raise Refusal(
            "UNKNOWN_IMPLEMENTATION",
            f"no controlled implementation named {data.implementation!r} (with pinned code) is registered for this definition",
            "implementation",
        )
    supported = architectures.declared(implementation["spec"])
    if not architectures.supports(supported, data.gpu):
        raise Refusal("UNSUPPORTED_GPU", architectures.refusal(data.implementation, supported, data.gpu), "gpu")

    if data.workload:
        try:
            workload_digest = ids.decode_as(data.workload, "Workload")
        except ids.BadGlobalId as error:
            raise Refusal("BAD_ID", str(error), "workload") from None
        workload = await db.workloads.find_one({"_id": workload_digest, "spec.definitionDigest": definition_digest})
    else:
        suites = await db.workloads.find({"spec.definitionDigest": definition_digest}).to_list()
        workload = max(suites, key=lambda s: (len(s["spec"]["cases"]), s["_id"]), default=None)
    if workload is None:
        raise Refusal("NOT_FOUND", "no such workload for this definition", "workload")
    suite = parse_manifest(manifest_json(workload))
    if data.cases is not None:
        bad = [c for c in data.cases if not 0 <= c < len(suite.spec.cases)]
        if bad or not data.cases:
            raise Refusal("BAD_USER_INPUT", f"cases must be indexes 0..{len(suite.spec.cases) - 1} of the workload", "cases")
        suite = subset_suite(suite, data.cases)

    if data.protocol:
        try:
            protocol = await db.protocols.find_one({"_id": ids.decode_as(data.protocol, "Protocol")})
        except ids.BadGlobalId as error:
            raise Refusal("BAD_ID", str(error), "protocol") from None
    else:
        device = "cuda" if data.gpu.startswith("NVIDIA") else "cpu"
        candidates = await db.protocols.find({"spec.comparability.family": {"$in": list(CONTROLLED_FAMILIES)}}).sort("storedAt", -1).to_list()
        matching = [p for p in candidates if _protocol_device(p) == device]
        protocol = matching[0] if matching else None
    if protocol is None or protocol["spec"]["comparability"]["family"] not in CONTROLLED_FAMILIES:
        raise Refusal("NOT_FOUND", "no controlled (kernelindex_controlled) protocol found; name one", "protocol")

    suite_digest = manifest_digest(suite)
    if suite_digest != workload["_id"]:
        await insert_ignoring_duplicates(db.workloads, [manifest_document(suite, suite_digest, datetime.now(UTC))])
    return {
        "definitionDigest": definition_digest,
        "implementationName": data.implementation,
        "gpu": data.gpu,
        "cases": sorted(set(data.cases)) if data.cases is not None else None,
        "expected": {
            "implementationDigest": implementation["_id"],
            "workloadDigest": suite_digest,
            "protocolDigest": protocol["_id"],
        },
    }


def _protocol_device(protocol: dict[str, Any]) -> str:
    """Which kind of device a controlled protocol measures: its label, else its timer."""
    label = protocol["metadata"].get("labels", {}).get("device")
    if label:
        return label
    return "cpu" if protocol["spec"]["measurement"]["timer"].startswith("wall_clock") else "cuda"


@strawberry.type
class Mutation:
    @strawberry.mutation(description="Ask for a controlled rerun (maintainer or partner key).")
    async def benchmark_job_request(self, info: Info, input: BenchmarkJobRequestInput) -> BenchmarkJobPayload:
        try:
            key = require_scope(info, Scope.maintainer, Scope.partner)
            if not input.idempotency_key.strip() or len(input.idempotency_key) > 200:
                raise Refusal("BAD_USER_INPUT", "idempotencyKey must be 1 to 200 characters", "idempotencyKey")
            if not input.gpu.strip():
                raise Refusal("BAD_USER_INPUT", "gpu must name a GPU product", "gpu")
            existing = await info.context.db.jobs.find_one({"requestedBy": key.id, "idempotencyKey": input.idempotency_key})
            if existing:
                return BenchmarkJobPayload(job=BenchmarkJob.from_doc(existing), created=False)
            spec = await _resolve_job_spec(info, input)
            job, created = await jobs.request_job(info.context.db, requested_by=key.id, idempotency_key=input.idempotency_key, spec=spec)
            return BenchmarkJobPayload(job=BenchmarkJob.from_doc(job), created=created)
        except Refusal as refusal:
            return BenchmarkJobPayload(user_errors=[refusal.error])

    @strawberry.mutation(description="Take the oldest queued job for this GPU, with a lease (runner key).")
    async def benchmark_job_claim(self, info: Info, input: BenchmarkJobClaimInput) -> BenchmarkJobPayload:
        try:
            key = require_scope(info, Scope.runner)
            if not 1 <= input.lease_seconds <= MAX_LEASE_SECONDS:
                raise Refusal("BAD_USER_INPUT", f"leaseSeconds must be 1..{MAX_LEASE_SECONDS}", "leaseSeconds")
            job = await jobs.claim(info.context.db, runner=key.id, gpu=input.gpu, lease_seconds=input.lease_seconds)
            return BenchmarkJobPayload(job=BenchmarkJob.from_doc(job) if job else None)
        except Refusal as refusal:
            return BenchmarkJobPayload(user_errors=[refusal.error])

    @strawberry.mutation(description="Say that a claimed job is now running (runner key).")
    async def benchmark_job_start(self, info: Info, input: BenchmarkJobRef) -> BenchmarkJobPayload:
        try:
            key = require_scope(info, Scope.runner)
            job = await jobs.held_job(info.context.db, _job_key(input.job), key.id)
            if job["state"] == jobs.JobState.claimed.value:
                job = await jobs.transition(info.context.db, job, jobs.JobState.running)
            return BenchmarkJobPayload(job=BenchmarkJob.from_doc(job))
        except Refusal as refusal:
            return BenchmarkJobPayload(user_errors=[refusal.error])
        except jobs.JobError as error:
            return BenchmarkJobPayload(user_errors=[UserError(field="job", message=str(error), code=error.code)])

    @strawberry.mutation(description="Post a signed result; the gateway verifies it and publishes the run (runner key).")
    async def benchmark_job_complete(self, info: Info, input: BenchmarkJobCompleteInput) -> BenchmarkJobCompletePayload:
        try:
            key = require_scope(info, Scope.runner)
            job = await accept_result(info.context.db, job_id=_job_key(input.job), runner=key, envelope_text=input.envelope)
        except Refusal as refusal:
            return BenchmarkJobCompletePayload(user_errors=[refusal.error])
        except jobs.JobError as error:
            return BenchmarkJobCompletePayload(user_errors=[UserError(field="job", message=str(error), code=error.code)])
        except ResultError as error:
            return BenchmarkJobCompletePayload(user_errors=[UserError(field=error.field, message=str(error), code=error.code)])
        run_doc = await info.context.db.runs.find_one({"_id": job["runDigest"]}) if job.get("runDigest") else None
        return BenchmarkJobCompletePayload(job=BenchmarkJob.from_doc(job), run=Run.from_doc(run_doc) if run_doc else None)

    @strawberry.mutation(description="Report that a held job failed (runner key). Runtime errors and timeouts are retried.")
    async def benchmark_job_fail(self, info: Info, input: BenchmarkJobFailInput) -> BenchmarkJobPayload:
        try:
            key = require_scope(info, Scope.runner)
            if len(input.message) > 4000:
                raise Refusal("BAD_USER_INPUT", "message is longer than 4000 characters", "message")
            job = await jobs.held_job(info.context.db, _job_key(input.job), key.id)
            if input.code is jobs.FailureCode.lease_expired:
                raise Refusal("BAD_USER_INPUT", "lease_expired is decided by the registry, not reported", "code")
            job = await jobs.fail_or_retry(info.context.db, job, jobs.FailureCode(input.code.value), input.message)
            return BenchmarkJobPayload(job=BenchmarkJob.from_doc(job))
        except Refusal as refusal:
            return BenchmarkJobPayload(user_errors=[refusal.error])
        except jobs.JobError as error:
            return BenchmarkJobPayload(user_errors=[UserError(field="job", message=str(error), code=error.code)])
