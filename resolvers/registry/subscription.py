"""The registry's Subscription root: new runs and comparison-group changes (both public)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import strawberry

from resolvers.context import Info
from resolvers.errors import ClientError
from resolvers.event_feed import after_seq, feed, hub_of, key_of
from resolvers.types.events import ComparisonGroupChangedEvent, RunPublishedEvent, RunPublishedFilter
from store.event_stream import EventFilter
from store.queries import group_exists


@strawberry.type
class Subscription:
    @strawberry.subscription(description="Runs as they are published (public). No filter: every run.")
    async def run_published(
        self, info: Info, filter: RunPublishedFilter | None = None, after: str | None = None
    ) -> AsyncGenerator[RunPublishedEvent, None]:
        hub = hub_of(info)
        f = filter or RunPublishedFilter()
        flt = EventFilter.of(
            "run.published",
            definitionDigest=key_of(f.definition, "Definition", "filter.definition") if f.definition else None,
            groupKey=key_of(f.group, "ComparisonGroup", "filter.group") if f.group else None,
            gpu=f.gpu,
            source=f.source,
        )
        return feed(info, hub, flt, await after_seq(info, after), RunPublishedEvent.of)

    @strawberry.subscription(description="Changes of one comparison group's membership or #1 (public).")
    async def comparison_group_changed(
        self, info: Info, id: strawberry.ID, after: str | None = None
    ) -> AsyncGenerator[ComparisonGroupChangedEvent, None]:
        hub = hub_of(info)
        key = key_of(id, "ComparisonGroup", "id")
        since = await after_seq(info, after)
        if not await group_exists(info.context.db, key):
            raise ClientError("id: no such comparison group", code="NOT_FOUND")
        return feed(info, hub, EventFilter.of("group.changed", groupKey=key), since, ComparisonGroupChangedEvent.of)
