"""The registry's Query root: lookups by ID, run lists, comparison groups and definitions."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import strawberry
from strawberry.federation.schema_directives import ListSize

from resolvers import ids
from resolvers.context import Info
from resolvers.cost_limit import PAGE, assumed_size
from resolvers.errors import ClientError
from resolvers.node_types import NODE_TYPES
from resolvers.registry.resolve import AxisValueInput, KernelRequest, KernelResolution, resolve_many, resolve_one
from resolvers.types.common import EvidenceLevel, RunStatus, check_first, cursor_parts, decode_cursor, encode_cursor, shown
from resolvers.types.connection import Connection, connection
from resolvers.types.definition import Definition, DefinitionSearch
from resolvers.types.group import ComparisonGroup
from resolvers.types.node import Node
from resolvers.types.record import RecordChange
from resolvers.types.run import LISTED_ANSWERS, Run, asks_per_case, run_connection, selected_run_fields
from resolvers.types.serving import ServingFacetValue, ServingRun, ServingRunFacets, ServingRunPage
from resolvers.types.viewer import Viewer
from store.queries import (
    LISTED_FIELDS,
    definition_cursor,
    definition_named,
    definitions_by_name,
    definitions_page,
    run_by_external_id,
    runs_page,
)
from store.records import recent_records
from store.serving import FacetValue, ServingFilter, serving_facets, serving_runs_page

# `definitions` is one list, not a connection: its length is `first` (default and most: every
# definition up to this many), which the cost estimate multiplies what is asked of each by
# (`{ definitions { workloads { manifest } } }` costs 1,000 x 171 and is refused; it answered
# 5.7 MB when it was counted as 10).
MAX_DEFINITIONS = 1_000
DEFINITIONS_LIST = ListSize(slicing_arguments=["first"], require_one_slicing_argument=False)


def _key(global_id: str, expected: str | None = None) -> tuple[str, str]:
    try:
        if expected:
            return expected, ids.decode_as(global_id, expected)
        return ids.decode(global_id)
    except ids.BadGlobalId as error:
        raise ClientError(str(error), code="BAD_ID") from None


async def load_node(info: Info, global_id: str) -> Node | None:
    """Any node by ID, batched per type through the request's DataLoaders."""
    type_name, key = _key(global_id)
    doc = await info.context.loaders.for_type(type_name).load(key)
    return NODE_TYPES[type_name].cls.from_doc(doc) if doc else None


MAX_SEARCH_TEXT = 200


@strawberry.input(description="Narrow a run list. All given conditions must hold.")
class RunFilter:
    definition: strawberry.ID | None = None
    group: strawberry.ID | None = None
    gpu: str | None = strawberry.field(default=None, description='GPU product, e.g. "NVIDIA B200".')
    source: str | None = None
    status: RunStatus | None = None
    evidence_level: EvidenceLevel | None = None
    include_superseded: bool = False


def _run_query(f: RunFilter | None) -> dict[str, Any]:
    f = f or RunFilter()
    query: dict[str, Any] = {} if f.include_superseded else {"current": True}
    if f.definition:
        query["definitionDigest"] = _key(f.definition, "Definition")[1]
    if f.group:
        query["groupKey"] = _key(f.group, "ComparisonGroup")[1]
    if f.gpu:
        query["gpu"] = f.gpu
    if f.source:
        query["source"] = f.source
    if f.status:
        query["status"] = f.status.value
    if f.evidence_level:
        query["evidenceLevel"] = f.evidence_level.value
    return query


@strawberry.input(
    description="Narrow the serving runs. All given conditions must hold; each is an exact value (servingRunFacets lists them)."
)
class ServingRunFilter:
    model: str | None = strawberry.field(default=None, description='The model revision\'s name, e.g. "mlperf-llama2-70b".')
    scenario: str | None = strawberry.field(default=None, description="spec.sourceNative.scenario: offline, server or interactive.")
    accelerator: str | None = strawberry.field(default=None, description='spec.topology.acceleratorModel, e.g. "NVIDIA B200-SXM-180GB".')
    accelerator_vendor: str | None = strawberry.field(default=None, description="spec.topology.acceleratorVendor, e.g. nvidia, amd.")
    system: str | None = strawberry.field(default=None, description="The configuration's spec.options.system (MLPerf's system under test).")
    round: str | None = strawberry.field(default=None, description='spec.harness.version, e.g. "v5.1".')


MAX_FILTER_TEXT = 200


