"""The write path of the v1alpha1 format: a plan of documents (loaders/common/format_plan.py
`WritePlan`, from a verified catalog export or from a source's `FormatBundle`s) in few round trips.

The loader hands over documents ready to store; this module decides what is new, reconciles
or supersedes source records, ranks each touched cohort and writes:

1. the immutable objects (definitions, workloads, implementations, protocols, environments,
   projects, artifacts, serving objects): only those not stored yet; a stored one that lacks
   this export's provenance gets it added (its manifest never changes);
2. per batch of cohorts, in one transaction: the new runs, the ranks of members already stored
   that move, each cohort's size, #1 and leaderboard (store/leaderboards.py), its record history (the export's record events), the
   `run.published` / `group.changed` events; so a crash never leaves a cohort that disagrees
   with its runs;
3. last, the import's own record in `catalog_imports` (file, sha256, counts, sources and their
   licences): `serve` skips an export whose record is there.

Source records are reconciled (a catalog plan): a run whose (source, externalId) is already held
in its cohort by a current run with another digest (e.g. our SOL-ExecBench importer's run of the
same submission) is not written; the report names it. Or superseded (a source's plan,
`plan.supersede`): the new run of a corrected record supersedes the record's current run, which is
kept (`current: false`, `supersededBy`), in the same transaction as the new run, and both cohorts
are re-ranked there. The same digest is the same run (one document, both provenances).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pymongo import UpdateOne
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from registry.ranking import Entry, RankRule, leader, rank_entries
from store import events, leaderboards, records, source_records
from store.chunks import chunked
from store.group_members import UNRANKED_ORDER, current_members, rank_order
from store.publish import insert_ignoring_duplicates
from store.records import seed_from_catalog
from store.transactions import in_transaction

# Collections the catalog adds beside the manifest collections (store/schema.py declares them).
IMPORTS = "catalog_imports"
HISTORY = "record_history"
PROVENANCE = "provenance"  # the field on stored documents: a list of provenance records

# Cohorts written per transaction: big enough for few round trips, small enough for SecantusDB.
RUNS_PER_TRANSACTION = 2000


@dataclass
class WriteOutcome:
    new: dict[str, int] = field(default_factory=dict)  # collection → documents inserted
    unchanged: dict[str, int] = field(default_factory=dict)
    provenance_added: int = 0
    runs_new: int = 0
    runs_unchanged: int = 0
    reconciled: list[tuple[str, str, str, str]] = field(default_factory=list)  # (source, externalId, ours, theirs)
    superseded: dict[str, str] = field(default_factory=dict)  # new run → the run it superseded
    stored: set[str] = field(default_factory=set)  # runs of the plan found stored already (unchanged)
    groups_touched: int = 0
    history_new: int = 0
    records_seeded: int = 0  # the ledger's changes of #1 from the record events (store/records.py)
    seconds: dict[str, float] = field(default_factory=dict)  # where the time went, by step


async def imported(db: AsyncDatabase, export_sha256: str) -> dict[str, Any] | None:
    """The record of a completed import of this export, if any."""
    return await db[IMPORTS].find_one({"_id": export_sha256})


async def imported_file(db: AsyncDatabase, file_stat: dict[str, Any]) -> dict[str, Any] | None:
    """The record of a completed import made from this local file (its `fileStat`: path, size,
    mtime and the sha256 its latest.json stated), if any: a restart's check, reading no export."""
    return await db[IMPORTS].find_one({f"fileStat.{k}": v for k, v in file_stat.items()})


async def _add_provenance(db: AsyncDatabase, collection: str, docs: list[dict[str, Any]], key: str) -> int:
    """Add each document's provenance record of this export to its stored copy, which lacks it
    (one update per distinct record); how many changed."""
    by_record: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for doc in docs:
        for record in doc.get(PROVENANCE, ()):
            if record["export"]["sha256"] == key:
                marker = repr(sorted(record.items()))
                by_record.setdefault(marker, (record, []))[1].append(doc["_id"])
    changed = 0
    for record, ids in by_record.values():
        for chunk in chunked(sorted(ids), 500):
            result = await db[collection].update_many(
                {"_id": {"$in": chunk}, f"{PROVENANCE}.export.sha256": {"$ne": key}}, {"$push": {PROVENANCE: record}}
            )
            changed += result.modified_count
    return changed


