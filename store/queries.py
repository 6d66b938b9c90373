"""Read queries the API needs, keyset-paginated (never skip/limit over large offsets)."""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from store import definitions_stored, events, run_rows
from store.leaderboards import ROW_FIELDS

Doc = dict[str, Any]


# The first window of `seq` values a runs page reads, per run wanted: seq also numbers events,
# so a window holds fewer runs than values (0.7 to 0.95 per value in bulk imports).
WINDOW_PER_RUN = 2
# ... and of events, for the plain list: a publication takes a run.published and a group.changed
# event and, when the #1 changes, a record's number (events are small: a wide window costs little).
EVENTS_PER_RUN = 4
MIN_WINDOW = 32
WIDEST_WINDOW = 256
# Conditions with an index of their own beside `seq` (store/schema.py: definition_seq).
INDEXED_WITH_SEQ = ("definitionDigest",)


# A listed run: a leaderboard row's fields and what it references (the API's lists ask for no
# more unless they ask for the manifest, cases or the like; then they read whole documents).
LISTED_FIELDS = {path: 1 for path in ROW_FIELDS} | {
    "spec.protocolDigest": 1,
    "spec.environmentDigest": 1,
    "spec.workloadDigest": 1,
    "definitionDigest": 1,
    "groupKey": 1,
    "source": 1,
}


async def runs_page(
    db: AsyncDatabase,
    *,
    query: dict[str, Any],
    first: int,
    after_seq: int | None,
    projection: dict[str, int] | None = None,
    rows: bool = False,
) -> tuple[list[Doc], bool]:
    """Newest first. Returns (page, has_next_page): whole run documents, or with `projection`
    (e.g. LISTED_FIELDS) only those fields (and those the paging reads). With `rows` (the caller
    asks nothing a run's row leaves out: store/run_rows.py) the plain list gives each run's row
    where it has one.

    Runs are read in windows of `seq` (the event sequence, dense across runs and events) that
    grow geometrically, each one an index range: SecantusDB otherwise sorts every matching
    document to find the newest hundred. A sparse filter costs a few more windows. The plain
    list (no filter but `current`) walks the events' windows and reads only the runs it keeps."""
    upper = after_seq
    if upper is None:
        upper = await events.last_seq(db) + 1
    wanted = first + 1
    docs: list[Doc] = []
    # SecantusDB walks an index only for a filter its keys cover exactly (`seq`; `definitionDigest`
    # and `seq`): with `current: true` beside it, it scans and sorts every run (110 ms at 7,885
    # runs; a definition's page of 100 took 1.4 s). So a definition's list sends only the
    # definition and the range, any other list only its other conditions and the range, and the
    # rest (`current` always: superseded runs are few) is checked here.
    indexed = {k: query[k] for k in INDEXED_WITH_SEQ if k in query}
    sent = indexed or {k: v for k, v in query.items() if k != "current"}
    checked = {k: v for k, v in query.items() if k not in sent}
    fields = None if projection is None or not sent else {**projection, "seq": 1, **dict.fromkeys(checked, 1)}
    window = max(MIN_WINDOW, (WINDOW_PER_RUN if sent else EVENTS_PER_RUN) * wanted)
    # No window is wider than WIDEST_WINDOW or four first windows: past a stretch of seq values
    # without runs (a catalog import numbers its records' history after its runs) the geometric
    # steps below would otherwise land on a window holding thousands of runs, every one fetched
    # (392 ms for one page of 100 at the bundled data's 7,887 runs). An empty window costs about a
    # millisecond; a long gap costs a few of them instead. A range of the (definitionDigest, seq)
    # index fetches only the definition's runs, so its windows may be wider: a small definition's
    # list crosses the whole history in a few of them.
    widest = max(WIDEST_WINDOW, (16 if indexed else 4) * window)
    while len(docs) < wanted and upper > 0:
        lower = max(0, upper - window)
        need = wanted - len(docs)
        if sent:
            found = await db.runs.find({**sent, "seq": {"$gte": lower, "$lt": upper}}, fields).sort("seq", -1).limit(need).to_list()
        else:
            found = await _published_runs(db, lower, upper, need, rows)
        docs += [d for d in found if all(d.get(k) == v for k, v in checked.items())]
        if len(found) == need:  # the window may hold more (superseded ones were left out): go on below the last
            upper = found[-1]["seq"]
            continue
        # The next window: what this one's density says the rest needs (a quarter more), at most
        # four times this one. SecantusDB fetches every run of a range before the limit applies,
        # so a window much wider than needed costs its whole width (a store of one-run cohorts
        # has ~2 values a run: a fixed ×4 step read ~400 runs to find the last few of a page).
        density = len(found) / (upper - lower)
        rest = wanted - len(docs)
        window = min(window * 4, max(MIN_WINDOW, math.ceil(rest / density * 1.25))) if density else window * 4
        window = min(window, widest)
        upper = lower
    return docs[:first], len(docs) > first