def _serving_filter(f: ServingRunFilter | None) -> ServingFilter:
    f = f or ServingRunFilter()
    where = ServingFilter(f.model, f.scenario, f.accelerator, f.accelerator_vendor, f.system, f.round)
    for name, value in (("model", f.model), ("scenario", f.scenario), ("accelerator", f.accelerator)):
        _short_enough(name, value)
    for name, value in (("acceleratorVendor", f.accelerator_vendor), ("system", f.system), ("round", f.round)):
        _short_enough(name, value)
    return where


def _short_enough(name: str, value: str | None) -> None:
    if value is not None and len(value) > MAX_FILTER_TEXT:
        raise ClientError(f"filter.{name}: {len(value):,} characters; at most {MAX_FILTER_TEXT}")


def _serving_after(cursor: str) -> tuple[str, str]:
    parts = cursor_parts(cursor, "serving")
    # "<observedAt>|<digest hex>": observedAt holds colons, which the cursor's own parts use.
    observed_at, _, digest = ":".join(parts).rpartition("|")
    if not observed_at or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ClientError(f"after: {shown(cursor)} is not a valid cursor")
    return observed_at, "sha256:" + digest


def _facets(values: list[FacetValue]) -> list[ServingFacetValue]:
    return [ServingFacetValue(value=v.value, title=v.title, count=v.count) for v in values]


