"""The benchmarks Mutation root: benchmark jobs (request, claim, start, renew a lease, complete, fail).

Every mutation checks the caller's scope first and answers expected failures in `userErrors`
(nothing written); unexpected ones are masked like any other error.
"""

from __future__ import annotations

import strawberry

from loaders.pipeline import publish_verified
from registry.leases import DEFAULT_LEASE_SECONDS, MAX_LEASE_SECONDS
from resolvers import ids
from resolvers.context import Info
from resolvers.types.job import BenchmarkJob, FailureCode
from resolvers.types.run import Run
from resolvers.user_errors import Refusal, UserError, require_scope
from store import jobs
from store.job_specs import JobRequest, JobSpecError, resolve_job_spec
from store.keys import Scope
from store.queries import job_by_idempotency_key
from store.verified_results import JobCompletion, ResultError, check_result, fail_for_status, referenced_objects


async def _accept_result(info: Info, job_id: str, key, envelope: str) -> dict:
    """Verify the signed result and publish its run as KernelIndex Verified with the job's
    completion (one transaction); a run that did not pass fails the job instead."""
    db = info.context.db
    job, result = await check_result(db, job_id=job_id, runner=key, envelope_text=envelope)
    objects = await referenced_objects(db, result.run)
    failed = await fail_for_status(db, job, result)
    if failed is not None:
        return failed
    completion = JobCompletion(db, job, result)
    await publish_verified(db, result, objects, runner_key_id=key.id, also=completion)
    assert completion.job_after is not None  # it ran in the committed transaction
    return completion.job_after


@strawberry.input
class BenchmarkJobRequestInput:
    definition: strawberry.ID
    implementation: str = strawberry.field(
        description='The ImplementationRevision\'s name, e.g. "kernelindex-051-ext-cluster" (registry entry "ext-cluster").'
    )
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
    lease_seconds: int = strawberry.field(
        default=DEFAULT_LEASE_SECONDS, description=f"Seconds the job is held before it returns to the queue (at most {MAX_LEASE_SECONDS})."
    )


@strawberry.input
class BenchmarkJobRenewLeaseInput:
    job: strawberry.ID
    lease_seconds: int = strawberry.field(description="The new lease, counted from now.")


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


# What a mutation here refuses in `userErrors`: its own checks, and the store's expected failures.
EXPECTED = (Refusal, jobs.JobError, JobSpecError, ResultError)


def _user_error(error: Exception) -> UserError:
    if isinstance(error, Refusal):
        return error.error
    # A JobError is about the job named in the input; the others name their own field.
    field = "job" if isinstance(error, jobs.JobError) else error.field
    return UserError(field=field, message=str(error), code=error.code)


def _job_key(global_id: str) -> str:
    return _decode(global_id, "BenchmarkJob", "job")


def _decode(global_id: str, expected: str, field: str) -> str:
    try:
        return ids.decode_as(global_id, expected)
    except ids.BadGlobalId as error:
        raise Refusal("BAD_ID", str(error), field) from None


def _job_request(data: BenchmarkJobRequestInput) -> JobRequest:
    """The request with every global ID decoded (BAD_ID names the input field)."""
    return JobRequest(
        definition_digest=_decode(data.definition, "Definition", "definition"),
        implementation=data.implementation,
        gpu=data.gpu,
        implementation_digest=data.implementation_digest,
        workload_digest=_decode(data.workload, "Workload", "workload") if data.workload else None,
        protocol_digest=_decode(data.protocol, "Protocol", "protocol") if data.protocol else None,
        cases=data.cases,
    )


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
            existing = await job_by_idempotency_key(info.context.db, key.id, input.idempotency_key)
            if existing:
                return BenchmarkJobPayload(job=BenchmarkJob.from_doc(existing), created=False)
            spec = await resolve_job_spec(info.context.db, _job_request(input))
            job, created = await jobs.request_job(info.context.db, requested_by=key.id, idempotency_key=input.idempotency_key, spec=spec)
            return BenchmarkJobPayload(job=BenchmarkJob.from_doc(job), created=created)
        except EXPECTED as error:
            return BenchmarkJobPayload(user_errors=[_user_error(error)])

    @strawberry.mutation(description="Take the oldest queued job for this GPU, with a lease (runner key).")
    async def benchmark_job_claim(self, info: Info, input: BenchmarkJobClaimInput) -> BenchmarkJobPayload:
        try:
            key = require_scope(info, Scope.runner)
            if not 1 <= input.lease_seconds <= MAX_LEASE_SECONDS:
                raise Refusal("BAD_USER_INPUT", f"leaseSeconds must be 1..{MAX_LEASE_SECONDS}", "leaseSeconds")
            job = await jobs.claim(info.context.db, runner=key.id, gpu=input.gpu, lease_seconds=input.lease_seconds)
            return BenchmarkJobPayload(job=BenchmarkJob.from_doc(job) if job else None)
        except EXPECTED as error:
            return BenchmarkJobPayload(user_errors=[_user_error(error)])

    @strawberry.mutation(description="Say that a claimed job is now running (runner key).")
    async def benchmark_job_start(self, info: Info, input: BenchmarkJobRef) -> BenchmarkJobPayload:
        try:
            key = require_scope(info, Scope.runner)
            job = await jobs.held_job(info.context.db, _job_key(input.job), key.id)
            if job["state"] == jobs.JobState.claimed.value:
                job = await jobs.transition(info.context.db, job, jobs.JobState.running)
            return BenchmarkJobPayload(job=BenchmarkJob.from_doc(job))
        except EXPECTED as error:
            return BenchmarkJobPayload(user_errors=[_user_error(error)])

    @strawberry.mutation(
        description="Extend the lease on a held job, counted from now (runner key): a runner renews it while a long job runs."
    )
    async def benchmark_job_renew_lease(self, info: Info, input: BenchmarkJobRenewLeaseInput) -> BenchmarkJobPayload:
        try:
            key = require_scope(info, Scope.runner)
            if not 1 <= input.lease_seconds <= MAX_LEASE_SECONDS:
                raise Refusal("BAD_USER_INPUT", f"leaseSeconds must be 1..{MAX_LEASE_SECONDS}", "leaseSeconds")
            job = await jobs.held_job(info.context.db, _job_key(input.job), key.id)
            return BenchmarkJobPayload(job=BenchmarkJob.from_doc(await jobs.renew_lease(info.context.db, job, input.lease_seconds)))
        except EXPECTED as error:
            return BenchmarkJobPayload(user_errors=[_user_error(error)])

    @strawberry.mutation(description="Post a signed result; the gateway verifies it and publishes the run (runner key).")
    async def benchmark_job_complete(self, info: Info, input: BenchmarkJobCompleteInput) -> BenchmarkJobCompletePayload:
        try:
            key = require_scope(info, Scope.runner)
            job = await _accept_result(info, _job_key(input.job), key, input.envelope)
        except EXPECTED as error:
            return BenchmarkJobCompletePayload(user_errors=[_user_error(error)])
        run_doc = await info.context.loaders.runs.load(job["runDigest"]) if job.get("runDigest") else None
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
        except EXPECTED as error:
            return BenchmarkJobPayload(user_errors=[_user_error(error)])
