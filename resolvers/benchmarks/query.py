"""The benchmarks Query root: one job, or a page of jobs."""

from __future__ import annotations

from typing import Any

import strawberry

from resolvers import ids
from resolvers.context import Info
from resolvers.cost_limit import PAGE
from resolvers.errors import ClientError
from resolvers.types.connection import Connection
from resolvers.types.job import BenchmarkJob, BenchmarkJobFilter, job_connection


def _key(global_id: str, expected: str) -> str:
    try:
        return ids.decode_as(global_id, expected)
    except ids.BadGlobalId as error:
        raise ClientError(str(error), code="BAD_ID") from None


@strawberry.type
class Query:
    @strawberry.field
    async def benchmark_job(self, info: Info, id: strawberry.ID) -> BenchmarkJob | None:
        doc = await info.context.loaders.jobs.load(_key(id, "BenchmarkJob"))
        return BenchmarkJob.from_doc(doc) if doc else None

    @strawberry.field(description="Benchmark jobs, newest first.", directives=[PAGE])
    async def benchmark_jobs(
        self, info: Info, filter: BenchmarkJobFilter | None = None, first: int = 20, after: str | None = None
    ) -> Connection[BenchmarkJob]:
        query: dict[str, Any] = {}
        if filter and filter.gpu:
            query["gpu"] = filter.gpu
        if filter and filter.definition:
            query["definitionDigest"] = _key(filter.definition, "Definition")
        return await job_connection(info, query, first, after, filter.state if filter else None)
