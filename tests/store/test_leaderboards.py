"""Each comparison group's leaderboard (store/leaderboards.py) and its runs' rows
(store/run_rows.py) are derived state: after every write they equal what the runs themselves say
(their current members in rank order, #1, catalog runs; each current run's listed row), they are
written with the ranks or not at all, and the API answers the same from them as from the runs."""

import dataclasses

import httpx
import pytest
from asgi_lifespan import LifespanManager
from pymongo import monitoring

from loaders import pipeline
from registry.digest import manifest_digest
from server.app import create_app
from server.settings import Settings
from store import leaderboards, run_rows
from store.publish import publish, publish_many
from tests import factories
from tests.loaders.catalog_exports import subset, write_export


async def runs_say(db, key: str) -> dict:
    """The leaderboard as the runs state it, read from the runs collection alone."""
    members = await db.runs.find({"groupKey": key, "current": True}).to_list()
    members.sort(key=lambda m: (m["rankOrder"], m["seq"]))
    group = await db.comparison_groups.find_one({"_id": key})
    return {
        "rows": [leaderboards.row_of(m) for m in members],
        "leader": group["leaderDigest"],
        "catalogRuns": sum(1 for m in members if m.get("provenance")),
        "listed": {
            m["_id"]: run_rows.listed_row(m, leaderboards.row_of(m)) for m in members if run_rows.keeps_row(m, leaderboards.row_of(m))
        },
    }


async def stored(db, key: str) -> dict:
    rows = await db.leaderboards.find_one({"_id": key})
    head = (await db.comparison_groups.find_one({"_id": key}))["leaderboard"]
    return {
        "rows": rows["rows"],
        "leader": head["leader"]["_id"] if head["leader"] else None,
        "catalogRuns": head["catalogRuns"],
        "listed": {r["_id"]: r async for r in db.run_rows.find({"groupKey": key})},
    }


async def assert_every_leaderboard_agrees(db) -> int:
    keys = [g["_id"] async for g in db.comparison_groups.find({}, {"_id": 1})]
    rows = 0
    for key in keys:
        says = await runs_say(db, key)
        assert await stored(db, key) == says, key
        rows += len(says["listed"])
    assert await db.run_rows.count_documents({}) == rows  # none of a run no longer current
    return len(keys)


async def test_publications_keep_the_leaderboard_equal_to_the_runs(db):
    await publish_many(
        db,
        [
            factories.run_bundle("a", score=0.9, user="a", case_samples=8),  # rows kept: store/run_rows.py
            factories.run_bundle("b", score=0.5, user="b", case_samples=8),
            factories.run_bundle("c", score=0.5, user="c"),  # tied with b
            factories.run_bundle("d", score=0.99, user="d", status="disqualified"),  # unranked
        ],
    )
    await assert_every_leaderboard_agrees(db)
    await publish(db, factories.run_bundle("e", score=0.95, user="e", case_samples=8))  # a new #1: every rank moves
    await publish(db, factories.run_bundle("b", score=0.97, user="b", case_samples=8))  # b corrected: supersedes, new #1
    await publish(db, factories.run_bundle("x", score=0.2, defn=factories.definition("other-op")))  # a second group
    assert await assert_every_leaderboard_agrees(db) == 2
    board = await stored(db, (await db.runs.find_one({"externalId": "b", "current": True}))["groupKey"])
    assert [r["metadata"]["name"] for r in board["rows"]] == [
        "synthetic-b",
        "synthetic-e",
        "synthetic-a",
        "synthetic-c",
        "synthetic-d",
    ]
    assert [r["rank"] for r in board["rows"]] == [1, 2, 3, 4, None]


async def test_a_record_moved_to_another_cohort_leaves_the_first_cohorts_leaderboard(db):
    await publish_many(db, [factories.run_bundle("7", score=0.9, user="a", case_samples=8), factories.run_bundle("8", score=0.5, user="b")])
    moved = factories.run_bundle("7", score=0.9, user="a", env=factories.environment("NVIDIA H200", "sm_90"), case_samples=8)
    assert (await publish(db, moved)).status == "superseded"
    assert await assert_every_leaderboard_agrees(db) == 2
    first = await runs_say(db, (await db.runs.find_one({"externalId": "8"}))["groupKey"])
    assert [r["metadata"]["name"] for r in first["rows"]] == ["synthetic-8"]


