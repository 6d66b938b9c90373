"""Accepting a runner's signed result for a job: the checks, and what publishing it must commit.

Checked in this order, each failure a coded error and nothing written: the runner holds the job;
the envelope's size; its shape; the ed25519 signature against the key registered to this runner;
the in-toto statement; the manifests (the KernelIndex v1alpha1 format: a BenchmarkRun and its
ExecutionEnvironment); the subject digest; every digest the job expects. The run is published by
the format's one write path (loaders/pipeline.py `publish_verified`), with the job's completion in
the same transaction.

A result of the older dialect (its run carries `cases`; data/verified before 2026-12-03) is refused
with OLDER_DIALECT: its signature covers a digest no served run has any more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from registry.dsse import (
    BENCHMARK_RUN_PREDICATE,
    SignatureError,
    load_public_key,
    parse_envelope_text,
    parse_statement,
    verify_envelope,
)
from registry.format import FormatError, FormatManifest, format_digest, parse_format_manifest
from store import jobs, leaderboards
from store.keys import ApiKey

# run.spec field → (collection, role) of the objects a verified run names besides its environment
EXPECTED = {
    "implementationDigest": ("implementations", "implementation"),
    "workloadDigest": ("workloads", "workload"),
    "protocolDigest": ("protocols", "protocol"),
}


class ResultError(Exception):
    def __init__(self, code: str, message: str, field: str = "envelope"):
        super().__init__(message)
        self.code = code
        self.field = field


@dataclass(frozen=True)
class SignedResult:
    """A verified statement's run and environment, who signed it, and for which job."""

    run: FormatManifest
    environment: FormatManifest
    signer: str
    envelope: dict[str, Any]
    job_id: str | None

    @property
    def digest(self) -> str:
        return format_digest(self.run)

    def verification(self, runner_key_id: str | None = None) -> dict[str, Any]:
        record = {"jobId": self.job_id, "signer": self.signer, "envelope": self.envelope}
        return record | ({"runnerKeyId": runner_key_id} if runner_key_id else {})


def verified_statement(envelope_text: str, runner: ApiKey) -> tuple[dict[str, Any], Any, str]:
    """(envelope, statement, signer keyid) once the signature verifies against the runner's key."""
    envelope = parse_envelope_text(envelope_text)
    if not runner.public_key_pem:
        raise SignatureError("UNKNOWN_SIGNER", "this runner key has no registered signing key")
    key = load_public_key(runner.public_key_pem)
    payload, signer = verify_envelope(envelope, {runner.signing_keyid: key})
    return envelope, parse_statement(payload, BENCHMARK_RUN_PREDICATE), signer


def _manifests(statement) -> tuple[FormatManifest, FormatManifest]:
    items = statement.predicate.get("manifests")
    if not isinstance(items, list):
        raise ResultError("INVALID_PREDICATE", "predicate.manifests must be a list of manifests")
    if any(isinstance(item, dict) and item.get("kind") == "BenchmarkRun" and "cases" in (item.get("spec") or {}) for item in items):
        raise ResultError("OLDER_DIALECT", "predicate.manifests: the run is of the older dialect (spec.cases); runners sign v1alpha1 runs")
    try:
        parsed = [parse_format_manifest(item) for item in items]
    except FormatError as error:
        raise ResultError("INVALID_MANIFEST", f"predicate.manifests: {error}") from None
    runs = [m for m in parsed if m.kind == "BenchmarkRun"]
    environments = [m for m in parsed if m.kind == "ExecutionEnvironment"]
    if len(runs) != 1 or len(environments) != 1:
        raise ResultError("INVALID_PREDICATE", "predicate.manifests must hold one BenchmarkRun and one ExecutionEnvironment")
    return runs[0], environments[0]


def _checked(statement, envelope: dict[str, Any], signer: str) -> SignedResult:
    run, environment = _manifests(statement)
    if statement.subject_digest != format_digest(run):
        raise ResultError("SUBJECT_MISMATCH", "the statement's subject is not the digest of the run it carries")
    if run.spec.to_json()["environmentDigest"] != format_digest(environment):
        raise ResultError("DIGEST_MISMATCH", "the run does not reference the environment it carries")
    return SignedResult(run=run, environment=environment, signer=signer, envelope=envelope, job_id=statement.predicate.get("job"))


async def check_result(db: AsyncDatabase, *, job_id: str, runner: ApiKey, envelope_text: str) -> tuple[dict[str, Any], SignedResult]:
    """The held job and its verified result; ResultError / JobError on refusal, nothing written."""
    job = await jobs.held_job(db, job_id, runner.id)
    try:
        envelope, statement, signer = verified_statement(envelope_text, runner)
    except SignatureError as error:
        raise ResultError(error.code, str(error)) from None
    result = _checked(statement, envelope, signer)
    if result.job_id != job_id:
        raise ResultError("DIGEST_MISMATCH", "the statement names another job")
    product = result.environment.spec.to_json()["hardware"]["product"]
    if product != job["gpu"]:
        raise ResultError("DIGEST_MISMATCH", f"the result was measured on {product}, the job asked for {job['gpu']}")
    spec = result.run.spec.to_json()
    for field in EXPECTED:
        if spec[field] != job["expected"][field]:
            raise ResultError("DIGEST_MISMATCH", f"the run's {field} is not the one the job expects ({job['expected'][field]})")
    return job, result


