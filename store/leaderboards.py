"""A comparison group's leaderboard: its current runs in rank order, as one document shaped for
the pages that list them (the group page's rows, each group's #1, the dossier's group summary).

Derived state, written in the same transaction as the ranks it is derived from (store/groups.py
for publications, store/catalog.py for catalog plans): a reader never sees a leaderboard that
disagrees with the runs' ranks. Reading it is one document by `_id`, where the runs themselves
cost a `group_rank` range of whole run documents (about 0.5 ms each on SecantusDB; 27 ms for a
page of 50 at load 5).

Two parts: the rows, in `leaderboards` (`_id`: the group key; `rows`: every current run's row by
(rankOrder, seq), or None for a group over MAX_ROWS, whose pages read the runs instead); and the
head, on the group's own document (`comparison_groups.leaderboard`: `catalogRuns`, the current
runs imported from a catalog export, and `leader`, the #1's row or None), so the pages that show
groups get their #1 with the group and read no run at all. A row is the run document projected
to ROW_FIELDS: it reads as a run document does for the fields it has.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pymongo import ReplaceOne, UpdateOne
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from registry.controlled_format import run_level_metrics
from store import counters, run_rows
from store.chunks import chunked
from store.group_members import current_members
from store.transactions import in_transaction

Doc = dict[str, Any]
COLLECTION = "leaderboards"
HEAD = "leaderboard"  # the field of the group document that holds its head

# What a listed run shows: the run document's fields that a row keeps (dotted paths).
ROW_FIELDS = (
    "_id",
    "metadata.name",
    "metadata.title",
    "spec.observedAt",
    "spec.timing",
    "spec.measurements",
    "spec.sourceNative",
    "spec.implementationDigest",
    "catalog.primaryStatistic",
    "status",
    "current",
    "rank",
    "rankOrder",
    "seq",
    "evidenceLevel",
    "storedAt",
)
ROW_PROJECTION = {path: 1 for path in ROW_FIELDS}
# What ranking needs of the members besides, and the catalog flag (store/groups.py and
# store/catalog.py read members with both).
RANKING_FIELDS = {"rankValue": 1, "rankNoise": 1, "provenance.export.sha256": 1}
MEMBER_PROJECTION = ROW_PROJECTION | RANKING_FIELDS | run_rows.REFERENCE_PROJECTION
# The rows' shape: a database whose leaderboards have an older one gets them rebuilt on start
# (backfill). 2: per-case metrics left out. 3: the rows of runs with per-case samples also in
# run_rows (store/run_rows.py).
ROW_SHAPE = 3
SHAPE_MARK = "leaderboard-row-shape"  # in `counters`: every group's rows have this shape (backfill)
# A row is about 0.5-1 kB: past this many the document would be slower to read than a page of
# runs (and nearer MongoDB's 16 MB limit); such a group keeps its head only.
MAX_ROWS = 5_000


def row_of(run: Doc) -> Doc:
    """The run document projected to ROW_FIELDS (missing fields stay missing), without our
    harness's per-case metrics (every sample of every case: ~40 kB a run, which no list shows;
    resolvers/types/run.py `rows_answer` sends a query that asks for them to the runs)."""
    row: Doc = {}
    for path in ROW_FIELDS:
        head, _, rest = path.partition(".")
        if head not in run:
            continue
        if not rest:
            row[head] = run[head]
        elif isinstance(run[head], dict) and rest in run[head]:
            row.setdefault(head, {})[rest] = run[head][rest]
    native = row.get("spec", {}).get("sourceNative")
    if native and native.get("metrics"):
        row["spec"]["sourceNative"] = {**native, "metrics": run_level_metrics(native.get("source", ""), native["metrics"])}
    return row


def leaderboard(key: str, members: Iterable[Doc]) -> Doc:
    """The leaderboard of group `key` from its current runs (with their final rank, rankOrder and
    seq; superseded ones are left out here): {"_id", "rows", "head", "listed"} ("listed": the
    rows store/run_rows.py keeps; none past MAX_ROWS)."""
    current = sorted((m for m in members if m.get("current", True)), key=lambda m: (m["rankOrder"], m["seq"]))
    rows = [row_of(m) for m in current]
    kept = len(rows) <= MAX_ROWS
    firsts = [r for r in rows if r.get("rank") == 1]  # tied at 1: the first by id, as registry.ranking.leader
    head = {
        "catalogRuns": sum(1 for m in current if m.get("provenance")),
        "leader": min(firsts, key=lambda r: r["_id"]) if firsts else None,
        "shape": ROW_SHAPE,
    }
    listed = [run_rows.listed_row(m, row) for m, row in zip(current, rows) if run_rows.keeps_row(m, row)] if kept else []
    return {"_id": key, "rows": rows if kept else None, "head": head, "listed": listed}


async def write(db: AsyncDatabase, boards: list[Doc], session: AsyncClientSession | None) -> None:
    """Store leaderboards' rows (each replaces the one before) and their runs' rows
    (store/run_rows.py), inside the caller's transaction; the caller sets each head
    (`board["head"]`) on its group in the same update as the group's size and #1."""
    if boards:
        rows = [ReplaceOne({"_id": b["_id"]}, {"_id": b["_id"], "rows": b["rows"]}, upsert=True) for b in boards]
        await db[COLLECTION].bulk_write(rows, ordered=False, session=session)
        await run_rows.write(db, {b["_id"]: b["listed"] for b in boards}, session)