async def _ids_in(db: AsyncDatabase, collection: str, ids: Iterable[str]) -> set[str]:
    """Which of `ids` are stored, by `$in` chunks of `_id`s: a cost of the ids asked, not of the
    collection. (A scan of every `_id` past 200 ids was cheaper in a small store and grew with it:
    at a million runs a 20,000-run plan's scans of the definitions and runs took seconds each,
    bench/README.md.)"""
    found: set[str] = set()
    for chunk in chunked(sorted(set(ids))):
        async for doc in db[collection].find({"_id": {"$in": chunk}}, {"_id": 1}):
            found.add(doc["_id"])
    return found


# Past this many ids, one collection scan beats `$in` queries with a second condition: SecantusDB
# plans `{_id: {$in}, other}` as a scan of the collection per query (store/chunks.py).
SCAN_OVER = 200


async def _lacking_provenance(db: AsyncDatabase, collection: str, ids: set[str], key: str) -> set[str]:
    """Which of `ids` (stored) do not name the export `key` in their provenance yet."""
    lacking = {f"{PROVENANCE}.export.sha256": {"$ne": key}}
    found: set[str] = set()
    if len(ids) > SCAN_OVER:
        async for doc in db[collection].find(lacking, {"_id": 1}):
            if doc["_id"] in ids:
                found.add(doc["_id"])
        return found
    for chunk in chunked(sorted(ids)):
        async for doc in db[collection].find({"_id": {"$in": chunk}, **lacking}, {"_id": 1}):
            found.add(doc["_id"])
    return found


