"""Record history: each comparison group's sequence of #1s, with what made each one #1.

Written in the transaction that re-ranks a group (store/groups.apply), one document per change of
#1, keyed by the `seq` of that change's `group.changed` event, so the ledger and the event log
agree. Causes (registry-side meaning, README "Record history"):

- `new_run`: a newly published run took #1 (or the group's first ranked run);
- `correction`: a corrected run of the #1's own record (it supersedes the #1) is #1;
- `supersession`: the #1 was superseded by a corrected run that is not #1, so another run is;
- `retraction`: the #1 was superseded by a run that did not pass, or no ranked run is left.

Reads are index ranges: a group's records by (groupKey, seq), the newest changes by seq, an
operation's by (definitionDigest, seq).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from store import events
from store.chunks import chunked

Doc = dict[str, Any]
CAUSES = ("new_run", "correction", "supersession", "retraction")


def cause_of(old: str | None, new: str | None, arriving: list[Doc], leaving: set[str]) -> str:
    """Why #1 went from `old` to `new` (they differ) when `arriving` run documents were published
    and the runs in `leaving` were superseded."""
    by_id = {doc["_id"]: doc for doc in arriving}
    if new is None:
        return "retraction"
    if old is None:
        return "new_run"
    if new in by_id and by_id[new].get("supersedes") == old:
        return "correction"
    if old in leaving:
        replacement = next((doc for doc in arriving if doc.get("supersedes") == old), None)
        return "retraction" if replacement is not None and replacement.get("status") != "passed" else "supersession"
    return "new_run"


def record_document(group: Doc, *, seq: int, at: datetime, cause: str, run: str | None, previous: str | None) -> Doc:
    return {
        "_id": f"{group['_id']}:{seq}",
        "groupKey": group["_id"],
        "definitionDigest": group["definitionDigest"],
        "gpu": group["gpu"],
        "title": group.get("title", ""),
        "seq": seq,
        "at": at,
        "cause": cause,
        "runDigest": run,
        "previousDigest": previous,
    }


async def append(
    db: AsyncDatabase, group: Doc, *, seq: int, at: datetime, cause: str, run: str | None, previous: str | None, session: AsyncClientSession
) -> None:
    await db.records.insert_one(record_document(group, seq=seq, at=at, cause=cause, run=run, previous=previous), session=session)


async def group_records(db: AsyncDatabase, group_key: str) -> list[Doc]:
    """Oldest first."""
    return await db.records.find({"groupKey": group_key}).sort("seq", 1).to_list()


async def recent_records(
    db: AsyncDatabase, *, first: int, since: datetime | None = None, definition: str | None = None, group: str | None = None
) -> list[Doc]:
    """Newest first: every group's changes of #1 (or one operation's, or one group's), after `since` if given."""
    query: Doc = {}
    if definition is not None:
        query["definitionDigest"] = definition
    if group is not None:
        query["groupKey"] = group
    if since is not None:
        query["at"] = {"$gt": since}
    return await db.records.find(query).sort("seq", -1).limit(first).to_list()


def _moment(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


async def seed_from_catalog(db: AsyncDatabase, now: datetime) -> int:
    """The record events of imported catalogs (`record_history`, store/catalog.py) as this ledger's
    changes of #1, each group's oldest first, once (a ledger document names its event:
    `catalogEvent`); then, where the group's #1 by our ranking is not the catalog's last #1, the
    change to ours (cause `new_run`, at `now`: the import made it #1). Returns how many were written.

    The catalog's causes are the same words as ours (its 2,948 events are all `new_run`). Each gets
    a `seq` reserved from the event log's counter, in time order (so "newest first" by `seq`
    holds across the whole import); no event is written for it (they were the catalog's events).
    Idempotent: run after every catalog import and at start (for a database imported before)."""
    history = db.record_history
    if await history.estimated_document_count() == await db.records.count_documents({"catalogEvent": {"$exists": True}}):
        return 0
    seeded = set(await db.records.distinct("catalogEvent"))
    fresh = [e async for e in history.find({}) if e["_id"] not in seeded and e.get("runDigest")]
    groups: dict[str, Doc] = {}
    for chunk in chunked(sorted({e["comparisonKey"] for e in fresh})):  # SecantusDB: short `$in` lists (store/chunks.py)
        groups.update({g["_id"]: g async for g in db.comparison_groups.find({"_id": {"$in": chunk}})})
    fresh = [e for e in fresh if e["comparisonKey"] in groups and _moment(e.get("at")) is not None]
    if not fresh:
        return 0
    fresh.sort(key=lambda e: (_moment(e["at"]), e["_id"]))
    last: dict[str, Doc] = {}
    for e in fresh:
        last[e["comparisonKey"]] = e
    ours = [key for key, e in last.items() if groups[key].get("leaderDigest") != e["runDigest"]]
    seq = await events.reserve(db, len(fresh) + len(ours))
    docs = []
    for e in fresh:
        group = groups[e["comparisonKey"]]
        docs.append(_ledger_doc(group, seq, _moment(e["at"]), e.get("cause") or "new_run", e["runDigest"], e.get("previousRunDigest")))
        docs[-1]["catalogEvent"] = e["_id"]
        seq += 1
    for key in ours:
        group = groups[key]
        cause = "retraction" if group.get("leaderDigest") is None else "new_run"
        docs.append(_ledger_doc(group, seq, now, cause, group.get("leaderDigest"), last[key]["runDigest"]))
        seq += 1
    from store.publish import insert_ignoring_duplicates

    await insert_ignoring_duplicates(db.records, docs)
    return len(docs)


def _ledger_doc(group: Doc, seq: int, at: datetime, cause: str, run: str | None, previous: str | None) -> Doc:
    """A catalog record event as our ledger entry (a cause we do not know counts as a new run)."""
    return record_document(group, seq=seq, at=at, cause=cause if cause in CAUSES else "new_run", run=run, previous=previous)
