from registry.digest import manifest_digest
from store.publish import publish, publish_many
from tests import factories


async def test_same_manifest_twice_is_one_document(db):
    bundle = factories.run_bundle("1")
    first = await publish(db, bundle)
    second = await publish(db, bundle)
    assert first.status == "new" and second.status == "unchanged"
    assert first.run_digest == second.run_digest == manifest_digest(bundle.run)
    assert await db.runs.count_documents({}) == 1
    assert await db.definitions.count_documents({}) == 1
    assert await db.events.count_documents({"type": "run.published"}) == 1


async def test_changed_record_supersedes_and_keeps_the_old_run(db):
    old = await publish(db, factories.run_bundle("7", score=0.3))
    new = await publish(db, factories.run_bundle("7", score=0.4))
    assert new.status == "superseded" and new.superseded_digest == old.run_digest
    old_doc = await db.runs.find_one({"_id": old.run_digest})
    new_doc = await db.runs.find_one({"_id": new.run_digest})
    assert old_doc["current"] is False and old_doc["supersededBy"] == new.run_digest
    assert old_doc["rank"] is None
    assert new_doc["current"] is True and new_doc["supersedes"] == old.run_digest
    group = await db.comparison_groups.find_one({"_id": new_doc["groupKey"]})
    assert group["size"] == 1 and group["leaderDigest"] == new.run_digest


async def test_ranks_ties_and_unranked_runs(db):
    outcomes = await publish_many(
        db,
        [
            factories.run_bundle("a", score=0.9, user="a"),
            factories.run_bundle("b", score=0.5, user="b"),
            factories.run_bundle("c", score=0.5, user="c"),
            factories.run_bundle("d", score=0.1, user="d"),
            factories.run_bundle("e", score=0.99, user="e", status="disqualified"),
        ],
    )
    ranks = {doc["externalId"]: doc["rank"] async for doc in db.runs.find({})}
    assert ranks == {"a": 1, "b": 2, "c": 2, "d": 4, "e": None}
    group = await db.comparison_groups.find_one({})
    assert group["size"] == 5 and group["rankedSize"] == 4
    assert group["leaderDigest"] == outcomes[0].run_digest


async def test_new_leader_appends_a_group_event(db):
    await publish(db, factories.run_bundle("a", score=0.5, user="a"))
    challenger = await publish(db, factories.run_bundle("b", score=0.8, user="b"))
    changes = await db.events.find({"type": "group.changed", "leaderChanged": True}).sort("seq", 1).to_list()
    assert [c["newLeader"] for c in changes][-1] == challenger.run_digest
    seqs = [e["seq"] async for e in db.events.find({}).sort("seq", 1)]
    assert seqs == list(range(1, len(seqs) + 1))


async def test_mismatched_reference_is_rejected_and_nothing_written(db):
    import dataclasses

    import pytest

    from registry.manifests import ManifestError

    bundle = factories.run_bundle("x")
    bad = dataclasses.replace(bundle, environment=factories.environment("NVIDIA H200", "sm_90"))
    with pytest.raises(ManifestError, match="environmentDigest"):
        await publish(db, bad)
    for name in ("runs", "definitions", "environments", "events"):
        assert await db[name].count_documents({}) == 0


async def test_a_correction_that_keeps_size_and_leader_still_announces_the_group(db):
    await publish(db, factories.run_bundle("a", score=0.9, user="a"))
    await publish(db, factories.run_bundle("b", score=0.2, user="b"))
    before = await db.events.count_documents({"type": "group.changed"})
    await publish(db, factories.run_bundle("b", score=0.3, user="b"))  # b corrected; size 2, #1 still a
    changes = await db.events.find({"type": "group.changed"}).sort("seq", 1).to_list()
    assert len(changes) == before + 1
    assert changes[-1]["leaderChanged"] is False and changes[-1]["size"] == 2