async def write_plan(db: AsyncDatabase, plan: Any, now: datetime) -> WriteOutcome:
    """Write a loader's plan (loaders/common/format_plan.py `WritePlan`): its `export_sha256`
    (the export every document's `provenance` names, or None); `objects` (collection → documents
    with `_id`); `runs` (run documents without seq, rank or current: set here); `groups` (cohort
    key → group document); `history` (cohort key → record events); `import_record` (or None);
    `supersede` (module docstring)."""
    outcome = WriteOutcome()
    key = plan.export_sha256
    # 1. Immutable objects, looked up by `_id` in `$in` chunks, which keep
    # SecantusDB's per-query cost low (store/chunks.py).
    for collection, docs in plan.objects.items():
        started = time.perf_counter()
        ids = {doc["_id"] for doc in docs}
        present = await _ids_in(db, collection, ids)
        missing = [doc for doc in docs if doc["_id"] not in present]
        await insert_ignoring_duplicates(db[collection], missing)
        outcome.new[collection] = len(missing)
        outcome.unchanged[collection] = len(present)
        if key is not None:
            lacking = await _lacking_provenance(db, collection, present, key)
            outcome.provenance_added += await _add_provenance(db, collection, [d for d in docs if d["_id"] in lacking], key)
        outcome.seconds[collection] = time.perf_counter() - started
    started = time.perf_counter()

    # 2. Runs: what is stored already, by digest and by source record.
    by_digest = {doc["_id"]: doc for doc in plan.runs}
    stored = await _ids_in(db, "runs", by_digest)
    outcome.runs_unchanged = len(stored)
    outcome.stored = stored
    if key is not None:
        lacking = await _lacking_provenance(db, "runs", stored, key)
        outcome.provenance_added += await _add_provenance(db, "runs", [by_digest[d] for d in lacking], key)
    fresh = [doc for digest, doc in by_digest.items() if digest not in stored]
    held = await _current_by_source_record(db, [(d["source"], d["externalId"]) for d in fresh if "externalId" in d])
    in_export: dict[tuple[str, str], int] = {}
    # A source record is one run per cohort: a GPU MODE submission has a run in each of its
    # cases' cohorts, all named `submission/{id}` (the catalog's identity).
    latest_of: dict[tuple[str, str, str], dict[str, Any]] = {
        (doc["source"], doc["externalId"], doc["groupKey"]): doc for doc in fresh if "externalId" in doc
    }
    for doc in plan.runs:
        if "externalId" in doc:
            in_export[(doc["source"], doc["externalId"])] = in_export.get((doc["source"], doc["externalId"]), 0) + 1
    kept = []
    leaving: dict[str, str] = {}  # superseded run → its cohort
    for doc in fresh:
        record = (doc["source"], doc.get("externalId"))
        holders = held.get(record, {})
        if plan.supersede:
            if "externalId" in doc:
                latest = latest_of.get((*record, doc["groupKey"]))
                if latest is not None and latest is not doc:
                    continue  # the same record twice in one cohort of one plan: its last run is the record
                old = holders.get(doc["groupKey"])
                if old is None and len(holders) == 1 and in_export.get(record) == 1:
                    # A record that is one run (a SOL-ExecBench submission) moved to another cohort.
                    old = next(iter(holders.values()))
                if old is not None:
                    doc["supersedes"] = old
                    outcome.superseded[doc["_id"]] = old
                    leaving[old] = next(key for key, run in holders.items() if run == old)
            kept.append(doc)
            continue
        ours = holders.get(doc["groupKey"])
        if ours is None and len(holders) == 1 and in_export.get(record) == 1:
            # A record that is one run on both sides (a SOL-ExecBench submission) is one run even
            # when the other path put it in another cohort (e.g. an older dialect's key).
            ours = next(iter(holders.values()))
        if ours is not None:
            outcome.reconciled.append((doc["source"], doc["externalId"], ours, doc["_id"]))
        else:
            kept.append(doc)
    outcome.runs_new = len(kept)

    by_group: dict[str, list[dict[str, Any]]] = {}
    for doc in kept:
        by_group.setdefault(doc["groupKey"], []).append(doc)
    # Record history: events of this export not yet kept (by the export's event id).
    history_ids = {e["_id"] for events_ in plan.history.values() for e in events_}
    history_present = await _ids_in(db, HISTORY, history_ids)
    history_new = {k: [e for e in v if e["_id"] not in history_present] for k, v in plan.history.items()}
    touched = sorted(set(by_group) | {k for k, v in history_new.items() if v} | set(leaving.values()))
    outcome.groups_touched = len(by_group)
    outcome.history_new = sum(len(v) for v in history_new.values())

    outcome.seconds["runs: what is stored"] = time.perf_counter() - started
    started = time.perf_counter()
    # A supersession's two cohorts are written in one transaction: the cohorts linked by one go
    # first, together.
    linked = sorted({leaving[old] for old in leaving} | {doc["groupKey"] for doc in kept if "supersedes" in doc})
    touched = linked + [k for k in touched if k not in set(linked)]
    batch: list[str] = []
    size = 0
    also = getattr(plan, "also", None)
    for position, group_key in enumerate(touched):
        batch.append(group_key)
        size += len(by_group.get(group_key, ()))
        if size >= RUNS_PER_TRANSACTION and position >= len(linked) - 1 and position < len(touched) - 1:
            await _write_groups(db, plan, batch, by_group, history_new, now, leaving)
            batch, size = [], 0
    if batch:
        await _write_groups(db, plan, batch, by_group, history_new, now, leaving, also=also)
    elif also is not None:
        await in_transaction(db, also)

    outcome.seconds["runs, cohorts, history (transactions)"] = time.perf_counter() - started
    # The catalog's record events as the ledger's changes of #1 (the group page's staircase,
    # recordChanges), before the import's record: a crash in between is completed next time.
    outcome.records_seeded = await seed_from_catalog(db, now)
    # 3. The import's record, last: its presence means everything above is stored.
    if plan.import_record is not None and await db[IMPORTS].find_one({"_id": key}, {"_id": 1}) is None:
        await db[IMPORTS].insert_one({"_id": key, **plan.import_record, "importedAt": now})
    return outcome


