"""The newest-runs list (store.queries.runs_page) against the runs themselves: every page in seq
order, superseded runs left out of the current list, across a long stretch of sequence numbers
with no run (a catalog import numbers its records' history after its runs)."""

from pymongo import ASCENDING

from store import events
from store.publish import publish, publish_many
from store.queries import runs_page
from store.schema import ensure_schema
from tests import factories


async def _walk(db, query: dict, first: int, rows: bool = False) -> list[str]:
    """Every page of the list, following each page's last seq."""
    out, after = [], None
    while True:
        page, more = await runs_page(db, query=query, first=first, after_seq=after, rows=rows)
        out += [doc["_id"] for doc in page]
        if not more:
            return out
        after = page[-1]["seq"]


async def test_newest_runs_are_every_run_in_seq_order_across_a_gap(db, mongo_uri):
    # SYNTHETIC runs: 30, then 4,000 sequence numbers taken by no run, then 30 more, 5 of which
    # correct (supersede) earlier records.
    # Every third carries per-case samples: read as a row (store/run_rows.py) with rows=True.
    await publish_many(db, [factories.run_bundle(f"a{i}", score=i / 100, user=f"a{i}", case_samples=8 * (i % 3 == 0)) for i in range(30)])
    await events.reserve(db, 4_000)
    await publish_many(db, [factories.run_bundle(f"b{i}", score=i / 100, user=f"b{i}") for i in range(25)])
    for i in range(5):
        await publish(db, factories.run_bundle(f"a{i}", score=0.9, user=f"a{i}"))

    by_seq = [doc async for doc in db.runs.find({}, {"seq": 1, "current": 1}).sort("seq", -1)]
    assert len(by_seq) == 60
    for first in (1, 7, 100):
        assert await _walk(db, {"current": True}, first) == [d["_id"] for d in by_seq if d["current"]]
        assert await _walk(db, {}, first) == [d["_id"] for d in by_seq]
        # Read as rows (store/run_rows.py; superseded runs have none and are read whole): the same.
        assert await _walk(db, {"current": True}, first, rows=True) == [d["_id"] for d in by_seq if d["current"]]
        assert await _walk(db, {}, first, rows=True) == [d["_id"] for d in by_seq]
    # A filter beside it takes the runs' own windows: the same answer.
    of_source = [d["_id"] async for d in db.runs.find({"source": factories.SOURCE, "current": True}).sort("seq", -1)]
    assert 0 < len(of_source) < 55
    assert await _walk(db, {"source": factories.SOURCE, "current": True}, 4) == of_source

    # A page that starts just above the gap ends below it.
    current = [d for d in by_seq if d["current"]]
    page, more = await runs_page(db, query={"current": True}, first=10, after_seq=current[24]["seq"])
    assert [d["_id"] for d in page] == [d["_id"] for d in current[25:35]] and more


async def test_one_operations_runs_newest_first_by_its_own_index(db, mongo_uri):
    # SYNTHETIC runs of two operations, interleaved, with 3,000 sequence numbers between them
    # taken by no run; two of operation A's records corrected (superseded).
    a, b = factories.definition("synthetic-op-a"), factories.definition("synthetic-op-b")
    await publish_many(db, [factories.run_bundle(f"a{i}", user=f"a{i}", defn=a) for i in range(12)])
    await events.reserve(db, 3_000)
    await publish_many(db, [factories.run_bundle(f"b{i}", user=f"b{i}", defn=b) for i in range(40)])
    await publish_many(db, [factories.run_bundle(f"a{i}", score=0.9, user=f"a{i}", defn=a) for i in range(12, 15)])
    for i in range(2):
        await publish(db, factories.run_bundle(f"a{i}", score=0.95, user=f"a{i}", defn=a))

    digest_a = (await db.runs.find_one({"externalId": "a0", "current": True}))["definitionDigest"]
    by_seq = [d async for d in db.runs.find({"definitionDigest": digest_a}, {"seq": 1, "current": 1}).sort("seq", -1)]
    assert len(by_seq) == 17  # 15 records, 2 of them corrected
    for first in (1, 4, 100):
        assert await _walk(db, {"definitionDigest": digest_a, "current": True}, first) == [d["_id"] for d in by_seq if d["current"]]
        assert await _walk(db, {"definitionDigest": digest_a}, first) == [d["_id"] for d in by_seq]
    # Another condition beside the definition is checked on what the index range returns.
    status = (await db.runs.find_one({"definitionDigest": digest_a}))["status"]
    assert await _walk(db, {"definitionDigest": digest_a, "status": status, "current": True}, 5) == [
        d["_id"] for d in by_seq if d["current"]
    ]
    assert await _walk(db, {"definitionDigest": digest_a, "status": "no-such-status"}, 5) == []

    # The list's index is the (definitionDigest, seq) one: a database made before it has its
    # old definitionDigest-only index replaced on start.
    await db.runs.drop_index("definition_seq")
    await db.runs.create_index([("definitionDigest", ASCENDING)], name="definition")
    await ensure_schema(db)
    indexes = await db.runs.index_information()
    assert "definition" not in indexes
    assert indexes["definition_seq"]["key"] == [("definitionDigest", 1), ("seq", -1)]
