"""Publish a batch: keep its source snapshots, then its runs through `store.publish.publish_many`.

Snapshots go first, so a published run's `sourceSnapshot` annotation always points at a kept
response. `publish_many` is all-or-nothing per run, idempotent (the same run again is
`unchanged` and writes nothing) and supersedes the current run of a source record whose content
changed. Snapshots already kept are not sent again, so an unchanged re-import writes nothing.
A run that was rebuilt and found unchanged (its record's fingerprint differed, e.g. the loader
changed) gets the new fingerprint, so the next import skips it (loaders/common/source_records.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from loaders.common.http import Response
from loaders.common.report import ImportReport
from registry.digest import sha256_digest
from store.bundle import Bundle
from store.client import Database
from store.publish import publish_many
from store.snapshots import save_snapshots
from store.source_records import remember


@dataclass
class Batch:
    """Responses and runs written together (snapshots first)."""

    responses: list[Response] = field(default_factory=list)
    runs: list[Any] = field(default_factory=list)


async def keep_snapshots(db: Database, source: str, responses: Sequence[Response]) -> int:
    """Save every response not kept yet; return how many were new."""
    return await save_snapshots(db, source=source, responses=[(r.url, r.fetched_at, r.body, r.status) for r in responses])


async def flush(
    db: Database | None,
    source: str,
    batch: Batch,
    report: ImportReport,
    to_bundle: Callable[[Any], Bundle],
) -> None:
    """Write one batch: its snapshots, then its runs, counting outcomes. In a dry run, only count."""
    report.snapshots_seen += len({sha256_digest(r.body) for r in batch.responses})
    if report.dry_run:
        return
    started = time.perf_counter()
    report.snapshots_saved += await keep_snapshots(db, source, batch.responses)
    report.phase_seconds["write snapshots"] += time.perf_counter() - started
    started = time.perf_counter()
    if batch.runs:
        bundles = [to_bundle(item) for item in batch.runs]
        outcomes = await publish_many(db, bundles)
        for outcome in outcomes:
            setattr(report, outcome.status, getattr(report, outcome.status) + 1)
        await remember(
            db, {o.run_digest: b.source_record for o, b in zip(outcomes, bundles) if o.status == "unchanged" and b.source_record}
        )
    report.phase_seconds["publish_many"] += time.perf_counter() - started
