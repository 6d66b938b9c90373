"""The event hub: one change stream, ordered release, backlog + live without gaps or duplicates."""

import asyncio
from datetime import UTC, datetime

import pytest

from store.event_stream import REPLAY_PAGE, EventFilter, EventHub


async def _insert(db, *seqs, type_="run.published", **fields):
    """As a writer does (store/events.py): the number reserved from the counter, then the event."""
    for seq in seqs:
        await db.counters.update_one({"_id": "events"}, {"$max": {"seq": seq}}, upsert=True)
        await db.events.insert_one({"seq": seq, "type": type_, "at": datetime.now(UTC), **fields})


async def _take(source, count, timeout=5):
    return [(await asyncio.wait_for(anext(source), timeout))["seq"] for _ in range(count)]


@pytest.fixture
async def hub(db):
    hub = EventHub(db, gap_timeout_s=0.3)
    await hub.start()
    yield hub
    await hub.stop()


async def test_live_events_in_seq_order_even_when_inserted_out_of_order(db, hub):
    with hub.subscribe(EventFilter.of("run.published")) as sub:
        source = sub.events(None)
        await _insert(db, 1, 3, 2)  # 3 commits before 2: held until 2 arrives
        assert await _take(source, 3) == [1, 2, 3]


async def test_a_number_that_never_arrives_is_given_up_and_a_late_one_still_delivered(db, hub):
    with hub.subscribe(EventFilter.of("run.published")) as sub:
        source = sub.events(None)
        await _insert(db, 1, 3)
        assert await _take(source, 2) == [1, 3]  # 2 is given up after the gap timeout
        assert 2 in hub.skipped and hub.watermark == 3
        await _insert(db, 2)  # ...and committed late after all: delivered, out of order
        assert await _take(source, 1) == [2]
        await _insert(db, 4)
        assert await _take(source, 1) == [4]


async def test_backlog_then_live_without_gap_or_duplicate(db, hub):
    await _insert(db, 1, 2, 3, 4)
    await asyncio.sleep(0.2)
    with hub.subscribe(EventFilter.of("run.published")) as sub:
        source = sub.events(2)
        await _insert(db, 5, 6)
        assert await _take(source, 4) == [3, 4, 5, 6]
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(anext(source), 0.5)


async def test_filters_apply_to_backlog_and_live(db, hub):
    await _insert(db, 1, gpu="A")
    await _insert(db, 2, gpu="B")
    await _insert(db, 3, type_="group.changed", gpu="A")
    await asyncio.sleep(0.2)
    with hub.subscribe(EventFilter.of("run.published", gpu="A")) as sub:
        source = sub.events(0)
        await _insert(db, 4, gpu="B")
        await _insert(db, 5, gpu="A")
        assert await _take(source, 2) == [1, 5]


async def test_a_backlog_longer_than_a_read_arrives_whole_and_in_order(db, hub):
    """The backlog is read a range of numbers at a time (REPLAY_PAGE): a cursor far behind,
    with a filter most events fail, still gets every match once."""
    count = 2 * REPLAY_PAGE + 57
    await db.events.insert_many(
        [{"seq": s, "type": "run.published", "gpu": "A" if s % 3 == 0 else "B", "at": datetime.now(UTC)} for s in range(1, count + 1)]
    )
    await db.counters.update_one({"_id": "events"}, {"$max": {"seq": count}}, upsert=True)
    await asyncio.sleep(0.3)  # the hub releases them (its watermark reaches `count`)
    with hub.subscribe(EventFilter.of("run.published", gpu="A")) as sub:
        source = sub.events(0)
        expected = [s for s in range(1, count + 1) if s % 3 == 0]
        assert await _take(source, len(expected)) == expected
        await _insert(db, count + 3, gpu="A")
        assert await _take(source, 1) == [count + 3]


async def test_a_slow_subscriber_overflows_and_catches_up_from_the_log(db):
    hub = EventHub(db, queue_size=5, gap_timeout_s=0.3)
    await hub.start()
    try:
        with hub.subscribe(EventFilter.of("run.published")) as sub:
            source = sub.events(None)
            await db.events.insert_many([{"seq": s, "type": "run.published", "at": datetime.now(UTC)} for s in range(1, 41)])
            await asyncio.sleep(0.5)  # not reading: the queue overflows
            assert sub.overflowed
            assert await _take(source, 40) == list(range(1, 41))
        assert hub.subscriber_count == 0
    finally:
        await hub.stop()


async def test_an_event_inserted_by_another_client_reaches_the_hub(db, hub, mongo_uri):
    """The change stream sees every writer, not only this process's client."""
    from store.client import make_client

    other = make_client(mongo_uri)
    try:
        with hub.subscribe(EventFilter.of("job.updated", jobId="j1")) as sub:
            source = sub.events(None)
            await other[db.name].events.insert_one({"seq": 1, "type": "job.updated", "jobId": "j2", "at": datetime.now(UTC)})
            await other[db.name].events.insert_one({"seq": 2, "type": "job.updated", "jobId": "j1", "at": datetime.now(UTC)})
            assert await _take(source, 1) == [2]
    finally:
        await other.close()


async def test_a_number_missing_at_start_up_is_still_delivered_when_it_commits(db):
    await _insert(db, 1, 3)  # 2 is reserved by a writer that has not committed yet
    hub = EventHub(db, gap_timeout_s=0.3)
    await hub.start()
    try:
        assert hub.watermark == 3 and 2 in hub.skipped
        with hub.subscribe(EventFilter.of("run.published")) as sub:
            source = sub.events(None)
            await _insert(db, 2, 4)
            assert await _take(source, 2) == [2, 4]
            hub._receive(await db.events.find_one({"seq": 2}))  # a resumed stream repeating it: dropped
            await _insert(db, 5)
            assert await _take(source, 1) == [5]
    finally:
        await hub.stop()


async def test_without_change_streams_the_hub_stays_off_and_says_why(db, monkeypatch):
    from pymongo.errors import OperationFailure

    from store.event_stream import StreamUnavailable

    hub = EventHub(db)

    async def no_change_streams(token):
        raise OperationFailure("The $changeStream stage is only supported on replica sets", code=40573)

    monkeypatch.setattr(hub, "_open", no_change_streams)
    await hub.start()
    assert not hub.running and "replica sets" in hub.unavailable
    with pytest.raises(StreamUnavailable, match="replica sets"):
        with hub.subscribe(EventFilter.of("run.published")):
            pass
    await hub.stop()