async def rebuild(db: AsyncDatabase, keys: Iterable[str], session: AsyncClientSession | None) -> None:
    """Read the current runs of each group and store its leaderboard (a change of runs that does
    not go through ranking, e.g. an evidence level lifted; and groups stored before this module)."""
    boards = [leaderboard(key, await current_members(db, key, MEMBER_PROJECTION, session)) for key in sorted(set(keys))]
    for chunk in chunked(boards, 100):
        await write(db, chunk, session)
        heads = [UpdateOne({"_id": b["_id"]}, {"$set": {HEAD: b["head"]}}) for b in chunk]
        await db.comparison_groups.bulk_write(heads, ordered=False, session=session)


async def backfill(db: AsyncDatabase) -> int:
    """Leaderboards for the groups that have none (a database written before they existed) or
    rows of an older shape, a transaction per 50 groups. Returns how many were built.

    Finding them reads every group (~40 µs each on SecantusDB: 9 s of every start at a million
    runs), so once none is left the shape is marked in `counters` and later starts read only
    the mark. Only code of this shape or newer writes groups after that (an older process still
    writing beside a newer one would go unseen: run one version against a database at a time)."""
    if await counters.value(db, SHAPE_MARK) >= ROW_SHAPE:
        return 0
    missing = [doc["_id"] async for doc in db.comparison_groups.find({f"{HEAD}.shape": {"$ne": ROW_SHAPE}}, {"_id": 1})]
    for chunk in chunked(missing, 50):

        async def build(session: AsyncClientSession, keys: list[str] = chunk) -> None:
            await rebuild(db, keys, session)

        await in_transaction(db, build)
    await db.counters.update_one({"_id": SHAPE_MARK}, {"$max": {"seq": ROW_SHAPE}}, upsert=True)
    return len(missing)


async def page(db: AsyncDatabase, key: str, *, first: int, after: tuple[int, int] | None) -> tuple[list[Doc], bool] | None:
    """Rows best first after the (rankOrder, seq) cursor `after`: (rows, has_next_page); None when
    the group has no leaderboard rows (not built yet, or over MAX_ROWS): read the runs instead."""
    doc = await db[COLLECTION].find_one({"_id": key}, {"rows": 1})
    if doc is None or doc.get("rows") is None:
        return None
    rows = doc["rows"]
    if after is not None:
        rows = [r for r in rows if (r["rankOrder"], r["seq"]) > after]
    return rows[:first], len(rows) > first
