"""Benchmark jobs: queued → claimed (a lease) → running → succeeded | failed.

Claims are single atomic find-and-modify operations, so two runners never hold one job. A lease
that runs out returns the job to the queue (counting an attempt) the next time anyone claims;
after `max_attempts` the job fails with `lease_expired`. Every transition is appended to the job's
history and to the event log in one transaction, so a crash between the two cannot leave a state
change without its `job.updated` event (or an event naming a job that was never written).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from pymongo import ASCENDING, ReturnDocument
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from store import events
from store.transactions import in_transaction


class JobState(str, Enum):
    queued = "queued"
    claimed = "claimed"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"


class FailureCode(str, Enum):
    compile_error = "compile_error"
    incorrect_numerical = "incorrect_numerical"
    runtime_error = "runtime_error"
    timeout = "timeout"
    lease_expired = "lease_expired"


ACTIVE = [JobState.claimed.value, JobState.running.value]
DEFAULT_MAX_ATTEMPTS = 3


def _history(state: str, now: datetime, **detail: Any) -> dict[str, Any]:
    return {"state": state, "at": now, **{k: v for k, v in detail.items() if v is not None}}


async def _event(db: AsyncDatabase, job: dict[str, Any], now: datetime, session: AsyncClientSession) -> None:
    await events.append(db, "job.updated", now, session=session, jobId=job["_id"], state=job["state"], runDigest=job.get("runDigest"))


async def _change(
    db: AsyncDatabase,
    guard: dict[str, Any],
    update: dict[str, Any],
    now: datetime,
    session: AsyncClientSession | None = None,
    **options: Any,
) -> dict[str, Any] | None:
    """One guarded find-and-modify and its event, in one transaction (the caller's `session`'s, if
    given); None (nothing written) when the guard matches no job."""

    async def work(session: AsyncClientSession) -> dict[str, Any] | None:
        job = await db.jobs.find_one_and_update(guard, update, return_document=ReturnDocument.AFTER, session=session, **options)
        if job:
            await _event(db, job, now, session)
        return job

    return await work(session) if session is not None else await in_transaction(db, work)


async def request_job(
    db: AsyncDatabase, *, requested_by: str, idempotency_key: str, spec: dict[str, Any], max_attempts: int = DEFAULT_MAX_ATTEMPTS
) -> tuple[dict[str, Any], bool]:
    """Create a job, or return the one this requester made with the same idempotency key.
    Returns (job, created)."""
    existing = await db.jobs.find_one({"requestedBy": requested_by, "idempotencyKey": idempotency_key})
    if existing:
        return existing, False
    now = datetime.now(UTC)
    job = {
        "_id": secrets.token_hex(8),
        "requestedBy": requested_by,
        "idempotencyKey": idempotency_key,
        **spec,
        "state": JobState.queued.value,
        "attempts": 0,
        "maxAttempts": max_attempts,
        "lease": None,
        "failure": None,
        "runDigest": None,
        "createdAt": now,
        "updatedAt": now,
        "history": [_history("queued", now, by=requested_by)],
    }

    async def work(session: AsyncClientSession) -> None:
        await db.jobs.insert_one(job, session=session)
        await _event(db, job, now, session)

    try:
        await in_transaction(db, work)
    except DuplicateKeyError:  # the same request raced itself: its transaction wrote nothing
        return await db.jobs.find_one({"requestedBy": requested_by, "idempotencyKey": idempotency_key}), False
    return job, True


async def expire_leases(db: AsyncDatabase, now: datetime) -> None:
    """Jobs whose lease ran out go back to the queue, or fail once out of attempts."""
    expired = {"state": {"$in": ACTIVE}, "lease.expiresAt": {"$lt": now}}
    async for job in db.jobs.find(expired, {"_id": 1, "attempts": 1, "maxAttempts": 1, "lease": 1}):
        attempts = job["attempts"] + 1
        out_of_attempts = attempts >= job["maxAttempts"]
        state = JobState.failed.value if out_of_attempts else JobState.queued.value
        update: dict[str, Any] = {
            "$set": {"state": state, "lease": None, "attempts": attempts, "updatedAt": now},
            "$push": {"history": _history(state, now, reason="lease_expired", runner=job["lease"]["runner"])},
        }
        if out_of_attempts:
            update["$set"]["failure"] = {"code": FailureCode.lease_expired.value, "message": "the lease expired on the last attempt"}
        # Conditional on the same lease: a runner completing right now wins, or we do; never both.
        await _change(db, {"_id": job["_id"], "lease.token": job["lease"]["token"], "state": {"$in": ACTIVE}}, update, now)


async def claim(db: AsyncDatabase, *, runner: str, gpu: str, lease_seconds: int) -> dict[str, Any] | None:
    now = datetime.now(UTC)
    await expire_leases(db, now)
    lease = {"runner": runner, "token": secrets.token_hex(12), "claimedAt": now, "expiresAt": now + timedelta(seconds=lease_seconds)}
    return await _change(
        db,
        {"state": JobState.queued.value, "gpu": gpu},
        {
            "$set": {"state": JobState.claimed.value, "lease": lease, "updatedAt": now},
            "$push": {"history": _history("claimed", now, runner=runner)},
        },
        now,
        sort=[("createdAt", ASCENDING)],
    )


class JobError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


async def held_job(db: AsyncDatabase, job_id: str, runner: str) -> dict[str, Any]:
    """The job, if `runner` holds a live lease on it; JobError otherwise."""
    job = await db.jobs.find_one({"_id": job_id})
    if job is None:
        raise JobError("NOT_FOUND", f"no job {job_id}")
    if job["state"] in (JobState.succeeded.value, JobState.failed.value):
        raise JobError("ALREADY_COMPLETED", f"job {job_id} is already {job['state']}")
    lease = job.get("lease")
    if job["state"] not in ACTIVE or not lease or lease["runner"] != runner:
        raise JobError("JOB_NOT_HELD", f"job {job_id} is not held by this runner")
    if lease["expiresAt"] < datetime.now(UTC):
        raise JobError("LEASE_EXPIRED", f"the lease on job {job_id} expired at {lease['expiresAt'].isoformat()}")
    return job


async def transition(
    db: AsyncDatabase, job: dict[str, Any], state: JobState, *, session: AsyncClientSession | None = None, **fields: Any
) -> dict[str, Any]:
    """Move a held job on, guarded by its lease token so a stale holder cannot (inside the
    caller's transaction when `session` is given)."""
    now = datetime.now(UTC)
    sets: dict[str, Any] = {"state": state.value, "updatedAt": now, **fields}
    if state in (JobState.succeeded, JobState.failed):
        sets["lease"] = None
    detail = {k: v for k, v in fields.items() if k in ("runDigest",)}
    if fields.get("failure"):
        detail["reason"] = fields["failure"]["code"]
    updated = await _change(
        db,
        {"_id": job["_id"], "lease.token": job["lease"]["token"], "state": {"$in": ACTIVE}},
        {"$set": sets, "$push": {"history": _history(state.value, now, runner=job["lease"]["runner"], **detail)}},
        now,
        session,
    )
    if updated is None:
        raise JobError("JOB_NOT_HELD", f"job {job['_id']} changed hands meanwhile")
    return updated


async def renew_lease(db: AsyncDatabase, job: dict[str, Any], lease_seconds: int) -> dict[str, Any]:
    """Extend a held job's lease to `lease_seconds` from now, guarded by its lease token (a runner
    that lost the lease meanwhile is told so). Not a state change: no history entry, no event."""
    now = datetime.now(UTC)
    updated = await db.jobs.find_one_and_update(
        {"_id": job["_id"], "lease.token": job["lease"]["token"], "state": {"$in": ACTIVE}},
        {"$set": {"lease.expiresAt": now + timedelta(seconds=lease_seconds), "updatedAt": now}},
        return_document=ReturnDocument.AFTER,
    )
    if updated is None:
        raise JobError("JOB_NOT_HELD", f"job {job['_id']} changed hands meanwhile")
    return updated


async def fail_or_retry(db: AsyncDatabase, job: dict[str, Any], code: FailureCode, message: str) -> dict[str, Any]:
    """A failure the runner reports. Deterministic failures (compile, numerics) are final;
    runtime errors and timeouts go back to the queue while attempts remain."""
    retryable = code in (FailureCode.runtime_error, FailureCode.timeout)
    attempts = job["attempts"] + 1
    if retryable and attempts < job["maxAttempts"]:
        return await transition(db, job, JobState.queued, attempts=attempts, lease=None, failure={"code": code.value, "message": message})
    return await transition(db, job, JobState.failed, attempts=attempts, failure={"code": code.value, "message": message})