async def _published_runs(db: AsyncDatabase, lower: int, upper: int, need: int, rows: bool) -> list[Doc]:
    """The newest `need` runs published with a seq in [lower, upper), newest first, found by their
    `run.published` events (a run and its event share a seq; both are written in one transaction).
    SecantusDB fetches every document of a range before a limit applies: a range of events (~0.3
    kB each) instead of runs (ours carry every per-case sample, ~42 kB) costs little, and only the
    runs the page needs are read, by `_id`: with `rows`, their rows (store/run_rows.py), the rest
    whole (SecantusDB projects a document slower than it sends it: 11 of our runs, 15.7 ms whole,
    26.9 ms with LISTED_FIELDS)."""
    window = db.events.find({"seq": {"$gte": lower, "$lt": upper}}, {"_id": 0, "seq": 1, "type": 1, "runDigest": 1, "source": 1})
    found = await window.batch_size(upper - lower + 1).to_list()  # one round trip: a seq is unique
    published = sorted((e for e in found if e["type"] == "run.published"), key=lambda e: e["seq"], reverse=True)[:need]
    if not published:
        return []
    digests = [e["runDigest"] for e in published]
    with_rows = [e["runDigest"] for e in published if rows and run_rows.may_have_row(e.get("source"))]
    runs = await run_rows.rows_of(db, with_rows) if with_rows else {}
    if missing := [d for d in digests if d not in runs]:
        runs |= {d["_id"]: d for d in await db.runs.find({"_id": {"$in": missing}}).to_list()}
    return [runs[d] for d in digests if d in runs]


async def attestations_page(db: AsyncDatabase, *, subject: str, first: int, after_seq: int | None) -> tuple[list[Doc], bool]:
    query: dict[str, Any] = {"spec.subjectDigest": subject}
    if after_seq is not None:
        query["seq"] = {"$gt": after_seq}
    docs = await db.attestations.find(query).sort("seq", 1).limit(first + 1).to_list()
    return docs[:first], len(docs) > first


async def run_by_external_id(db: AsyncDatabase, source: str, external_id: str) -> Doc | None:
    """The current run of a source's record.

    Found through the `external_id` index alone, source and `current` checked here: SecantusDB
    plans `{source, externalId, current}` as a scan of every run (the README's seed query)."""
    async for doc in db.runs.find({"externalId": external_id}):
        if doc.get("source") == source and doc.get("current"):
            return doc
    return None


# Our definitions (the older dialect's `spec.name`, or a v1alpha1 OperationSpec labelled
# `project: kernelindex`) are listed first by name; the other v1alpha1 OperationSpecs (the
# catalog's) after them by `metadata.name`; their cursors carry this prefix.
V1_CURSOR = "v1:"
OURS = {"$or": [{"spec.name": {"$exists": True}}, {"metadata.labels.project": "kernelindex"}]}
NOT_OURS = {"spec.name": {"$exists": False}, "metadata.labels.project": {"$ne": "kernelindex"}}


def _our_name(doc: Doc) -> str | None:
    name = (doc.get("spec") or {}).get("name")
    if name is None and ((doc.get("metadata") or {}).get("labels") or {}).get("project") == "kernelindex":
        return doc["metadata"]["name"]
    return name


def definition_cursor(doc: Doc) -> str:
    name = _our_name(doc)
    return name if name is not None else V1_CURSOR + doc["metadata"]["name"]


async def definitions_by_name(db: AsyncDatabase, limit: int | None = None) -> list[Doc]:
    """Definitions by name (ours, then the v1alpha1 ones), at most `limit` of them."""
    ours = sorted(await db.definitions.find(OURS).to_list(), key=_our_name)  # a handful
    if limit is not None and len(ours) >= limit:
        return ours[:limit]
    rest = db.definitions.find(NOT_OURS).sort("metadata.name", 1)
    return ours + await rest.limit(0 if limit is None else limit - len(ours)).to_list()