@strawberry.type
class Query:
    @strawberry.field(
        description="The API key this request presents (Authorization: Bearer <key>), null without one; a key that does not "
        "authenticate (unknown or revoked) is an UNAUTHENTICATED error."
    )
    async def viewer(self, info: Info) -> Viewer | None:
        key = info.context.principal
        if key is None and info.context.key_presented:
            raise ClientError("the API key is not valid (unknown or revoked)", "UNAUTHENTICATED")
        return Viewer.of(key) if key is not None else None

    @strawberry.field(description="Any object by its global ID.")
    async def node(self, info: Info, id: strawberry.ID) -> Node | None:
        return await load_node(info, id)

    @strawberry.field(description="Objects by global ID, in the order asked (null where not found).")
    async def nodes(self, info: Info, ids: list[strawberry.ID]) -> list[Node | None]:
        if len(ids) > 100:
            raise ClientError(f"ids: {len(ids)} IDs given; at most 100")
        return list(await asyncio.gather(*(load_node(info, i) for i in ids)))

    @strawberry.field
    async def run(self, info: Info, id: strawberry.ID) -> Run | None:
        doc = await info.context.loaders.runs.load(_key(id, "Run")[1])
        return Run.from_doc(doc) if doc else None

    @strawberry.field(description="The current run of a source's record, e.g. (sol-execbench, 37369).")
    async def run_by_external_id(self, info: Info, source: str, external_id: str) -> Run | None:
        doc = await run_by_external_id(info.context.db, source, external_id)
        return Run.from_doc(doc) if doc else None

    @strawberry.field(description="Runs, newest first.", directives=[PAGE])
    async def runs(self, info: Info, filter: RunFilter | None = None, first: int = 20, after: str | None = None) -> Connection[Run]:
        after_seq = decode_cursor(after, "runs", 1)[0] if after else None
        listed = selected_run_fields(info) <= LISTED_ANSWERS  # a projection of each run answers it
        docs, more = await runs_page(
            info.context.db,
            query=_run_query(filter),
            first=check_first(first),
            after_seq=after_seq,
            projection=LISTED_FIELDS if listed else None,
            rows=listed and not asks_per_case(info),
        )
        return await run_connection(docs, more, lambda d: encode_cursor("runs", d["seq"]), info, whole=not listed)

    @strawberry.field(
        description="Serving runs (MLPerf Inference results from the KernelIndex catalog), newest observation first. "
        "Listed with their manifests' digests, measurements and provenance; never ranked, and never in a comparison group.",
        directives=[PAGE],
    )
    async def serving_runs(
        self, info: Info, filter: ServingRunFilter | None = None, first: int = 20, after: str | None = None
    ) -> ServingRunPage:
        where = _serving_filter(filter)
        position = _serving_after(after) if after else None
        found = await serving_runs_page(info.context.db, where=where, first=check_first(first), after=position)
        page = connection(
            found.runs,
            found.has_next,
            ServingRun.from_doc,
            lambda d: encode_cursor("serving", f"{d.run.observed_at}|{d.digest.removeprefix('sha256:')}"),
        )
        return ServingRunPage(edges=page.edges, page_info=page.page_info, total_count=found.total)

    @strawberry.field(description="Every value each servingRuns filter can take, with how many runs have it.")
    async def serving_run_facets(self, info: Info) -> ServingRunFacets:
        f = await serving_facets(info.context.db)
        return ServingRunFacets(
            total_count=f.total,
            models=_facets(f.models),
            scenarios=_facets(f.scenarios),
            accelerators=_facets(f.accelerators),
            accelerator_vendors=_facets(f.accelerator_vendors),
            systems=_facets(f.systems),
            rounds=_facets(f.rounds),
        )

    @strawberry.field
    async def comparison_group(self, info: Info, id: strawberry.ID) -> ComparisonGroup | None:
        doc = await info.context.loaders.groups.load(_key(id, "ComparisonGroup")[1])
        return ComparisonGroup.from_doc(doc) if doc else None

    @strawberry.field(
        description=f"The first `first` definitions by name (at most {MAX_DEFINITIONS:,}; the cost estimate counts `first` of "
        "them). Page through all of them, or search, with searchDefinitions.",
        directives=[DEFINITIONS_LIST],
    )
    async def definitions(self, info: Info, first: int = MAX_DEFINITIONS) -> list[Definition]:
        if not 0 <= first <= MAX_DEFINITIONS:
            raise ClientError(f"first: {first} is not between 0 and {MAX_DEFINITIONS:,}")
        return [Definition.from_doc(d) for d in await definitions_by_name(info.context.db, limit=first)]

    @strawberry.field(
        description="Definitions whose name, title or comparison groups' GPU (product or architecture) contains every word of "
        "`text` (case-insensitive), by name.",
        directives=[PAGE],
    )
    async def search_definitions(self, info: Info, text: str = "", first: int = 20, after: str | None = None) -> DefinitionSearch:
        if len(text) > MAX_SEARCH_TEXT:
            raise ClientError(f"text: {len(text):,} characters; at most {MAX_SEARCH_TEXT}")
        after_name = ":".join(cursor_parts(after, "definitions")) if after else None
        docs, more, total = await definitions_page(
            info.context.db, words=text.lower().split(), first=check_first(first), after_name=after_name
        )
        page = connection(docs, more, Definition.from_doc, lambda d: encode_cursor("definitions", definition_cursor(d)))
        return DefinitionSearch(edges=page.edges, page_info=page.page_info, total_count=total)

    @strawberry.field(description="One definition by ID or by name.")
    async def definition(self, info: Info, id: strawberry.ID | None = None, name: str | None = None) -> Definition | None:
        if (id is None) == (name is None):
            raise ClientError("give exactly one of id or name")
        if id is not None:
            doc = await info.context.loaders.definitions.load(_key(id, "Definition")[1])
        else:
            doc = await definition_named(info.context.db, name)
        return Definition.from_doc(doc) if doc else None

    @strawberry.field(
        description="The ranked runs of the exact workload shape (every variable axis given) in every comparison group of "
        "`operation` (on `gpu`, by product or architecture, when given), ranked on that case by `statistic` (default: the "
        "protocol's primary statistic). When no group measured the shape: the nearest measured shapes on each side of every "
        "variable axis, labelled as such (never a measurement of the asked shape). Bad input: userErrors."
    )
    async def resolve_kernel(
        self, info: Info, operation: str, axes: list[AxisValueInput], gpu: str | None = None, statistic: str | None = None
    ) -> KernelResolution:
        return await resolve_one(info, operation, axes, gpu, statistic)

    @strawberry.field(
        description="resolveKernel for up to 20 requests at once, answered in the order asked.", directives=[assumed_size(20)]
    )
    async def resolve_kernels(self, info: Info, requests: list[KernelRequest]) -> list[KernelResolution]:
        return await resolve_many(info, requests)

    @strawberry.field(
        description="Changes of #1 in every comparison group (or one operation's, by name, or one group's), newest first; after `since` if given.",
        directives=[ListSize(slicing_arguments=["first"], require_one_slicing_argument=False)],
    )
    async def record_changes(
        self,
        info: Info,
        first: int = 50,
        since: datetime | None = None,
        operation: str | None = None,
        group: strawberry.ID | None = None,
    ) -> list[RecordChange]:
        if operation is not None and group is not None:
            raise ClientError("give at most one of operation or group")
        definition = None
        if group is not None:
            docs = await recent_records(info.context.db, first=check_first(first), since=since, group=_key(group, "ComparisonGroup")[1])
            return [RecordChange.from_doc(d) for d in docs]
        if operation is not None:
            doc = await definition_named(info.context.db, operation)
            if doc is None:
                raise ClientError(f"operation: no operation named {operation!r}", code="NOT_FOUND")
            definition = doc["_id"]
        docs = await recent_records(info.context.db, first=check_first(first), since=since, definition=definition)
        return [RecordChange.from_doc(d) for d in docs]
