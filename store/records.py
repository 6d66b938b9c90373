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
