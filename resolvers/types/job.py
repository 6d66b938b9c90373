"""BenchmarkJob: a request for a controlled rerun, and its way through the queue."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import strawberry
from strawberry.scalars import JSON

from resolvers import ids
from resolvers.context import Info
from resolvers.cost_limit import MANIFEST_KIB, weighs
from resolvers.errors import ClientError
from resolvers.node_types import owned_here
from resolvers.types.common import check_first, cursor_parts, encode_cursor, shown
from resolvers.types.connection import Connection, connection
from resolvers.types.definition import Definition
from resolvers.types.implementation import Implementation, code_reference
from resolvers.types.node import Node
from resolvers.types.protocol import Protocol, manifest_json
from resolvers.types.run import Run
from resolvers.types.workload import Workload
from store.jobs import FailureCode as DomainFailureCode
from store.jobs import JobState as DomainJobState
from store.queries import jobs_page

JobState = strawberry.enum(DomainJobState, name="BenchmarkJobState")
FailureCode = strawberry.enum(DomainFailureCode, name="BenchmarkJobFailureCode")


@strawberry.type
class Lease:
    runner: str = strawberry.field(description="The API key id of the runner holding the job.")
    claimed_at: datetime
    expires_at: datetime


@strawberry.type
class JobFailure:
    code: str
    message: str


@strawberry.type
class JobHistoryEntry:
    state: str
    at: datetime
    runner: str | None
    reason: str | None
    run_digest: str | None


@strawberry.federation.type(keys=["id"], description="A controlled rerun of one implementation on one GPU.")
class BenchmarkJob(Node):
    id: strawberry.ID
    state: JobState
    gpu: str
    implementation_name: str
    cases: list[int] | None
    attempts: int
    max_attempts: int
    lease: Lease | None
    failure: JobFailure | None
    history: list[JobHistoryEntry]
    created_at: datetime
    updated_at: datetime
    idempotency_key: str
    doc: strawberry.Private[dict[str, Any]]

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> BenchmarkJob:
        lease = doc.get("lease")
        failure = doc.get("failure")
        return cls(
            id=strawberry.ID(ids.encode("BenchmarkJob", doc["_id"])),
            state=DomainJobState(doc["state"]),
            gpu=doc["gpu"],
            implementation_name=doc["implementationName"],
            cases=doc.get("cases"),
            attempts=doc["attempts"],
            max_attempts=doc["maxAttempts"],
            lease=Lease(runner=lease["runner"], claimed_at=lease["claimedAt"], expires_at=lease["expiresAt"]) if lease else None,
            failure=JobFailure(code=failure["code"], message=failure["message"]) if failure else None,
            history=[
                JobHistoryEntry(state=h["state"], at=h["at"], runner=h.get("runner"), reason=h.get("reason"), run_digest=h.get("runDigest"))
                for h in doc.get("history", [])
            ],
            created_at=doc["createdAt"],
            updated_at=doc["updatedAt"],
            idempotency_key=doc["idempotencyKey"],
            doc=doc,
        )

    @strawberry.field
    async def definition(self, info: Info) -> Definition | None:
        doc = await info.context.loaders.definitions.load(self.doc["definitionDigest"])
        return Definition.from_doc(doc) if doc else None

    @strawberry.field
    async def implementation(self, info: Info) -> Implementation | None:
        doc = await info.context.loaders.implementations.load(self.doc["expected"]["implementationDigest"])
        return Implementation.from_doc(doc) if doc else None

    @strawberry.field
    async def workload(self, info: Info) -> Workload | None:
        doc = await info.context.loaders.workloads.load(self.doc["expected"]["workloadDigest"])
        return Workload.from_doc(doc) if doc else None

    @strawberry.field
    async def protocol(self, info: Info) -> Protocol | None:
        doc = await info.context.loaders.protocols.load(self.doc["expected"]["protocolDigest"])
        return Protocol.from_doc(doc) if doc else None

    @strawberry.field(description="The verified run, once the job succeeded.")
    async def run(self, info: Info) -> Run | None:
        digest = self.doc.get("runDigest")
        if not digest:
            return None
        if not owned_here(info.schema, "Run"):
            # The benchmarks subgraph shows a run's key alone; the registry resolves the rest. The
            # run exists: a job's runDigest is written in the transaction that publishes the run.
            return Run.key_only(digest)
        doc = await info.context.loaders.runs.load(digest)
        return Run.from_doc(doc) if doc else None

    @strawberry.field(
        description="Everything a runner needs to execute the job (what `runner --job` reads).", directives=weighs(MANIFEST_KIB)
    )
    async def runner_document(self, info: Info) -> JSON:
        return await job_document(info, self.doc)

    @classmethod
    async def resolve_reference(cls, info: Info, id: strawberry.ID) -> BenchmarkJob | None:
        doc = await info.context.loaders.jobs.load(ids.decode_as(id, "BenchmarkJob"))
        return cls.from_doc(doc) if doc else None


async def job_document(info: Info, doc: dict[str, Any]) -> dict[str, Any]:
    loaders = info.context.loaders
    expected = doc["expected"]
    definition = await loaders.definitions.load(doc["definitionDigest"])
    workload = await loaders.workloads.load(expected["workloadDigest"])
    protocol = await loaders.protocols.load(expected["protocolDigest"])
    code = await code_reference(info, await loaders.implementations.load(expected["implementationDigest"]))
    lease = doc.get("lease")
    return {
        "id": ids.encode("BenchmarkJob", doc["_id"]),
        "jobId": doc["_id"],
        "gpu": doc["gpu"],
        "definition": {"digest": doc["definitionDigest"], "name": definition["spec"].get("name") or definition["metadata"]["name"]},
        "implementation": {
            "name": doc["implementationName"],
            "digest": expected["implementationDigest"],
            # What the runner checks its own code against, and the commit to check out if it differs.
            "code": {"digest": code.digest, "commit": code.commit} if code else None,
        },
        "workload": manifest_json(workload),
        "protocol": manifest_json(protocol),
        "leaseExpiresAt": lease["expiresAt"].isoformat() if lease else None,
    }


def job_cursor(doc: dict) -> str:
    return encode_cursor("jobs", int(doc["createdAt"].timestamp() * 1000), doc["_id"])


def decode_job_cursor(cursor: str) -> tuple[datetime, str]:
    """(createdAt, job key) from a cursor of `job_cursor`; a ClientError names a bad one."""
    parts = cursor_parts(cursor, "jobs")
    try:
        created_ms, job_id = parts
        return datetime.fromtimestamp(int(created_ms) / 1000, UTC), job_id
    except (ValueError, OverflowError, OSError):
        raise ClientError(f"after: {shown(cursor)} is not a valid cursor") from None


@strawberry.input
class BenchmarkJobFilter:
    state: JobState | None = None
    gpu: str | None = None
    definition: strawberry.ID | None = None


async def job_connection(
    info: Info, query: dict[str, Any], first: int, after: str | None, state: JobState | None = None
) -> Connection[BenchmarkJob]:
    """Jobs matching `query` (and `state`), newest first."""
    if state is not None:
        query = {**query, "state": state.value}
    docs, more = await jobs_page(info.context.db, query=query, first=check_first(first), after=decode_job_cursor(after) if after else None)
    for doc in docs:
        info.context.loaders.jobs.prime(doc["_id"], doc)
    return connection(docs, more, BenchmarkJob.from_doc, job_cursor)
