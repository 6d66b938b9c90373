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

from registry.digest import sha256_digest
from store.chunks import chunked
from store.publish import Bundle, PublishOutcome, publish_many
from store.snapshots import save_snapshot

from loaders.sol_execbench import SOURCE
from loaders.sol_execbench.fetch import Response
from loaders.sol_execbench.normalize import RunManifests


async def keep_snapshots(db: AsyncDatabase, responses: Sequence[Response]) -> int:
    """Save every response not kept yet; return how many were new.

    Which digests are already kept is read first (one query per 200), so that an unchanged
    re-import sends no write at all; `save_snapshot` is idempotent anyway.
    """
    by_digest = {sha256_digest(response.body): response for response in responses}
    kept: set[str] = set()
    for chunk in chunked(sorted(by_digest)):
        async for doc in db.source_snapshots.find({"_id": {"$in": chunk}}, {"_id": 1}):
            kept.add(doc["_id"])
    for digest, response in by_digest.items():
        if digest not in kept:
            await save_snapshot(
                db,
                source=SOURCE,
                url=response.url,
                fetched_at=response.fetched_at,
                body=response.body,
                status=response.status,
            )
    return len(by_digest) - len(kept)


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
