"""Subscriptions over WebSocket (graphql-transport-ws) against real gateway processes: two uvicorn
servers on one database; events written by one process (or by `kernelindex load`) reach
subscribers held by the other."""

import asyncio
import json
import os
import subprocess

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from resolvers import ids
from resolvers.types.common import encode_cursor
from server.websocket import MAX_SUBSCRIPTIONS_PER_CONNECTION
from store.keys import Scope
from store.publish import publish
from tests import factories
from tests.command import KERNELINDEX
from tests.jobs import support as jobs
from tests.subscriptions.support import RUN_PUBLISHED, graphql, servers, ws_connection

pytestmark = pytest.mark.slow

H200 = factories.environment("NVIDIA H200", "sm_90")


def _names(messages):
    return [m["runPublished"]["run"]["name"] for m in messages]


async def _next_names(conn, op_id, count):
    return _names([await conn.next_data(op_id) for _ in range(count)])


async def test_a_run_published_elsewhere_reaches_subscribers_on_every_process(db, mongo_uri, tmp_path):
    with servers(mongo_uri, db.name, 2) as (a, b):
        async with ws_connection(a.ws) as on_a, ws_connection(b.ws) as on_b:
            await on_a.subscribe("all", RUN_PUBLISHED)
            await on_b.subscribe("all", RUN_PUBLISHED)
            await on_b.subscribe("h200", RUN_PUBLISHED, {"filter": {"gpu": "NVIDIA H200"}})
            await asyncio.sleep(0.5)

            # Published by a separate `kernelindex load` process.
            bundle = factories.run_bundle("cli-1")
            manifests = tmp_path / "m.json"
            manifests.write_text(
                json.dumps(
                    [
                        m.to_json()
                        for m in (
                            bundle.definition,
                            bundle.workload,
                            bundle.protocol,
                            bundle.environment,
                            bundle.implementation,
                            bundle.run,
                        )
                    ]
                )
            )
            env = {**os.environ, "MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name}
            loaded = subprocess.run([KERNELINDEX, "load", str(manifests)], env=env, capture_output=True, text=True, timeout=120)
            assert loaded.returncode == 0, loaded.stderr
            for conn in (on_a, on_b):
                event = (await conn.next_data("all"))["runPublished"]
                assert event["run"]["name"] == "synthetic-cli-1"
                assert event["run"]["digest"].startswith("sha256:") and event["run"]["evidenceLevel"] == "REPORTED"
                assert event["cursor"]

            # Published by this (third) process, on another GPU: only the filtered subscription differs.
            await publish(db, factories.run_bundle("h200-1", env=H200))
            assert await _next_names(on_a, "all", 1) == await _next_names(on_b, "all", 1) == ["synthetic-h200-1"]
            assert await _next_names(on_b, "h200", 1) == ["synthetic-h200-1"]
            await on_b.quiet("h200", 0.5)  # the B200 run before it did not match


async def test_a_job_update_made_through_one_process_reaches_its_requester_on_the_other(db, mongo_uri):
    objects = await jobs.registry_with_controlled_definition(db)
    requester = await jobs.key(db, Scope.maintainer, name="requester")
    runner = await jobs.key(db, Scope.runner, Ed25519PrivateKey.generate(), name="runner")
    with servers(mongo_uri, db.name, 2) as (a, b):
        request = (
            await graphql(
                b.http,
                jobs.REQUEST,
                {
                    "input": {
                        "definition": ids.encode("Definition", (await db.definitions.find_one({}))["_id"]),
                        "implementation": "ext",
                        "gpu": jobs.GPU,
                        "idempotencyKey": "live-1",
                    }
                },
                requester,
            )
        )["data"]["benchmarkJobRequest"]
        job_id = request["job"]["id"]
        query = "subscription($id: ID!, $after: String) { benchmarkJobUpdated(id: $id, after: $after) { cursor state job { id state } } }"
        async with ws_connection(a.ws, {"Authorization": f"Bearer {requester}"}) as conn:
            await conn.subscribe("job", query, {"id": job_id, "after": encode_cursor("events", 0)})
            first = (await conn.next_data("job"))["benchmarkJobUpdated"]
            assert first["state"] == "queued"  # replayed from the log
            claimed = (await graphql(b.http, jobs.CLAIM, {"gpu": jobs.GPU, "lease": 600}, runner))["data"]["benchmarkJobClaim"]
            assert claimed["job"]["id"] == job_id
            live = (await conn.next_data("job"))["benchmarkJobUpdated"]
            assert live["state"] == "claimed" and live["job"] == {"id": job_id, "state": "claimed"}
    assert objects


async def test_resuming_with_the_last_cursor_gets_exactly_what_was_missed(db, mongo_uri):
    with servers(mongo_uri, db.name, 2) as (a, b):
        async with ws_connection(a.ws) as conn:
            await conn.subscribe("1", RUN_PUBLISHED)
            await asyncio.sleep(0.5)
            await publish(db, factories.run_bundle("r1"))
            cursor = (await conn.next_data("1"))["runPublished"]["cursor"]
        # Disconnected: three runs are published meanwhile.
        for name in ("r2", "r3", "r4"):
            await publish(db, factories.run_bundle(name, score=0.4))
        # Reconnect (to the other process, even) with the last cursor.
        async with ws_connection(b.ws) as conn:
            await conn.subscribe("1", RUN_PUBLISHED, {"after": cursor})
            assert await _next_names(conn, "1", 3) == ["synthetic-r2", "synthetic-r3", "synthetic-r4"]
            await publish(db, factories.run_bundle("r5"))
            assert await _next_names(conn, "1", 1) == ["synthetic-r5"]
            await conn.quiet("1", 0.5)  # no duplicate, nothing else


async def test_comparison_group_changes_carry_the_old_and_new_leader(db, mongo_uri):
    first = await publish(db, factories.run_bundle("g1", score=0.5))
    group_id = ids.encode("ComparisonGroup", first.group_key)
    query = """subscription($id: ID!) { comparisonGroupChanged(id: $id) { cursor leaderChanged size
      oldLeader { digest } newLeader { digest group { size } } group { size leader { digest } } } }"""
    with servers(mongo_uri, db.name, 1) as (a,):
        async with ws_connection(a.ws) as conn:
            await conn.subscribe("g", query, {"id": group_id})
            await asyncio.sleep(0.5)
            better = await publish(db, factories.run_bundle("g2", score=0.9, user="bob"))
            event = (await conn.next_data("g"))["comparisonGroupChanged"]
            assert event["leaderChanged"] is True and event["size"] == 2
            assert event["oldLeader"] == {"digest": first.run_digest}
            assert event["newLeader"]["digest"] == better.run_digest
            assert event["group"] == {"size": 2, "leader": {"digest": better.run_digest}}
            assert event["newLeader"]["group"]["size"] == 2

            await publish(db, factories.run_bundle("g3", score=0.1, user="carol"))
            event = (await conn.next_data("g"))["comparisonGroupChanged"]
            assert event["leaderChanged"] is False and event["size"] == 3
            assert event["oldLeader"] == {"digest": better.run_digest} and event["newLeader"]["digest"] == better.run_digest
            # Fresh DataLoaders per event: the leader's group is read again, not cached from the first event.
            assert event["newLeader"]["group"]["size"] == 3 and event["group"]["size"] == 3


async def test_keys_limits_and_bad_arguments_are_answered_with_codes(db, mongo_uri):
    objects = await jobs.registry_with_controlled_definition(db)
    requester = await jobs.key(db, Scope.maintainer, name="requester")
    other_partner = await jobs.key(db, Scope.partner, name="someone-else")
    runner = await jobs.key(db, Scope.runner, Ed25519PrivateKey.generate(), name="a-runner")
    job_query = "subscription($id: ID!) { benchmarkJobUpdated(id: $id) { state } }"

    async def first_error(conn, op_id, query, variables=None):
        await conn.subscribe(op_id, query, variables)
        message = await conn.receive(op_id)
        assert message["type"] == "error", message
        return message["payload"][0]["extensions"]["code"]

    with servers(mongo_uri, db.name, 1) as (a,):
        created = (
            await graphql(
                a.http,
                jobs.REQUEST,
                {
                    "input": {
                        "definition": ids.encode("Definition", (await db.definitions.find_one({}))["_id"]),
                        "implementation": "ext",
                        "gpu": jobs.GPU,
                        "idempotencyKey": "codes",
                    }
                },
                requester,
            )
        )["data"]["benchmarkJobRequest"]
        job_id = created["job"]["id"]
        async with ws_connection(a.ws) as anonymous:
            assert await first_error(anonymous, "1", job_query, {"id": job_id}) == "UNAUTHENTICATED"
            assert await first_error(anonymous, "2", RUN_PUBLISHED, {"after": "not a cursor"}) == "BAD_USER_INPUT"
            assert await first_error(anonymous, "3", RUN_PUBLISHED, {"filter": {"definition": "nonsense"}}) == "BAD_ID"
            unknown_group = ids.encode("ComparisonGroup", "sha256:" + "0" * 64)
            assert (
                await first_error(
                    anonymous, "4", "subscription($id: ID!) { comparisonGroupChanged(id: $id) { size } }", {"id": unknown_group}
                )
                == "NOT_FOUND"
            )
        async with ws_connection(a.ws, {"Authorization": "Bearer kix_nothere_secret"}) as bad_key:
            assert await first_error(bad_key, "1", job_query, {"id": job_id}) == "UNAUTHENTICATED"
        async with ws_connection(a.ws, {"apiKey": other_partner}) as stranger:
            assert await first_error(stranger, "1", job_query, {"id": job_id}) == "FORBIDDEN"
        async with ws_connection(a.ws, {"apiKey": runner}) as unrelated_runner:
            assert await first_error(unrelated_runner, "1", job_query, {"id": job_id}) == "FORBIDDEN"

        # At most MAX_SUBSCRIPTIONS_PER_CONNECTION at once on one connection.
        async with ws_connection(a.ws) as conn:
            for i in range(MAX_SUBSCRIPTIONS_PER_CONNECTION):
                await conn.subscribe(str(i), RUN_PUBLISHED, {"filter": {"source": f"s{i}"}} if i % 2 else None)
            assert await first_error(conn, "one-too-many", RUN_PUBLISHED) == "TOO_MANY_SUBSCRIPTIONS"
            await conn.complete("0")
            await asyncio.sleep(0.2)
            await conn.subscribe("replacement", RUN_PUBLISHED)
            await asyncio.sleep(0.5)
            await publish(db, factories.run_bundle("after-limit"))
            assert await _next_names(conn, "replacement", 1) == ["synthetic-after-limit"]
            assert await _next_names(conn, "2", 1) == ["synthetic-after-limit"]
            await conn.quiet("one-too-many", 0.2)
    assert objects


async def test_identical_live_subscriptions_share_one_execution_and_stay_independent(db, mongo_uri):
    with servers(mongo_uri, db.name, 1) as (a,):
        async with ws_connection(a.ws) as one, ws_connection(a.ws) as two, ws_connection(a.ws) as three:
            await one.subscribe("x", RUN_PUBLISHED)
            await two.subscribe("y", RUN_PUBLISHED)
            await three.subscribe("z", RUN_PUBLISHED, {"filter": {"gpu": "NVIDIA H200"}})
            await asyncio.sleep(0.5)
            await publish(db, factories.run_bundle("s1"))
            assert await _next_names(one, "x", 1) == await _next_names(two, "y", 1) == ["synthetic-s1"]
            await one.complete("x")  # one leaves; the other keeps receiving
            await asyncio.sleep(0.2)
            await publish(db, factories.run_bundle("s2", env=H200))
            assert await _next_names(two, "y", 1) == ["synthetic-s2"]
            assert await _next_names(three, "z", 1) == ["synthetic-s2"]
            await one.quiet("x", 0.3)
            # Joining again later starts a fresh shared execution.
            await one.subscribe("x2", RUN_PUBLISHED)
            await asyncio.sleep(0.3)
            await publish(db, factories.run_bundle("s3"))
            assert await _next_names(one, "x2", 1) == await _next_names(two, "y", 1) == ["synthetic-s3"]


async def test_subscriptions_over_http_are_refused(api):
    body = await api.post("subscription { runPublished { cursor } }")
    assert body["errors"][0]["extensions"]["code"] == "WEBSOCKET_REQUIRED"