async def test_a_second_verifying_runner_lifts_the_rows_of_runs_published_before(db):
    first = dataclasses.replace(factories.run_bundle("v1", score=0.9, user="u", case_samples=8), verified_by="runner-a")
    other = factories.run_bundle("v2", score=0.5, user="u", case_samples=8)
    same_code = other.run.model_copy(
        update={"spec": other.run.spec.model_copy(update={"implementationDigest": manifest_digest(first.implementation)})}
    )
    second = dataclasses.replace(other, run=same_code, implementation=first.implementation, verified_by="runner-b")
    await publish(db, first)
    await publish(db, second)
    board = await stored(db, (await db.runs.find_one({"externalId": "v1"}))["groupKey"])
    assert {r["evidenceLevel"] for r in board["rows"]} == {"Independently Replicated"}
    assert await assert_every_leaderboard_agrees(db) == 1


async def test_a_failed_publication_leaves_every_leaderboard_as_it_was(db):
    await publish_many(db, [factories.run_bundle(str(i), score=i / 10, user=f"u{i}", case_samples=8) for i in range(5)])
    before = await db.leaderboards.find_one({})
    rows_before = await db.run_rows.find({}).sort("_id").to_list()

    async def fail(session):
        raise RuntimeError("the transaction's last write fails")

    with pytest.raises(RuntimeError):
        await publish(db, factories.run_bundle("best", score=0.99, user="best"), also=fail)
    assert await db.leaderboards.find_one({}) == before
    assert await db.run_rows.find({}).sort("_id").to_list() == rows_before
    assert await assert_every_leaderboard_agrees(db) == 1


async def test_a_catalog_import_writes_each_cohorts_leaderboard(db, tmp_path):
    export = write_export(tmp_path / "catalog", subset("051"))
    await pipeline.run_import("kernelindex-catalog", db, target=str(export), console=None)
    assert await assert_every_leaderboard_agrees(db) >= 2
    assert await db.comparison_groups.count_documents({"leaderboard.catalogRuns": {"$gt": 0}}) >= 2


async def test_backfill_builds_what_an_older_database_lacks(db):
    await publish_many(db, [factories.run_bundle(str(i), score=(i % 4) / 10, user=f"u{i}", case_samples=8 * (i % 2)) for i in range(9)])
    built = await db.leaderboards.find({}).to_list()
    rows = await db.run_rows.find({}).sort("_id").to_list()
    await db.leaderboards.drop()
    await db.run_rows.delete_many({})
    await db.comparison_groups.update_many({}, {"$unset": {"leaderboard": ""}})
    assert await leaderboards.backfill(db) == 1
    assert await db.leaderboards.find({}).to_list() == built
    assert await db.run_rows.find({}).sort("_id").to_list() == rows
    assert await leaderboards.backfill(db) == 0  # nothing left to build
    await assert_every_leaderboard_agrees(db)


async def test_a_backfill_that_left_nothing_to_build_is_not_searched_for_again(db):
    """Finding groups to build reads every group; after a backfill found none, a start reads
    only the mark (a group of an older shape written afterwards is not looked for)."""
    await publish_many(db, [factories.run_bundle(str(i), score=i / 10, user=f"u{i}") for i in range(3)])
    assert await leaderboards.backfill(db) == 0
    await db.comparison_groups.update_many({}, {"$unset": {"leaderboard": ""}})
    assert await leaderboards.backfill(db) == 0
    assert await db.comparison_groups.count_documents({"leaderboard": {"$exists": False}}) == 1
    await db.counters.delete_one({"_id": leaderboards.SHAPE_MARK})  # a database from before the mark
    assert await leaderboards.backfill(db) == 1


class RunReads(monitoring.CommandListener):
    def __init__(self):
        self.finds: list[str] = []
        self.runs_by_id: list[str] = []  # the digests of the runs read by `_id`

    def started(self, event):
        if event.command_name == "find":
            self.finds.append(event.command["find"])
            by_id = event.command.get("filter", {}).get("_id")
            if event.command["find"] == "runs" and isinstance(by_id, dict):
                self.runs_by_id += by_id.get("$in", [])

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


ROWS = """query($id: ID!, $after: String) { comparisonGroup(id: $id) {
  leader { digest title primaryMeasurement { display } }
  runs(first: 7, after: $after) {
    edges { cursor node { digest title name rank evidenceLevel observedAt primaryMeasurement { statistic valueNs display }
                          sourceNative { metrics(perCase: false) { name value } } implementation { name } %s } }
    pageInfo { hasNextPage endCursor }
  } } }"""


async def _walk(http, group: str, extra: str) -> list:
    """Every page of the group's runs, following the cursors."""
    pages, after = [], None
    while True:
        body = (await http.post("/graphql", json={"query": ROWS % extra, "variables": {"id": group, "after": after}})).json()
        assert "errors" not in body, body["errors"]
        runs = body["data"]["comparisonGroup"]["runs"]
        pages.append((body["data"]["comparisonGroup"]["leader"], runs["edges"]))
        if not runs["pageInfo"]["hasNextPage"]:
            return pages
        after = runs["pageInfo"]["endCursor"]


