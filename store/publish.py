"""Publishing: a run with every object it references, idempotently and all-or-nothing.

- The same manifest twice is one document with one digest.
- A different run under an existing (source, externalId) is a new run that supersedes the old one;
  the old one is kept, marked `current: false` and `supersededBy`.
- Referenced objects are written before the run (each is a complete, immutable manifest on its
  own). Then one transaction writes the runs, the supersessions, the ranks, the groups' size,
  #1 and leaderboard (store/leaderboards.py) and every event: a crash leaves all of it or none of
  it, so a group never disagrees with its runs. It retries on a conflict with a concurrent writer
  (store.transactions).
- Each publication appends an event; comparison groups touched are recomputed, including one a
  superseded run leaves when its successor is in another group.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

from registry.digest import manifest_digest
from registry.evidence import derive_evidence_level
from registry.manifests import Manifest
from registry.ranking import rank_rule_for, rank_value
from store import definitions_stored, events, groups, leaderboards, source_records
from store.bundle import REFERENCED, Bundle, bundle_group, check_references
from store.chunks import chunked
from store.group_members import UNRANKED_ORDER
from store.schema import COLLECTION_BY_KIND
from store.transactions import in_transaction


@dataclass(frozen=True)
class PublishOutcome:
    status: Literal["new", "unchanged", "superseded"]
    run_digest: str
    superseded_digest: str | None = None
    group_key: str | None = None


@dataclass
class _Prepared:
    bundle: Bundle
    digests: dict[str, str]
    run_doc: dict[str, Any]
    external: tuple[str, str] | None
    position: int = 0
    superseded: str | None = None


class _DigestCache:
    """Bundles of one batch share their definition, workload, protocol and environment objects:
    canonicalize and hash each object once."""

    def __init__(self) -> None:
        self._by_object: dict[int, tuple[Manifest, str]] = {}

    def __call__(self, manifest: Manifest) -> str:
        hit = self._by_object.get(id(manifest))
        if hit is None or hit[0] is not manifest:
            hit = (manifest, manifest_digest(manifest))
            self._by_object[id(manifest)] = hit
        return hit[1]


def manifest_document(manifest: Manifest, digest: str, now: datetime) -> dict[str, Any]:
    return {"_id": digest, **manifest.to_json(), "storedAt": now}


def _run_document(bundle: Bundle, digests: dict[str, str], now: datetime) -> dict[str, Any]:
    spec = bundle.run.spec
    identity = bundle_group(bundle, digests)
    rule = rank_rule_for(bundle.protocol.spec)
    value, noise = rank_value(rule, spec)
    doc = manifest_document(bundle.run, digests["run"], now)
    doc.update(
        definitionDigest=digests["definition"],
        groupKey=identity.key(),
        gpu=bundle.environment.spec.hardware.product,
        status=spec.status.value,
        current=True,
        rank=None,
        rankOrder=UNRANKED_ORDER,
        rankValue=value,
        rankNoise=noise,
        verifiedBy=[bundle.verified_by] if bundle.verified_by else [],
        evidenceLevel=derive_evidence_level(
            implementation=bundle.implementation.spec,
            verifying_runners={bundle.verified_by} if bundle.verified_by else set(),
        ).value,
    )
    if spec.sourceNative is not None:
        doc["source"] = spec.sourceNative.source
        doc["externalId"] = spec.sourceNative.externalId
    else:
        doc["source"] = "kernelindex"
    if bundle.source_record:
        doc[source_records.FIELD] = bundle.source_record
    return doc


# More writes that must commit together with a publication (or not at all).
AlsoWrite = Callable[[AsyncClientSession], Awaitable[Any]]


async def publish(db: AsyncDatabase, bundle: Bundle, *, also: AlsoWrite | None = None) -> PublishOutcome:
    return (await publish_many(db, [bundle], also=also))[0]


async def publish_many(db: AsyncDatabase, bundles: Sequence[Bundle], *, also: AlsoWrite | None = None) -> list[PublishOutcome]:
    """Publish bundles in one batch: a few round trips per batch, not per run.

    Runs already stored are answered `unchanged` before anything else is looked at (a stored run
    implies everything it references is stored), so an unchanged re-import only reads.
    `also` runs in the publishing transaction after the runs are written (in a transaction of its
    own when every run was stored already); if it raises, nothing is published.
    """
    now = datetime.now(UTC)
    digest_of = _DigestCache()
    run_digests = [manifest_digest(bundle.run) for bundle in bundles]
    existing = await existing_ids(db.runs, set(run_digests))

    candidates: list[tuple[int, Bundle, dict[str, str]]] = []
    seen_in_batch: set[str] = set()
    for position, (bundle, digest) in enumerate(zip(bundles, run_digests)):
        if digest in existing or digest in seen_in_batch:
            continue  # stored already: its references were checked and stored with it
        seen_in_batch.add(digest)
        candidates.append((position, bundle, check_references(bundle, digest_of)))
    fresh: list[_Prepared] = []
    if candidates:
        await _insert_referenced_objects(db, [(b, d) for _, b, d in candidates], now)

        async def write(session: AsyncClientSession) -> list[_Prepared]:
            prepared = await _publish_in_transaction(db, session, candidates, now)
            if also is not None:
                await also(session)
            return prepared

        fresh = await in_transaction(db, write)
    elif also is not None:
        await in_transaction(db, also)
    published = {p.position: p for p in fresh}
    outcomes = []
    for position, digest in enumerate(run_digests):
        p = published.get(position)
        if p is None:
            outcomes.append(PublishOutcome("unchanged", digest))
        else:
            status = "superseded" if p.superseded else "new"
            outcomes.append(PublishOutcome(status, digest, p.superseded, p.run_doc["groupKey"]))
    return outcomes


async def _publish_in_transaction(
    db: AsyncDatabase, session: AsyncClientSession, candidates: list[tuple[int, Bundle, dict[str, str]]], now: datetime
) -> list[_Prepared]:
    """One attempt: everything it decides is read inside the transaction (a retry starts over)."""
    present = await existing_ids(db.runs, {d["run"] for _, _, d in candidates}, session=session)
    fresh = []
    for position, bundle, digests in candidates:
        if digests["run"] in present:
            continue  # a concurrent writer published it first
        doc = _run_document(bundle, digests, now)
        external = (doc["source"], doc["externalId"]) if "externalId" in doc else None
        fresh.append(_Prepared(bundle, digests, doc, external, position=position))
    if not fresh:
        return []
    current = await _current_runs_by_external_id(db, [p.external for p in fresh if p.external], session)
    _link_supersessions(fresh, current)

    by_group: dict[str, list[_Prepared]] = {}
    for p in fresh:
        by_group.setdefault(p.run_doc["groupKey"], []).append(p)
    plans = []
    for key, members in by_group.items():
        first = members[0]
        await groups.ensure_group(db, bundle_group(first.bundle, first.digests), first.bundle, first.digests, now, session)
        # Ranks go into the new documents before they are inserted; existing members whose
        # rank moves are updated after.
        leaving = {p.superseded for p in members if p.superseded}
        plans.append(await groups.plan(db, key, [p.run_doc for p in members], leaving=leaving, session=session))
    # A record that moved to another cohort leaves its old one: re-ranked, its size and #1 anew.
    for key, leaving in (await _cohorts_left(db, [p.superseded for p in fresh if p.superseded], set(by_group), session)).items():
        plans.append(await groups.plan(db, key, [], leaving=leaving, session=session))
    await _write_runs(db, fresh, now, session)
    await groups.apply(db, plans, now, session)
    if any(p.bundle.verified_by for p in fresh):
        await _refresh_replication(db, [p for p in fresh if p.bundle.verified_by], session)
    return fresh


def _link_supersessions(fresh: list[_Prepared], current: dict[tuple[str, str], str]) -> None:
    """A new run of a record supersedes the record's current run; when one batch holds the same
    record several times, each supersedes the one before and only the last stays current."""
    latest: dict[tuple[str, str], _Prepared] = {}
    for p in fresh:
        if p.external is None:
            continue
        before = latest.get(p.external)
        if before is not None:
            before.run_doc["current"] = False
            before.run_doc["supersededBy"] = p.digests["run"]
            p.superseded = before.digests["run"]
            p.run_doc["supersedes"] = p.superseded
        elif p.external in current:
            p.superseded = current[p.external]
            p.run_doc["supersedes"] = p.superseded
        latest[p.external] = p


async def _insert_referenced_objects(db: AsyncDatabase, bundles: list[tuple[Bundle, dict[str, str]]], now: datetime) -> None:
    by_collection: dict[str, dict[str, dict[str, Any]]] = {}
    for bundle, digests in bundles:
        for role in REFERENCED:
            manifest = getattr(bundle, role)
            digest = digests[role]
            collection = COLLECTION_BY_KIND[manifest.kind]
            docs = by_collection.setdefault(collection, {})
            if digest not in docs:  # shared objects (definition, protocol, …): one document each
                docs[digest] = manifest_document(manifest, digest, now)
    for collection, docs in by_collection.items():
        present = await existing_ids(db[collection], set(docs))
        missing = [doc for digest, doc in docs.items() if digest not in present]
        await insert_ignoring_duplicates(db[collection], missing)


async def insert_ignoring_duplicates(collection, docs: list[dict[str, Any]]) -> None:
    """Insert immutable documents; one that another writer inserted first is the same object.
    New definitions raise store/definitions_stored.py's number (the definitions' listing)."""
    if not docs:
        return
    try:
        await collection.insert_many(docs, ordered=False)
    except BulkWriteError as error:
        others = [e for e in error.details.get("writeErrors", []) if e.get("code") != 11000]
        if others:
            raise
    if collection.name == "definitions":
        await definitions_stored.raise_number(collection.database)


async def existing_ids(collection, ids: Iterable[str], session: AsyncClientSession | None = None) -> set[str]:
    found: set[str] = set()
    for chunk in chunked(sorted(ids)):
        async for doc in collection.find({"_id": {"$in": chunk}}, {"_id": 1}, session=session):
            found.add(doc["_id"])
    return found


async def _current_runs_by_external_id(
    db: AsyncDatabase, externals: list[tuple[str, str]], session: AsyncClientSession
) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    by_source: dict[str, set[str]] = {}
    for source, external_id in externals:
        by_source.setdefault(source, set()).add(external_id)
    for source, ids in by_source.items():
        async for doc in source_records.current_runs_of_records(db, source, ids, {"_id": 1}, session=session):
            out[(source, doc["externalId"])] = doc["_id"]
    return out


async def _write_runs(db: AsyncDatabase, fresh: list[_Prepared], now: datetime, session: AsyncClientSession) -> None:
    first_seq = await events.reserve(db, len(fresh), session)
    event_docs = []
    for offset, p in enumerate(fresh):
        p.run_doc["seq"] = first_seq + offset
        event_docs.append(
            events.event_document(
                first_seq + offset,
                "run.published",
                now,
                runDigest=p.digests["run"],
                groupKey=p.run_doc["groupKey"],
                definitionDigest=p.digests["definition"],
                gpu=p.run_doc["gpu"],
                source=p.run_doc["source"],
                supersedes=p.superseded,
            )
        )
    # Step the old runs aside first: the partial unique index admits one current run per
    # external id.
    for old, new in [(p.superseded, p.digests["run"]) for p in fresh if p.superseded]:
        await db.runs.update_one(
            {"_id": old, "current": True},
            {"$set": {"current": False, "supersededBy": new, "rank": None, "rankOrder": UNRANKED_ORDER}},
            session=session,
        )
    await db.runs.insert_many([p.run_doc for p in fresh], ordered=True, session=session)
    await db.events.insert_many(event_docs, ordered=True, session=session)


async def _cohorts_left(db: AsyncDatabase, superseded: list[str], ranked: set[str], session: AsyncClientSession) -> dict[str, set[str]]:
    """{cohort: its runs superseded here} for the cohorts of superseded runs not in `ranked`
    (those that gain no run: their successors are in other cohorts)."""
    left: dict[str, set[str]] = {}
    if superseded:
        async for doc in db.runs.find({"_id": {"$in": superseded}}, {"groupKey": 1}, session=session):
            if doc["groupKey"] not in ranked:
                left.setdefault(doc["groupKey"], set()).add(doc["_id"])
    return left


async def _refresh_replication(db: AsyncDatabase, verified: list[_Prepared], session: AsyncClientSession) -> None:
    """Two distinct runner identities verifying the same implementation on the same workload,
    protocol and GPU lift every such run to Independently Replicated."""
    for p in verified:
        spec = p.bundle.run.spec
        query = {
            "spec.implementationDigest": spec.implementationDigest,
            "spec.workloadDigest": spec.workloadDigest,
            "spec.protocolDigest": spec.protocolDigest,
            "gpu": p.run_doc["gpu"],
            "status": "passed",
        }
        runners: set[str] = set()
        verified_groups: set[str] = set()
        async for doc in db.runs.find(query, {"verifiedBy": 1, "groupKey": 1}, session=session):
            runners.update(doc.get("verifiedBy", []))
            if doc.get("verifiedBy"):
                verified_groups.add(doc["groupKey"])
        level = derive_evidence_level(implementation=p.bundle.implementation.spec, verifying_runners=runners).value
        await db.runs.update_many({**query, "verifiedBy": {"$ne": []}}, {"$set": {"evidenceLevel": level}}, session=session)
        await leaderboards.rebuild(db, verified_groups, session)  # their rows show the evidence level
