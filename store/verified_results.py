"""Accepting a runner's signed result for a job, and publishing it as a verified run.

Checked in this order, each failure a coded error and nothing written: the runner holds the job;
the envelope's size; its shape; the ed25519 signature against the key registered to this runner;
the in-toto statement; the manifests; the subject digest; every digest the job expects.
"""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from registry.digest import manifest_digest
from registry.dsse import (
    BENCHMARK_RUN_PREDICATE,
    SignatureError,
    load_public_key,
    parse_envelope_text,
    parse_statement,
    verify_envelope,
)
from registry.manifests import Manifest, ManifestError, RunStatus, parse_manifest
from store import jobs
from store.bundle import RUN_REFERENCES, Bundle
from store.keys import ApiKey
from store.publish import AlsoWrite, publish
from store.schema import COLLECTION_BY_KIND


class ResultError(Exception):
    def __init__(self, code: str, message: str, field: str = "envelope"):
        super().__init__(message)
        self.code = code
        self.field = field


async def _stored(db: AsyncDatabase, kind: str, digest: str) -> Manifest | None:
    doc = await db[COLLECTION_BY_KIND[kind]].find_one({"_id": digest})
    return parse_manifest({k: doc[k] for k in ("apiVersion", "kind", "metadata", "spec")}) if doc else None


def verified_statement(envelope_text: str, runner: ApiKey) -> tuple[dict[str, Any], Any, str]:
    """(envelope, statement, signer keyid) once the signature verifies against the runner's key."""
    envelope = parse_envelope_text(envelope_text)
    if not runner.public_key_pem:
        raise SignatureError("UNKNOWN_SIGNER", "this runner key has no registered signing key")
    key = load_public_key(runner.public_key_pem)
    payload, signer = verify_envelope(envelope, {runner.signing_keyid: key})
    return envelope, parse_statement(payload, BENCHMARK_RUN_PREDICATE), signer


def _manifests(statement) -> tuple[Manifest, Manifest]:
    items = statement.predicate.get("manifests")
    if not isinstance(items, list):
        raise ResultError("INVALID_PREDICATE", "predicate.manifests must be a list of manifests")
    try:
        parsed = [parse_manifest(item) for item in items]
    except ManifestError as error:
        raise ResultError("INVALID_MANIFEST", f"predicate.manifests: {error}") from None
    runs = [m for m in parsed if m.kind == "BenchmarkRun"]
    environments = [m for m in parsed if m.kind == "ExecutionEnvironment"]
    if len(runs) != 1 or len(environments) != 1:
        raise ResultError("INVALID_PREDICATE", "predicate.manifests must hold one BenchmarkRun and one ExecutionEnvironment")
    return runs[0], environments[0]


async def accept_result(db: AsyncDatabase, *, job_id: str, runner: ApiKey, envelope_text: str) -> dict[str, Any]:
    """Verify and publish; returns the updated job. ResultError / JobError on refusal."""
    job = await jobs.held_job(db, job_id, runner.id)
    try:
        envelope, statement, signer = verified_statement(envelope_text, runner)
    except SignatureError as error:
        raise ResultError(error.code, str(error)) from None
    run, environment = _manifests(statement)
    digest = manifest_digest(run)
    if statement.subject_digest != digest:
        raise ResultError("SUBJECT_MISMATCH", "the statement's subject is not the digest of the run it carries")
    if statement.predicate.get("job") != job_id:
        raise ResultError("DIGEST_MISMATCH", "the statement names another job")
    expected = job["expected"]
    if run.spec.environmentDigest != manifest_digest(environment):
        raise ResultError("DIGEST_MISMATCH", "the run does not reference the environment it carries")
    if environment.spec.hardware.product != job["gpu"]:
        raise ResultError(
            "DIGEST_MISMATCH", f"the result was measured on {environment.spec.hardware.product}, the job asked for {job['gpu']}"
        )
    for role, (field, _kind) in RUN_REFERENCES.items():
        if role == "environment":
            continue
        if getattr(run.spec, field) != expected[field]:
            raise ResultError("DIGEST_MISMATCH", f"the run's {field} is not the one the job expects ({expected[field]})")
    bundle = await _bundle(db, run, environment, signer)
    if run.spec.status is not RunStatus.passed:
        failed = await jobs.transition(
            db,
            job,
            jobs.JobState.failed,
            failure={"code": jobs.FailureCode.incorrect_numerical.value, "message": f"the run's status is {run.spec.status.value}"},
            resultEnvelope=envelope,
        )
        return failed
    verification = {"jobId": job_id, "runnerKeyId": runner.id, "signer": signer, "envelope": envelope}
    succeeded: dict[str, Any] | None = None

    async def complete_job(session: AsyncClientSession) -> None:
        # With the run, or not at all: a run is never Verified while its job still looks unfinished,
        # and a runner that lost its lease meanwhile publishes nothing.
        nonlocal succeeded
        succeeded = await jobs.transition(db, job, jobs.JobState.succeeded, session=session, runDigest=digest, resultEnvelope=envelope)

    await _publish_verified(db, bundle, digest, verification, also=complete_job)
    assert succeeded is not None  # complete_job ran in the committed transaction
    return succeeded


async def _bundle(db: AsyncDatabase, run: Manifest, environment: Manifest, signer: str) -> Bundle:
    references = {
        role: await _stored(db, kind, getattr(run.spec, field)) for role, (field, kind) in RUN_REFERENCES.items() if role != "environment"
    }
    if any(ref is None for ref in references.values()):
        raise ResultError("DIGEST_MISMATCH", "an object the run references is not in the registry")
    definition = await _stored(db, "OperationSpec", references["workload"].spec.definitionDigest)
    if definition is None:
        raise ResultError("DIGEST_MISMATCH", "the run's definition is not in the registry")
    return Bundle(run=run, definition=definition, environment=environment, verified_by=signer, **references)


async def _publish_verified(
    db: AsyncDatabase, bundle: Bundle, digest: str, verification: dict[str, Any], also: AlsoWrite | None = None
) -> str:
    """Publish `bundle` (its run's `digest`, checked by the caller) with its verification record,
    and `also`, in one transaction."""

    async def verify(session: AsyncClientSession) -> None:
        await db.runs.update_one(
            {"_id": digest, "verification": {"$exists": False}}, {"$set": {"verification": verification}}, session=session
        )
        if also is not None:
            await also(session)

    await publish(db, bundle, also=verify)
    return digest


async def publish_signed_record(db: AsyncDatabase, envelope: dict[str, Any], approved: dict[str, Any]) -> str:
    """Publish a runner's signed result kept as a file (e.g. from an offline H200 run), verified
    against the approved runner keys {keyid: public key}. Idempotent."""
    try:
        payload, signer = verify_envelope(envelope, approved)
        statement = parse_statement(payload, BENCHMARK_RUN_PREDICATE)
    except SignatureError as error:
        raise ResultError(error.code, str(error)) from None
    run, environment = _manifests(statement)
    digest = manifest_digest(run)
    if statement.subject_digest != digest:
        raise ResultError("SUBJECT_MISMATCH", "the statement's subject is not the digest of the run it carries")
    if run.spec.environmentDigest != manifest_digest(environment):
        raise ResultError("DIGEST_MISMATCH", "the run does not reference the environment it carries")
    if run.spec.status is not RunStatus.passed:
        raise ResultError("NOT_PASSED", f"the run's status is {run.spec.status.value}")
    bundle = await _bundle(db, run, environment, signer)
    return await _publish_verified(db, bundle, digest, {"jobId": statement.predicate.get("job"), "signer": signer, "envelope": envelope})