async def test_the_api_answers_the_same_from_the_leaderboard_as_from_the_runs(db, mongo_uri):
    # 20 runs with ties (score repeats every 6) and 2 unranked; one corrected.
    await publish_many(
        db,
        [factories.run_bundle(f"r{i}", score=1 - (i % 6) / 10, latency_ns=90_000 + i, user=f"u{i:02d}") for i in range(20)]
        + [factories.run_bundle(f"x{i}", score=0.99, user=f"x{i}", status="disqualified") for i in range(2)],
    )
    await publish(db, factories.run_bundle("r3", score=0.05, user="u03"))
    reads = RunReads()
    app = create_app(mongo_uri, Settings(database=db.name), client_options={"event_listeners": [reads]})
    async with LifespanManager(app) as manager:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://t") as http:
            group = (await http.post("/graphql", json={"query": "{ definitions(first: 1) { comparisonGroups { id } } }"})).json()
            group = group["data"]["definitions"][0]["comparisonGroups"][0]["id"]
            reads.finds.clear()
            from_board = await _walk(http, group, "")
            assert "runs" not in reads.finds  # the leaderboard answered: no run document read
            # Asking for the manifest too reads the runs themselves (the rows do not carry it).
            from_runs = await _walk(http, group, "manifest")
            assert "runs" in reads.finds
            # So does asking for every source metric: rows leave our per-case ones out.
            reads.finds.clear()
            await _walk(http, group, "everyMetric: sourceNative { metrics { name } }")
            assert "runs" in reads.finds
    assert sum(len(edges) for _, edges in from_board) == 22
    assert from_board == [
        (leader, [{**e, "node": {k: v for k, v in e["node"].items() if k != "manifest"}} for e in edges]) for leader, edges in from_runs
    ]


NEWEST = """query($after: String) { runs(first: 6, after: $after) {
  edges { cursor node { digest title name rank evidenceLevel current observedAt primaryMeasurement { statistic valueNs display }
                        sourceNative { metrics(perCase: false) { name value } } implementation { name }
                        environment { gpu { display } } group { id title } %s } }
  pageInfo { hasNextPage endCursor } } }"""


async def test_the_newest_runs_read_as_rows_answer_as_the_runs_do(db, mongo_uri):
    # SYNTHETIC runs: 15 with ties, then corrections and a new #1 that move earlier runs' ranks
    # after their rows were first written.
    # Even ones carry per-case samples (a row each), odd ones not (read whole).
    await publish_many(
        db, [factories.run_bundle(f"n{i}", score=0.9 - (i % 5) / 10, user=f"u{i:02d}", case_samples=8 * (1 - i % 2)) for i in range(15)]
    )
    await publish(db, factories.run_bundle("n2", score=0.01, user="u02", case_samples=8))
    await publish(db, factories.run_bundle("top", score=0.999, user="top", case_samples=8))
    reads = RunReads()
    app = create_app(mongo_uri, Settings(database=db.name), client_options={"event_listeners": [reads]})

    async def walk(http, extra: str) -> list:
        pages, after = [], None
        while True:
            body = (await http.post("/graphql", json={"query": NEWEST % extra, "variables": {"after": after}})).json()
            assert "errors" not in body, body["errors"]
            pages.append(body["data"]["runs"]["edges"])
            if not body["data"]["runs"]["pageInfo"]["hasNextPage"]:
                return pages
            after = body["data"]["runs"]["pageInfo"]["endCursor"]

    async with LifespanManager(app) as manager:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://t") as http:
            reads.finds.clear()
            from_rows = await walk(http, "")
            # Only the runs without a row are read whole: those without samples, and the
            # superseded one (then left out).
            without_row = [d["_id"] async for d in db.runs.find({}) if not await db.run_rows.find_one({"_id": d["_id"]})]
            assert sorted(reads.runs_by_id) == sorted(without_row) and 7 + 1 == len(without_row)
            from_runs = await walk(http, "manifest")  # the rows do not carry it: whole runs
            assert "runs" in reads.finds
    assert sum(len(edges) for edges in from_rows) == 16  # 17 runs, one of them superseded
    top = [e["node"] for edges in from_rows for e in edges if e["node"]["name"] == "synthetic-top"]
    assert top[0]["rank"] == 1  # and every rank below it moved after its row was first written
    assert from_rows == [[{**e, "node": {k: v for k, v in e["node"].items() if k != "manifest"}} for e in edges] for edges in from_runs]
