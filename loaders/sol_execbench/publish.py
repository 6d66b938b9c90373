"""Publish: keep the source snapshots, then the runs, in batches.

Snapshots go first, so a published run's `sourceSnapshot` annotation always points at a kept
response. Runs go through `store.publish.publish_many`, which is all-or-nothing per run,
idempotent (the same run again is `unchanged` and writes nothing) and supersedes the current
run of a source record whose content changed.

`BatchWriter` writes batches in order in a background task, so that the database works on one
batch while the next one is read and normalized (the loader yields after every page).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
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


@dataclass
class WriteTally:
    snapshots_saved: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: {"new": 0, "unchanged": 0, "superseded": 0})
    snapshot_seconds: float = 0.0
    publish_seconds: float = 0.0


async def write_batch(db: AsyncDatabase, batch: Batch, tally: WriteTally) -> None:
    started = time.perf_counter()
    tally.snapshots_saved += await keep_snapshots(db, batch.responses)
    tally.snapshot_seconds += time.perf_counter() - started
    started = time.perf_counter()
    for outcome in await publish_runs(db, batch.runs):
        tally.outcomes[outcome.status] += 1
    tally.publish_seconds += time.perf_counter() - started


class BatchWriter:
    """Writes batches one after the other in a background task; at most `depth` wait.

    `put` waits while the queue is full and re-raises the writer's error if it failed; `close`
    waits until everything is written. Use as `async with BatchWriter(db) as writer:`.
    """

    def __init__(self, db: AsyncDatabase, *, depth: int = 1, write: Callable = write_batch):
        self.db = db
        self.tally = WriteTally()
        self.waited_seconds = 0.0  # time the reader spent waiting for the writer
        self._write = write
        self._queue: asyncio.Queue[Batch | None] = asyncio.Queue(maxsize=depth)
        self._task: asyncio.Task | None = None

    async def __aenter__(self) -> BatchWriter:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            await self.close()
        elif not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass

    async def _run(self) -> None:
        while (batch := await self._queue.get()) is not None:
            await self._write(self.db, batch, self.tally)

    async def put(self, batch: Batch | None) -> None:
        started = time.perf_counter()
        try:
            if self._task.done():
                self._task.result()  # the writer failed: raise its error here
                raise RuntimeError("the batch writer has stopped")
            putting = asyncio.ensure_future(self._queue.put(batch))
            await asyncio.wait({putting, self._task}, return_when=asyncio.FIRST_COMPLETED)
            if not putting.done():
                putting.cancel()
                self._task.result()
                raise RuntimeError("the batch writer has stopped")
        finally:
            self.waited_seconds += time.perf_counter() - started

    async def close(self) -> None:
        await self.put(None)
        started = time.perf_counter()
        await self._task
        self.waited_seconds += time.perf_counter() - started
