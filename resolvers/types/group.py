"""ComparisonGroup: the runs that may be ranked against each other, and who is #1."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

from resolvers import ids
from resolvers.context import Info
from resolvers.cost_limit import PAGE, assumed_size
from resolvers.types.common import check_first, decode_cursor, encode_cursor
from resolvers.types.connection import Connection
from resolvers.types.environment import Gpu
from resolvers.types.node import Node
from store.catalog import catalog_runs_in_group
from store.group_members import group_runs_page
from store.leaderboards import page as leaderboard_page
from store.read_models import ComparisonGroupDocument
from store.records import group_records

if TYPE_CHECKING:
    from resolvers.types.definition import Definition
    from resolvers.types.record import RecordChange
    from resolvers.types.run import Run
    from resolvers.types.workload import Workload


@strawberry.type(description="How a group orders its runs.")
class RankRule:
    metric: str
    order: str = strawberry.field(description='"desc": higher is better; "asc": lower is better.')
    noise_aware: bool = strawberry.field(description="Runs whose difference is inside the measured noise tie.")
    tie_test: str = strawberry.field(
        description='When two runs tie: "exact" (equal values), "noise_band" (difference inside the larger '
        'half-IQR), "ci95_overlap" (95% confidence intervals of the metric, from per-case means, std and runs, '
        "overlap; GPU MODE metrics: geomean, mean or last of the case means)."
    )


@strawberry.federation.type(keys=["id"], description="Runs comparable with each other, ranked by the group's rule.")
class ComparisonGroup(Node):
    id: strawberry.ID
    key: str = strawberry.field(description="The comparison key (a digest of what makes runs comparable).")
    title: str
    size: int = strawberry.field(description="Current runs in the group, ranked or not.")
    ranked_size: int
    family: str
    family_version: str
    gpu: Gpu
    rank_rule: RankRule
    source_native: bool = strawberry.field(description="Ranked by the source's own rule rather than ours.")
    definition_digest: str
    workload_digest: str
    leader_digest: strawberry.Private[str | None]
    board: strawberry.Private[dict | None]  # the leaderboard's head (store/leaderboards.py)

    @strawberry.field(description="How many current runs of this group were imported from a catalog export (the bundled data).")
    async def catalog_runs(self, info: Info) -> int:
        if self.board is not None:
            return self.board["catalogRuns"]
        return await catalog_runs_in_group(info.context.db, self.key)

    @classmethod
    def from_doc(cls, doc: ComparisonGroupDocument) -> ComparisonGroup:
        rule = doc.rank_rule
        return cls(
            id=strawberry.ID(ids.encode("ComparisonGroup", doc.key)),
            key=doc.key,
            title=doc.title,
            size=doc.size,
            ranked_size=doc.ranked_size,
            family=doc.family,
            family_version=doc.family_version,
            gpu=Gpu(vendor=None, product=doc.gpu.product, architecture=doc.gpu.architecture),
            rank_rule=RankRule(metric=rule.metric, order=rule.order, noise_aware=rule.noise_aware, tie_test=rule.tie_test),
            # Source rules rank by the source's number; GPU MODE's adds ties from its samples.
            source_native=not rule.noise_aware or rule.ci_overlap,
            definition_digest=doc.definition_digest,
            workload_digest=doc.workload_digest,
            leader_digest=doc.leader_digest,
            board=doc.leaderboard,
        )

    @strawberry.field(description="The #1 run (null while no run is ranked).")
    async def leader(self, info: Info) -> Annotated[Run, strawberry.lazy("resolvers.types.run")] | None:
        from resolvers.types.run import Run, rows_answer

        if self.leader_digest is None:
            return None
        leader = (self.board or {}).get("leader")
        if leader and leader["_id"] == self.leader_digest and rows_answer(info):
            return Run.from_doc(leader)  # the leaderboard's row of #1 answers it: no run read
        doc = await info.context.loaders.runs.load(self.leader_digest)
        return Run.from_doc(doc) if doc else None

    @strawberry.field
    async def definition(self, info: Info) -> Annotated[Definition, strawberry.lazy("resolvers.types.definition")] | None:
        from resolvers.types.definition import Definition

        doc = await info.context.loaders.definitions.load(self.definition_digest)
        return Definition.from_doc(doc) if doc else None

    @strawberry.field
    async def workload(self, info: Info) -> Annotated[Workload, strawberry.lazy("resolvers.types.workload")] | None:
        from resolvers.types.workload import Workload

        doc = await info.context.loaders.workloads.load(self.workload_digest)
        return Workload.from_doc(doc) if doc else None

    @strawberry.field(description="Current runs, best first; unranked runs last.", directives=[PAGE])
    async def runs(
        self, info: Info, first: int = 20, after: str | None = None
    ) -> Connection[Annotated[Run, strawberry.lazy("resolvers.types.run")]]:
        from resolvers.types.run import rows_answer, run_connection

        cursor = tuple(decode_cursor(after, "group", 2)) if after else None
        first = check_first(first)
        cursor_of = lambda d: encode_cursor("group", d["rankOrder"], d["seq"])  # noqa: E731
        if rows_answer(info):  # the leaderboard's rows answer it: one document
            rows = await leaderboard_page(info.context.db, self.key, first=first, after=cursor)
            if rows is not None:
                return await run_connection(*rows, cursor_of, info, whole=False)
        docs, more = await group_runs_page(info.context.db, group_key=self.key, ranked_size=self.ranked_size, first=first, after=cursor)
        return await run_connection(docs, more, cursor_of, info)

    @strawberry.field(
        description="The group's history of #1s, oldest first: each change with its cause (new run, correction, supersession, retraction).",
        directives=[assumed_size(20)],
    )
    async def records(self, info: Info) -> list[Annotated[RecordChange, strawberry.lazy("resolvers.types.record")]]:
        from resolvers.types.record import RecordChange

        return [RecordChange.from_doc(d) for d in await group_records(info.context.db, self.key)]

    @classmethod
    async def resolve_reference(cls, info: Info, id: strawberry.ID) -> ComparisonGroup | None:
        doc = await info.context.loaders.groups.load(ids.decode_as(id, "ComparisonGroup"))
        return cls.from_doc(doc) if doc else None
