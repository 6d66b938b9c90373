"""Read queries the API needs, keyset-paginated (never skip/limit over large offsets)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

Doc = dict[str, Any]


# The first window of `seq` values a runs page reads, per run wanted: seq also numbers events,
# so a window holds fewer runs than values (0.7 to 0.95 per value in bulk imports).
WINDOW_PER_RUN = 2
MIN_WINDOW = 32


async def runs_page(db: AsyncDatabase, *, query: dict[str, Any], first: int, after_seq: int | None) -> tuple[list[Doc], bool]:
    """Newest first. Returns (page, has_next_page).

    Runs are read in windows of `seq` (the event sequence, dense across runs and events) that
    grow geometrically, each one an index range: SecantusDB otherwise sorts every matching
    document to find the newest hundred. A sparse filter costs a few more windows."""
    upper = after_seq
    if upper is None:
        counter = await db.counters.find_one({"_id": "events"}, {"seq": 1})
        upper = (counter or {}).get("seq", 0) + 1
    wanted = first + 1
    docs: list[Doc] = []
    window = max(MIN_WINDOW, WINDOW_PER_RUN * wanted)
    while len(docs) < wanted and upper > 0:
        lower = max(0, upper - window)
        found = await db.runs.find({**query, "seq": {"$gte": lower, "$lt": upper}}).sort("seq", -1).limit(wanted - len(docs)).to_list()
        docs += found
        upper, window = lower, window * 4
    return docs[:first], len(docs) > first


async def attestations_page(db: AsyncDatabase, *, subject: str, first: int, after_seq: int | None) -> tuple[list[Doc], bool]:
    query: dict[str, Any] = {"spec.subjectDigest": subject}
    if after_seq is not None:
        query["seq"] = {"$gt": after_seq}
    docs = await db.attestations.find(query).sort("seq", 1).limit(first + 1).to_list()
    return docs[:first], len(docs) > first


async def run_by_external_id(db: AsyncDatabase, source: str, external_id: str) -> Doc | None:
    """The current run of a source's record."""
    return await db.runs.find_one({"source": source, "externalId": external_id, "current": True})


# Our definitions have `spec.name`; v1alpha1 OperationSpecs (the catalog's) have none and are
# listed after ours by `metadata.name`; their cursors carry this prefix.
V1_CURSOR = "v1:"


def definition_cursor(doc: Doc) -> str:
    name = doc["spec"].get("name")
    return name if name is not None else V1_CURSOR + doc["metadata"]["name"]


async def definitions_by_name(db: AsyncDatabase) -> list[Doc]:
    ours = await db.definitions.find({"spec.name": {"$exists": True}}).sort("spec.name", 1).to_list()
    return ours + await db.definitions.find({"spec.name": {"$exists": False}}).sort("metadata.name", 1).to_list()


async def definitions_page(db: AsyncDatabase, *, words: list[str], first: int, after_name: str | None) -> tuple[list[Doc], bool, int]:
    """Definitions whose name, title or the GPU of one of their comparison groups contains every
    word (case-insensitive; "h200" finds what was measured on an NVIDIA H200), by name after
    `after_name`. Returns (page, has_next_page, how many match in all)."""
    conditions = []
    for word in words:
        pattern = {"$regex": re.escape(word), "$options": "i"}
        on_gpu = await db.comparison_groups.distinct("definitionDigest", {"$or": [{"gpu.product": pattern}, {"gpu.architecture": pattern}]})
        conditions.append(
            {"$or": [{"spec.name": pattern}, {"metadata.name": pattern}, {"metadata.title": pattern}, {"_id": {"$in": on_gpu}}]}
        )
    query: dict[str, Any] = {"$and": conditions} if conditions else {}
    total = await db.definitions.count_documents(query)
    docs: list[Doc] = []
    if after_name is None or not after_name.startswith(V1_CURSOR):
        ours = {"spec.name": {"$exists": True, **({"$gt": after_name} if after_name is not None else {})}}
        docs = await db.definitions.find({"$and": [query, ours]}).sort("spec.name", 1).limit(first + 1).to_list()
    if len(docs) <= first:
        theirs: dict[str, Any] = {"spec.name": {"$exists": False}}
        if after_name is not None and after_name.startswith(V1_CURSOR):
            theirs["metadata.name"] = {"$gt": after_name.removeprefix(V1_CURSOR)}
        docs += await db.definitions.find({"$and": [query, theirs]}).sort("metadata.name", 1).limit(first + 1 - len(docs)).to_list()
    return docs[:first], len(docs) > first, total


async def definition_named(db: AsyncDatabase, name: str) -> Doc | None:
    """Ours by `spec.name`; a v1alpha1 OperationSpec (no spec.name) by its `metadata.name`."""
    return await db.definitions.find_one({"spec.name": name}) or await db.definitions.find_one({"metadata.name": name})


async def related_definitions(db: AsyncDatabase, *, digest: str, name: str, names: list[str], digests: list[str]) -> list[Doc]:
    """Definitions that this one names (by benchmark `names` or `digests`), or that name it."""
    query = {
        "_id": {"$ne": digest},
        "$or": [
            {"spec.name": {"$in": names}},
            {"_id": {"$in": digests}},
            {"spec.relations.benchmark": name},
            {"spec.relations.definitionDigest": digest},
        ],
    }
    return await db.definitions.find(query).to_list()


async def group_exists(db: AsyncDatabase, group_key: str) -> bool:
    return await db.comparison_groups.find_one({"_id": group_key}, {"_id": 1}) is not None


async def jobs_page(db: AsyncDatabase, *, query: dict[str, Any], first: int, after: tuple[datetime, str] | None) -> tuple[list[Doc], bool]:
    """Newest first, keyed on (createdAt, _id): createdAt alone (milliseconds) is not unique,
    and jobs created within one millisecond would be skipped between pages."""
    if after is not None:
        created, job_id = after
        query = {**query, "$or": [{"createdAt": {"$lt": created}}, {"createdAt": created, "_id": {"$lt": job_id}}]}
    docs = await db.jobs.find(query).sort([("createdAt", -1), ("_id", -1)]).limit(first + 1).to_list()
    return docs[:first], len(docs) > first


async def job_by_idempotency_key(db: AsyncDatabase, requested_by: str, idempotency_key: str) -> Doc | None:
    return await db.jobs.find_one({"requestedBy": requested_by, "idempotencyKey": idempotency_key})


async def job_watchers(db: AsyncDatabase, job_id: str) -> Doc | None:
    """What deciding who may watch a job needs: its requester, lease and past holders."""
    return await db.jobs.find_one({"_id": job_id}, {"requestedBy": 1, "lease": 1, "history.runner": 1})