def check_signed_record(envelope: dict[str, Any], approved: dict[str, Any]) -> SignedResult:
    """A runner's signed result kept as a file (an offline H200 run), verified against the
    approved runner keys {keyid: public key}; only a passed run is published from a file."""
    try:
        payload, signer = verify_envelope(envelope, approved)
        statement = parse_statement(payload, BENCHMARK_RUN_PREDICATE)
    except SignatureError as error:
        raise ResultError(error.code, str(error)) from None
    result = _checked(statement, envelope, signer)
    if result.run.spec.to_json()["status"] != "passed":
        raise ResultError("NOT_PASSED", f"the run's status is {result.run.spec.to_json()['status']}")
    return result


def is_older_dialect(envelope: dict[str, Any]) -> bool:
    """Whether a kept result file's run is of the older dialect (re-expressed in data/controlled)."""
    import base64
    import json

    try:
        statement = json.loads(base64.b64decode(envelope["payload"]))
        items = statement["predicate"]["manifests"]
    except (KeyError, TypeError, ValueError):
        return False
    return any(isinstance(m, dict) and m.get("kind") == "BenchmarkRun" and "cases" in (m.get("spec") or {}) for m in items)


async def referenced_objects(db: AsyncDatabase, run: FormatManifest) -> dict[str, FormatManifest]:
    """The stored objects a verified run names besides its environment (workload, implementation,
    protocol, operation), as format manifests; ResultError when one is not in the registry."""
    spec = run.spec.to_json()
    found: dict[str, FormatManifest] = {}
    for field, (collection, role) in EXPECTED.items():
        doc = await db[collection].find_one({"_id": spec[field]})
        found[role] = _parsed(doc, f"the run's {field} ({spec[field]}) is not in the registry")
    operation_digest = found["workload"].spec.to_json()["operationSpecDigest"]
    found["operation"] = _parsed(await db.definitions.find_one({"_id": operation_digest}), "the run's operation is not in the registry")
    return found


def _parsed(doc: dict[str, Any] | None, missing: str) -> FormatManifest:
    if doc is None:
        raise ResultError("DIGEST_MISMATCH", missing)
    try:
        return parse_format_manifest({k: doc[k] for k in ("apiVersion", "kind", "metadata", "spec")})
    except FormatError:
        raise ResultError("DIGEST_MISMATCH", f"{missing.split(' is ')[0]} is stored in the older dialect") from None


async def fail_for_status(db: AsyncDatabase, job: dict[str, Any], result: SignedResult) -> dict[str, Any] | None:
    """A signed run that did not pass fails its job (nothing is published); None when it passed."""
    status = result.run.spec.to_json()["status"]
    if status == "passed":
        return None
    return await jobs.transition(
        db,
        job,
        jobs.JobState.failed,
        failure={"code": jobs.FailureCode.incorrect_numerical.value, "message": f"the run's status is {status}"},
        resultEnvelope=result.envelope,
    )


class JobCompletion:
    """The job's move to `succeeded`, written in the transaction that publishes its run: a run is
    never Verified while its job still looks unfinished, and a runner that lost its lease
    meanwhile publishes nothing."""

    def __init__(self, db: AsyncDatabase, job: dict[str, Any], result: SignedResult):
        self.db, self.job, self.result = db, job, result
        self.job_after: dict[str, Any] | None = None

    async def __call__(self, session: AsyncClientSession) -> None:
        self.job_after = await jobs.transition(
            self.db, self.job, jobs.JobState.succeeded, session=session, runDigest=self.result.digest, resultEnvelope=self.result.envelope
        )


async def mark_verified(db: AsyncDatabase, digest: str, verification: dict[str, Any], session: AsyncClientSession) -> None:
    """A run stored before its signed result arrived becomes Verified (a no-op when it is already)."""
    await db.runs.update_one(
        {"_id": digest, "verification": {"$exists": False}},
        {"$set": {"verification": verification, "evidenceLevel": "KernelIndex Verified", "verifiedBy": [verification["signer"]]}},
        session=session,
    )


async def refresh_replication(db: AsyncDatabase, run_spec: dict[str, Any], gpu: str, session: AsyncClientSession) -> None:
    """Two distinct runner identities verifying the same implementation on the same workload,
    protocol and GPU lift every such run to Independently Replicated."""
    # The implementation first: SecantusDB serves the filter from its index (store/schema.py
    # `implementation`) and checks the rest per run.
    query = {
        "spec.implementationDigest": run_spec["implementationDigest"],
        "spec.workloadDigest": run_spec["workloadDigest"],
        "spec.protocolDigest": run_spec["protocolDigest"],
        "gpu": gpu,
        "status": "passed",
    }
    runners: set[str] = set()
    cohorts: set[str] = set()
    async for doc in db.runs.find(query, {"verifiedBy": 1, "groupKey": 1, "current": 1}, session=session):
        runners.update(doc.get("verifiedBy", []))
        if doc.get("verifiedBy") and doc.get("current"):
            cohorts.add(doc["groupKey"])
    level = "Independently Replicated" if len(runners) >= 2 else "KernelIndex Verified"
    await db.runs.update_many({**query, "verifiedBy": {"$ne": []}}, {"$set": {"evidenceLevel": level}}, session=session)
    await leaderboards.rebuild(db, cohorts, session)  # their rows show the evidence level