async def _current_by_source_record(db: AsyncDatabase, records: list[tuple[str, str]]) -> dict[tuple[str, str], dict[str, str]]:
    """(source, externalId) → {cohort: the current run that holds that source record there}."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    by_source: dict[str, set[str]] = {}
    for source, external_id in records:
        by_source.setdefault(source, set()).add(external_id)
    for source, ids in by_source.items():
        async for doc in source_records.current_runs_of_records(db, source, ids, {"_id": 1, "groupKey": 1}, chunk=500):
            out.setdefault((source, doc["externalId"]), {})[doc["groupKey"]] = doc["_id"]
    return out


async def _write_groups(
    db: AsyncDatabase,
    plan: Any,
    group_keys: list[str],
    by_group: dict[str, list[dict[str, Any]]],
    history: dict[str, list[dict[str, Any]]],
    now: datetime,
    leaving: dict[str, str],
    also: Any = None,
) -> None:
    async def work(session: AsyncClientSession) -> None:
        # Everything decided here is read inside the transaction (a retry starts over).
        # `$in` chunks of IN_CHUNK: SecantusDB matches each candidate against the whole list, so
        # one `$in` of a batch's ~2,000 keys cost seconds once the collection held them.
        groups: dict[str, dict[str, Any]] = {}
        for chunk in chunked(group_keys):
            async for g in db.comparison_groups.find({"_id": {"$in": chunk}}, session=session):
                groups[g["_id"]] = g
        members: dict[str, list[dict[str, Any]]] = {}
        for chunk in chunked(group_keys):
            # `groupKey` alone, `current` checked here: beside it SecantusDB scans every run
            # (store/group_members.py), a cost per chunk that grew with the store.
            fields = {**leaderboards.MEMBER_PROJECTION, "groupKey": 1, "current": 1}
            async for doc in db.runs.find({"groupKey": {"$in": chunk}}, fields, session=session):
                if doc["current"] is True and doc["_id"] not in leaving:  # not superseded, before or in this write
                    members.setdefault(doc["groupKey"], []).append(doc)
        arriving = [dict(doc) for key in group_keys for doc in by_group.get(key, ())]
        first_seq = await events.reserve(db, len(arriving) + len(group_keys), session) if arriving or group_keys else 0
        seq = first_seq
        new_groups, group_updates, rank_updates, event_docs, record_docs, boards = [], [], [], [], [], []
        superseded_here = {old for old in leaving if leaving[old] in group_keys}
        by_key: dict[str, list[dict[str, Any]]] = {}
        for doc in arriving:
            by_key.setdefault(doc["groupKey"], []).append(doc)
        for key in group_keys:
            # Each cohort's runs, then its group.changed event: numbered in turn, so that the
            # newest runs are never behind a block of a whole batch's group events (the newest
            # runs list reads events by seq window, each one fetched: bench/README.md, 6/8).
            for doc in by_key.get(key, ()):
                doc.update(seq=seq, current=True, storedAt=now)
                seq += 1
            group = groups.get(key)
            is_new = group is None
            if is_new:
                group = {**plan.groups[key], "_id": key, "size": 0, "rankedSize": 0, "leaderDigest": None, "createdAt": now}
            rule = RankRule(**group["rankRule"])
            old = members.get(key, [])
            incoming = by_key.get(key, [])
            ranks = rank_entries(rule, [Entry(m["_id"], m.get("rankValue"), m.get("rankNoise") or 0.0) for m in [*old, *incoming]])
            for doc in incoming:
                doc["rank"] = ranks[doc["_id"]]
                doc["rankOrder"] = rank_order(doc["rank"])
            for m in old:
                if m.get("rank") != ranks[m["_id"]]:
                    rank_updates.append(
                        UpdateOne({"_id": m["_id"]}, {"$set": {"rank": ranks[m["_id"]], "rankOrder": rank_order(ranks[m["_id"]])}})
                    )
                m["rank"], m["rankOrder"] = ranks[m["_id"]], rank_order(ranks[m["_id"]])
            board = leaderboards.leaderboard(key, [*old, *incoming])
            boards.append(board)
            new_leader = leader(ranks)
            size = len(ranks)
            ranked = sum(1 for r in ranks.values() if r is not None)
            old_leader = group.get("leaderDigest")
            settled = {"size": size, "rankedSize": ranked, "leaderDigest": new_leader, leaderboards.HEAD: board["head"], "updatedAt": now}
            if is_new:
                new_groups.append({**group, **settled})  # inserted as it ends, not inserted then updated
            else:
                group_updates.append(UpdateOne({"_id": key}, {"$set": settled}))
            for doc in incoming:
                event_docs.append(
                    events.event_document(
                        doc["seq"],
                        "run.published",
                        now,
                        runDigest=doc["_id"],
                        groupKey=key,
                        definitionDigest=doc["definitionDigest"],
                        gpu=doc["gpu"],
                        source=doc["source"],
                        **({"supersedes": doc["supersedes"]} if doc.get("supersedes") else {}),
                    )
                )
            event_docs.append(
                events.event_document(
                    seq,
                    "group.changed",
                    now,
                    groupKey=key,
                    definitionDigest=group["definitionDigest"],
                    oldLeader=old_leader,
                    newLeader=new_leader,
                    leaderChanged=new_leader != old_leader,
                    size=size,
                )
            )
            if new_leader != old_leader and not plan.history:
                # A source's own plan: our record history, as store.groups.apply keeps it (a
                # catalog plan brings the seed system's).
                cause = records.cause_of(old_leader, new_leader, incoming, superseded_here)
                record_docs.append(records.record_document(group, seq=seq, at=now, cause=cause, run=new_leader, previous=old_leader))
            seq += 1
        if new_groups:
            await db.comparison_groups.insert_many(new_groups, ordered=False, session=session)
        # Step superseded runs aside before their successors arrive: the partial unique index
        # admits one current run per source record.
        for doc in arriving:
            if doc.get("supersedes"):
                await db.runs.update_one(
                    {"_id": doc["supersedes"], "current": True},
                    {"$set": {"current": False, "supersededBy": doc["_id"], "rank": None, "rankOrder": UNRANKED_ORDER}},
                    session=session,
                )
        if arriving:
            await db.runs.insert_many(arriving, ordered=False, session=session)
        if rank_updates:
            await db.runs.bulk_write(rank_updates, ordered=False, session=session)
        if group_updates:
            await db.comparison_groups.bulk_write(group_updates, ordered=False, session=session)
        await leaderboards.write(db, boards, session)
        entries = [{**e, "storedAt": now} for key in group_keys for e in history.get(key, ())]
        if entries:
            await db[HISTORY].insert_many(entries, ordered=False, session=session)
        if event_docs:
            await db.events.insert_many(event_docs, ordered=False, session=session)
        if record_docs:
            await db.records.insert_many(record_docs, ordered=False, session=session)
        if also is not None:
            await also(session)

    await in_transaction(db, work)


_IMPORT_RECORDS: dict[str, dict[str, Any]] = {}


async def import_record(db: AsyncDatabase, export_sha256: str) -> dict[str, Any] | None:
    """The stored record of an export's import (immutable once written: cached per process)."""
    if export_sha256 not in _IMPORT_RECORDS:
        record = await db[IMPORTS].find_one({"_id": export_sha256})
        if record is None:
            return None
        _IMPORT_RECORDS[export_sha256] = record
    return _IMPORT_RECORDS[export_sha256]


async def catalog_runs_in_group(db: AsyncDatabase, group_key: str) -> int:
    """Read through the group's `group_rank` range (store/group_members.py), not counted with a
    filter: SecantusDB plans `{groupKey, current, provenance}` as a scan of every run (68 ms at
    7,885 runs on the shared machine, growing with the store), the range costs the group's size."""
    members = await current_members(db, group_key, {"_id": 1, f"{PROVENANCE}.export.sha256": 1})
    return sum(1 for member in members if member.get(PROVENANCE))


async def catalog_imports(db: AsyncDatabase) -> list[dict[str, Any]]:
    return await db[IMPORTS].find({}).sort("importedAt", 1).to_list()


async def group_history(db: AsyncDatabase, group_key: str, limit: int = 100) -> list[dict[str, Any]]:
    return await db[HISTORY].find({"comparisonKey": group_key}).sort("at", -1).limit(limit).to_list()


UNRANKED = UNRANKED_ORDER
