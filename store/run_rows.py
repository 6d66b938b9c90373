"""The row of each current run whose document carries per-case samples, as the plain list of runs
shows it (`run_rows`; `_id`: the run's digest): its leaderboard row (store/leaderboards.py
`row_of`: the samples left out) and the digests a listed run's nested objects are found by
(store/queries.py LISTED_FIELDS).

The newest runs (the home page's ten, `runs(first:)`) are read as rows where they have one: our
controlled runs carry every timing sample of every case (38-92 kB each, against a row's ~2 kB),
and SecantusDB's cost per document grows with its size whatever the projection (ten of ours:
13.7 ms whole, 2.2 ms as rows, measured with bench/pages.py). Other runs' documents (~3 kB,
about twice their row) are read whole: a row for each of the bundled catalog's 7,857 cost its
import ~1.3-2.7 s (measured) to save ~3 ms on a page of 100.

Derived state, written by store/leaderboards.py `write` in the caller's transaction: a run's row
is rewritten whenever its group's leaderboard is, from the same members, so the two never
disagree, and only rows that changed are written (a publish moves a few ranks, not every row).
A run with no row is read whole: one without samples, one in a group over MAX_ROWS, one stored
before rows (a leaderboard backfill writes them).
"""

from __future__ import annotations

from typing import Any

from pymongo import DeleteMany, InsertOne, ReplaceOne
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from registry.controlled_format import SOURCE as SAMPLES_SOURCE
from store.chunks import chunked

Doc = dict[str, Any]
COLLECTION = "run_rows"

# What a row keeps beside the leaderboard row's fields (dotted paths): what a listed run's
# protocol, environment, workload, definition and group are looked up by.
REFERENCE_FIELDS = (
    "spec.protocolDigest",
    "spec.environmentDigest",
    "spec.workloadDigest",
    "definitionDigest",
    "groupKey",
    "source",
)
REFERENCE_PROJECTION = {path: 1 for path in REFERENCE_FIELDS}


def keeps_row(member: Doc, row: Doc) -> bool:
    """Whether the run gets a row: its leaderboard `row` left per-case samples out of it."""
    native, kept = (member.get("spec") or {}).get("sourceNative") or {}, (row.get("spec") or {}).get("sourceNative") or {}
    return len(native.get("metrics") or {}) > len(kept.get("metrics") or {})


def may_have_row(source: str | None) -> bool:
    """Whether a run of `source` can have a row: only our controlled runs' leaderboard rows leave
    samples out (registry/controlled_format.py run_level_metrics), so a page of other runs needs
    no lookup here."""
    return source == SAMPLES_SOURCE


def listed_row(member: Doc, row: Doc) -> Doc:
    """The member's leaderboard `row` with the member's REFERENCE_FIELDS added."""
    listed = {**row, "spec": dict(row.get("spec", {}))}
    for path in REFERENCE_FIELDS:
        head, _, rest = path.partition(".")
        if not rest:
            if head in member:
                listed[head] = member[head]
        elif rest in member.get(head, {}):
            listed.setdefault(head, {})[rest] = member[head][rest]
    return listed


async def write(db: AsyncDatabase, rows_by_group: dict[str, list[Doc]], session: AsyncClientSession | None) -> None:
    """Make the stored rows of each group `key` exactly `rows_by_group[key]` (the listed rows of
    its current runs that keep one): new rows inserted, changed ones replaced, those of runs that
    left the group's current runs deleted."""
    wanted = {row["_id"]: row for rows in rows_by_group.values() for row in rows}
    stored: dict[str, Doc] = {}
    for chunk in chunked(sorted(rows_by_group)):
        async for doc in db[COLLECTION].find({"groupKey": {"$in": chunk}}, session=session):
            stored[doc["_id"]] = doc
    changes: list[InsertOne | ReplaceOne | DeleteMany] = [InsertOne(row) for key, row in wanted.items() if key not in stored]
    changes += [ReplaceOne({"_id": key}, row) for key, row in wanted.items() if key in stored and stored[key] != row]
    gone = [key for key in stored if key not in wanted]
    if gone:
        changes.append(DeleteMany({"_id": {"$in": gone}}))
    if changes:
        await db[COLLECTION].bulk_write(changes, ordered=False, session=session)


async def rows_of(db: AsyncDatabase, digests: list[str]) -> dict[str, Doc]:
    """The stored rows of the runs `digests` (those that have one), by digest."""
    return {doc["_id"]: doc for doc in await db[COLLECTION].find({"_id": {"$in": digests}}).to_list()}