@dataclass(frozen=True)
class ListedDefinition:
    """What listing and searching definitions by name needs of one (all of it immutable: a
    definition is a content-addressed manifest; only its provenance list ever grows)."""

    digest: str
    order: tuple[int, str]  # ours (spec.name) first, then v1alpha1 ones by metadata.name
    names: tuple[str, ...]  # lower-cased name(s) and title, what a search word may be part of


@dataclass(frozen=True)
class _Listing:
    count: int
    stored: int  # store/definitions_stored.py's number, read before the definitions were
    counted_at: float  # time.monotonic() of the last count that agreed with `count`
    definitions: list[ListedDefinition]
    gpu_count: int = -1  # the event counter the GPUs were read at
    gpus: dict[str, str] = field(default_factory=dict)  # definition digest -> its groups' GPUs, lower-cased


# The listing of every definition, per database, kept while no definition has been stored since.
# SecantusDB 0.7 reads every document of a query that is not a plain index range (and a sort
# or limit does not stop it): listing 451 definitions by name cost 120-300 ms, 40 times a
# 20-definition page, on the shared 2-core machine. Definitions are never deleted and their
# names never change, so the listing is whole while store/definitions_stored.py's number reads
# the same (it is read before the documents, so a definition stored between the two is read
# again next time) and, checked every RECOUNT_S, the definitions' count does (for a writer killed
# between its insert and raising that number; counting walks every definition).
_LISTINGS: OrderedDict[tuple[int, str], _Listing] = OrderedDict()
_LISTINGS_KEPT = 16
RECOUNT_S = 10.0


def _listed(doc: Doc) -> ListedDefinition:
    metadata = doc.get("metadata") or {}
    name = _our_name(doc)
    order = (0, name) if name is not None else (1, metadata.get("name", ""))
    names = tuple(t.lower() for t in (name, metadata.get("name"), metadata.get("title")) if isinstance(t, str))
    return ListedDefinition(digest=doc["_id"], order=order, names=names)


async def _definition_listing(db: AsyncDatabase, *, with_gpus: bool, fresh: bool = False) -> _Listing:
    key = (id(db.client), db.name)
    stored, count = await asyncio.gather(definitions_stored.number(db), db.definitions.estimated_document_count())
    listing = _LISTINGS.get(key)
    if fresh or listing is None or listing.count != count or listing.stored != stored:
        docs = await db.definitions.find(
            {}, {"spec.name": 1, "metadata.name": 1, "metadata.title": 1, "metadata.labels.project": 1}
        ).to_list()
        listing = _Listing(count, stored, time.monotonic(), sorted(map(_listed, docs), key=lambda d: d.order))
    else:
        listing = replace(listing, counted_at=time.monotonic())
    if with_gpus:
        # A group is only ever created in a transaction that also takes an event number, and its
        # definition and GPU never change: while the event counter reads the same, so do these.
        # (Counting the groups instead walks all of them: 1,913 in the bundled data, 50,000+ at scale.)
        groups = await events.last_seq(db)
        if groups != listing.gpu_count:
            gpus: dict[str, list[str]] = {}
            async for group in db.comparison_groups.find({}, {"definitionDigest": 1, "gpu": 1}):
                gpu = group.get("gpu") or {}
                gpus.setdefault(group["definitionDigest"], []).extend(str(gpu.get(k, "")).lower() for k in ("product", "architecture"))
            listing = replace(listing, gpu_count=groups, gpus={d: "\n".join(v) for d, v in gpus.items()})
    _LISTINGS[key] = listing
    _LISTINGS.move_to_end(key)
    while len(_LISTINGS) > _LISTINGS_KEPT:
        _LISTINGS.popitem(last=False)
    return listing


def _matches(listed: ListedDefinition, words: list[str], gpus: dict[str, str]) -> bool:
    gpu = gpus.get(listed.digest, "")
    return all(any(word in name for name in listed.names) or word in gpu for word in words)


