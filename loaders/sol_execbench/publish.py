"""Publish: keep the source snapshots, then the runs, in batches.

Snapshots go first, so a published run's `sourceSnapshot` annotation always points at a kept
response. Runs go through `store.publish.publish_many`, which is all-or-nothing per run,
idempotent (the same run again is `unchanged` and writes nothing) and supersedes the current
run of a source record whose content changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pymongo.asynchronous.database import AsyncDatabase

from store.publish import Bundle, PublishOutcome, publish_many
from store.snapshots import save_snapshots

from loaders.sol_execbench import SOURCE
from loaders.sol_execbench.fetch import Response
from loaders.sol_execbench.normalize import RunManifests


async def keep_snapshots(db: AsyncDatabase, responses: Sequence[Response]) -> int:
    """Save every response not kept yet (an unchanged re-import writes nothing); return how
    many were new."""
    return await save_snapshots(
        db,
        source=SOURCE,
        responses=[(r.url, r.fetched_at, r.body, r.status) for r in responses],
    )


def to_bundle(item: RunManifests) -> Bundle:
    return Bundle(
        run=item.run,
        definition=item.kernel.definition,
        workload=item.kernel.workload,
        protocol=item.protocol,
        environment=item.environment,
        implementation=item.implementation,
    )


async def publish_runs(db: AsyncDatabase, items: Sequence[RunManifests]) -> list[PublishOutcome]:
    if not items:
        return []
    return await publish_many(db, [to_bundle(item) for item in items])


@dataclass
class Batch:
    """Responses and runs written together (snapshots first)."""

    responses: list[Response] = field(default_factory=list)
    runs: list[RunManifests] = field(default_factory=list)
