"""The event types subscriptions deliver, each made from one entry of the event log.

Every event carries a `cursor` (its place in the event log): pass it as `after` to resume.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import strawberry

from resolvers.event_feed import fresh_loaders
from resolvers.types.common import encode_cursor
from resolvers.types.group import ComparisonGroup
from resolvers.types.job import BenchmarkJob, JobState
from resolvers.types.run import Run
from store.event_stream import EventHub
from store.jobs import JobState as DomainJobState

Doc = dict[str, Any]


@strawberry.input(description="Narrow runPublished. All given conditions must hold; none given: every run.")
class RunPublishedFilter:
    definition: strawberry.ID | None = None
    gpu: str | None = strawberry.field(default=None, description='GPU product, e.g. "NVIDIA B200".')
    group: strawberry.ID | None = None
    source: str | None = strawberry.field(default=None, description='e.g. "sol-execbench", "kernelindex".')


@strawberry.type(description="A run was published.")
class RunPublishedEvent:
    cursor: str = strawberry.field(description="Pass as `after` to resume after this event.")
    published_at: datetime
    run: Run

    @classmethod
    async def of(cls, info, hub: EventHub, event: Doc) -> RunPublishedEvent | None:
        doc = await hub.document(event["seq"], "runs", event["runDigest"])
        if doc is None:
            return None
        fresh_loaders(info, hub, event["seq"]).runs.prime(doc["_id"], doc)
        return cls(cursor=encode_cursor("events", event["seq"]), published_at=event["at"], run=Run.from_doc(doc))


@strawberry.type(description="A comparison group's membership or #1 changed.")
class ComparisonGroupChangedEvent:
    cursor: str = strawberry.field(description="Pass as `after` to resume after this event.")
    changed_at: datetime
    group: ComparisonGroup
    leader_changed: bool
    size: int = strawberry.field(description="Current runs in the group after the change.")
    old_leader: Run | None = strawberry.field(description="The #1 before the change.")
    new_leader: Run | None = strawberry.field(description="The #1 after the change.")

    @classmethod
    async def of(cls, info, hub: EventHub, event: Doc) -> ComparisonGroupChangedEvent | None:
        seq = event["seq"]
        group = await hub.document(seq, "comparison_groups", event["groupKey"])
        if group is None:
            return None
        loaders = fresh_loaders(info, hub, seq)
        leaders: dict[str, Run | None] = {}
        for role in ("oldLeader", "newLeader"):
            digest = event.get(role)
            doc = await hub.document(seq, "runs", digest) if digest else None
            if doc is not None:
                loaders.runs.prime(doc["_id"], doc)
            leaders[role] = Run.from_doc(doc) if doc else None
        return cls(
            cursor=encode_cursor("events", seq),
            changed_at=event["at"],
            group=ComparisonGroup.from_doc(group),
            leader_changed=bool(event.get("leaderChanged")),
            size=event.get("size", group.size),
            old_leader=leaders["oldLeader"],
            new_leader=leaders["newLeader"],
        )


@strawberry.type(description="A benchmark job changed state.")
class BenchmarkJobUpdatedEvent:
    cursor: str = strawberry.field(description="Pass as `after` to resume after this event.")
    updated_at: datetime
    state: JobState = strawberry.field(description="The state this event moved the job to.")
    job: BenchmarkJob = strawberry.field(description="The job as it is now.")

    @classmethod
    async def of(cls, info, hub: EventHub, event: Doc) -> BenchmarkJobUpdatedEvent | None:
        job = await hub.document(event["seq"], "jobs", event["jobId"])
        if job is None:
            return None
        fresh_loaders(info, hub, event["seq"])
        return cls(
            cursor=encode_cursor("events", event["seq"]),
            updated_at=event["at"],
            state=DomainJobState(event["state"]),
            job=BenchmarkJob.from_doc(job),
        )