def _page_of(listing: _Listing, words: list[str], first: int, after_name: str | None) -> tuple[list[ListedDefinition], bool, int]:
    matching = [d for d in listing.definitions if _matches(d, words, listing.gpus)] if words else listing.definitions
    if after_name is None:
        start = 0
    elif after_name.startswith(V1_CURSOR):
        start = next((i for i, d in enumerate(matching) if d.order > (1, after_name.removeprefix(V1_CURSOR))), len(matching))
    else:
        start = next((i for i, d in enumerate(matching) if d.order > (0, after_name)), len(matching))
    return matching[start : start + first], start + first < len(matching), len(matching)


async def _documents(db: AsyncDatabase, page: list[ListedDefinition]) -> dict[str, Doc]:
    return {doc["_id"]: doc for doc in await db.definitions.find({"_id": {"$in": [d.digest for d in page]}}).to_list()} if page else {}


async def definitions_page(db: AsyncDatabase, *, words: list[str], first: int, after_name: str | None) -> tuple[list[Doc], bool, int]:
    """Definitions whose name, title or the GPU of one of their comparison groups contains every
    word (case-insensitive; "h200" finds what was measured on an NVIDIA H200), by name after
    `after_name`. Returns (page, has_next_page, how many match in all).

    Matched and paged on the listing of every definition's names (`_definition_listing`), then
    the page's documents are read by `_id`. With a listing kept already, whether it is still
    whole is checked while the page is read (round trips at once, not one after the other)."""
    words = [w.lower() for w in words]
    kept = _LISTINGS.get((id(db.client), db.name))
    if kept is not None and (not words or kept.gpu_count >= 0) and time.monotonic() - kept.counted_at < RECOUNT_S:
        page, more, total = _page_of(kept, words, first, after_name)
        checks = [definitions_stored.number(db)] + ([events.last_seq(db)] if words else [])
        (stored, *groups), found = await asyncio.gather(asyncio.gather(*checks), _documents(db, page))
        if stored == kept.stored and groups in ([], [kept.gpu_count]) and len(found) == len(page):
            return [found[d.digest] for d in page], more, total
    for attempt in (0, 1):
        listing = await _definition_listing(db, with_gpus=bool(words), fresh=attempt > 0)
        page, more, total = _page_of(listing, words, first, after_name)
        found = await _documents(db, page)
        if len(found) == len(page) or attempt:  # else the listing is not this database's any more: read it again
            return [found[d.digest] for d in page if d.digest in found], more, total
    raise AssertionError("unreachable")


async def definition_named(db: AsyncDatabase, name: str) -> Doc | None:
    """Ours by `spec.name`; a v1alpha1 OperationSpec (no spec.name) by its `metadata.name` (both
    asked at once: a catalog operation's page waited for the first to find nothing)."""
    ours, theirs = await asyncio.gather(db.definitions.find_one({"spec.name": name}), db.definitions.find_one({"metadata.name": name}))
    return ours or theirs


async def related_definitions(db: AsyncDatabase, *, digest: str, name: str, names: list[str], digests: list[str]) -> list[Doc]:
    """Definitions that this one names (by benchmark `names` or `digests`), or that name it.

    One indexed find per way of being related, not one `$or`: SecantusDB 0.7 plans an `$or` as a
    collection scan of every definition (120-300 ms with the bundled catalog's 451 on the shared
    machine), while each branch alone walks its index (`name`, `metadata_title`, `_id`, `relation_benchmark`,
    `relation_digest`: store/schema.py)."""
    branches: list[dict[str, Any]] = [
        {"spec.relations.benchmark": name},
        {"spec.relations.definitionDigest": digest},
        {"metadata.labels.related_benchmark": name},  # ours in the v1alpha1 format (registry/controlled_format.py)
    ]
    if names:
        branches.append({"spec.name": {"$in": names}})
        # A v1alpha1 OperationSpec has no spec.name: SOL-ExecBench's benchmark name is its title.
        branches.append({"metadata.title": {"$in": names}})
    if digests:
        branches.append({"_id": {"$in": digests}})
    found: dict[str, Doc] = {}
    # The branches at once: each is a round trip of its own (the operation page waited for 4 in turn).
    for docs in await asyncio.gather(*(db.definitions.find(branch).to_list() for branch in branches)):
        for doc in docs:
            if doc["_id"] != digest:
                found.setdefault(doc["_id"], doc)
    return sorted(found.values(), key=lambda d: d["_id"])


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
