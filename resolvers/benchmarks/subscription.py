"""The benchmarks Subscription root: state changes of one benchmark job.

Needs an API key in the connection_init payload ({"Authorization": "Bearer <key>"} or
{"apiKey": "<key>"}) of the job's requester, a maintainer, or a runner that holds or held the job.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import strawberry

from resolvers.context import Info
from resolvers.errors import ClientError
from resolvers.event_feed import after_seq, feed, hub_of, key_of
from resolvers.types.events import BenchmarkJobUpdatedEvent
from store.event_stream import EventFilter
from store.keys import Scope
from store.queries import job_watchers


def may_watch_job(key, job: dict[str, Any]) -> bool:
    if key.scope is Scope.maintainer or job.get("requestedBy") == key.id:
        return True
    if key.scope is Scope.runner:
        holders = {h.get("runner") for h in job.get("history", [])}
        lease = job.get("lease") or {}
        return key.id == lease.get("runner") or key.id in holders
    return False


@strawberry.type
class Subscription:
    @strawberry.subscription(
        description="State changes of one benchmark job. Needs the API key (in connection_init) of the job's "
        "requester, a maintainer, or a runner that holds or held the job."
    )
    async def benchmark_job_updated(
        self, info: Info, id: strawberry.ID, after: str | None = None
    ) -> AsyncGenerator[BenchmarkJobUpdatedEvent, None]:
        hub = hub_of(info)
        key = info.context.principal
        if key is None:
            if info.context.key_presented:
                raise ClientError("the API key in connection_init is not valid", code="UNAUTHENTICATED")
            raise ClientError(
                'benchmarkJobUpdated needs an API key: send {"Authorization": "Bearer <key>"} in the connection_init payload',
                code="UNAUTHENTICATED",
            )
        job_id = key_of(id, "BenchmarkJob", "id")
        since = await after_seq(info, after)
        job = await job_watchers(info.context.db, job_id)
        if job is None:
            raise ClientError("id: no such benchmark job", code="NOT_FOUND")
        if not may_watch_job(key, job):
            raise ClientError(
                "only the job's requester, a maintainer, or a runner that holds or held the job may watch it", code="FORBIDDEN"
            )
        return feed(info, hub, EventFilter.of("job.updated", jobId=job_id), since, BenchmarkJobUpdatedEvent.of)
