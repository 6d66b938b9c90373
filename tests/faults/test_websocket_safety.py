"""WebSockets held to HTTP's rules: keys checked for every operation and revocation ending a key's
subscriptions within a second (`kernelindex keys revoke`, a real process), syntax errors and
never-issued cursors answered with codes, messages bounded like request bodies, and a 1 MB bad
query not copied into the log."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import time

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from websockets.asyncio.client import connect

from resolvers import ids
from resolvers.types.common import encode_cursor
from server.settings import Settings
from store.keys import Scope
from store.publish import publish
from tests import factories
from tests.command import kernelindex
from tests.jobs import support as jobs
from tests.subscriptions.support import RUN_PUBLISHED, graphql, servers, ws_connection

pytestmark = pytest.mark.slow

JOB_UPDATED = "subscription($id: ID!, $after: String) { benchmarkJobUpdated(id: $id, after: $after) { cursor state } }"


async def _job(db, url: str, requester: str) -> str:
    await jobs.registry_with_controlled_definition(db)
    definition = ids.encode("Definition", (await db.definitions.find_one({}))["_id"])
    request = await graphql(
        url,
        jobs.REQUEST,
        {"input": {"definition": definition, "implementation": "ext", "gpu": jobs.GPU, "idempotencyKey": "ws-1"}},
        requester,
    )
    return request["data"]["benchmarkJobRequest"]["job"]["id"]


async def test_revoking_a_key_ends_its_subscriptions_within_a_second_and_refuses_new_ones(db, mongo_uri):
    requester = await jobs.key(db, Scope.maintainer, name="requester")
    runner = await jobs.key(db, Scope.runner, Ed25519PrivateKey.generate(), name="runner")
    key_id = requester.split("_")[1]
    with servers(mongo_uri, db.name, 1) as (server,):
        job_id = await _job(db, server.http, requester)
        async with ws_connection(server.ws, {"Authorization": f"Bearer {requester}"}) as conn:
            await conn.subscribe("job", JOB_UPDATED, {"id": job_id, "after": encode_cursor("events", 0)})
            assert (await conn.next_data("job"))["benchmarkJobUpdated"]["state"] == "queued"
            await conn.subscribe("runs", RUN_PUBLISHED)
            await asyncio.sleep(0.3)

            revoked = kernelindex("keys", "revoke", key_id, env={"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name})
            assert revoked.returncode == 0, revoked.stderr
            started = time.monotonic()
            for op in ("job", "runs"):
                ended = await conn.receive(op, timeout=5)
                assert ended["type"] == "next" and ended["payload"]["errors"][0]["extensions"]["code"] == "KEY_REVOKED", ended
                assert (await conn.receive(op, timeout=5))["type"] == "complete"
            assert time.monotonic() - started < 1.5  # within a second of the revoke returning, plus slack

            # Job events no longer flow to it, and a new operation on the same connection is refused.
            await graphql(server.http, jobs.CLAIM, {"gpu": jobs.GPU, "lease": 600}, runner)
            await conn.quiet("job", 0.5)
            await conn.subscribe("again", JOB_UPDATED, {"id": job_id})
            refused = await conn.receive("again")
            assert refused["type"] == "error" and refused["payload"][0]["extensions"]["code"] == "KEY_REVOKED"


async def test_a_syntax_error_is_an_error_message_with_a_code_and_the_connection_stays(db, mongo_uri):
    with servers(mongo_uri, db.name, 1) as (server,):
        async with ws_connection(server.ws) as conn:
            await conn.subscribe("bad", "subscription { runPublished { cursor ")
            message = await conn.receive("bad")
            assert message["type"] == "error", message
            assert message["payload"][0]["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
            await conn.subscribe("good", RUN_PUBLISHED)
            await asyncio.sleep(0.3)
            await publish(db, factories.run_bundle("after-syntax-error"))
            assert (await conn.next_data("good"))["runPublished"]["run"]["name"] == "synthetic-after-syntax-error"


async def test_cursors_that_were_never_issued_or_belong_to_another_list_are_refused_with_a_code(db, mongo_uri):
    await publish(db, factories.run_bundle("c1"))
    with servers(mongo_uri, db.name, 1) as (server,):
        async with ws_connection(server.ws) as conn:
            cases = {
                "future": encode_cursor("events", 999_999),
                "runs-list": encode_cursor("runs", 1),
                "overflow": encode_cursor("events", 10**30),
                "legacy": "OTk5OTk5",  # base64 of 999999, the example
            }
            for op, cursor in cases.items():
                await conn.subscribe(op, RUN_PUBLISHED, {"after": cursor})
                message = await conn.receive(op)
                assert message["type"] == "error", (op, message)
                assert message["payload"][0]["extensions"]["code"] == "BAD_USER_INPUT", (op, message)
            assert "never issued" in (await _first_error(conn, server, encode_cursor("events", 999_999)))


async def _first_error(conn, server, cursor) -> str:
    await conn.subscribe("check", RUN_PUBLISHED, {"after": cursor})
    return (await conn.receive("check"))["payload"][0]["message"]


def test_a_websocket_message_over_the_body_limit_closes_the_connection(db, mongo_uri):
    """The subgraph process as the stack runs it (`kernelindex serve --subgraph`)."""
    from store.embedded import free_port
    from tests.command import KERNELINDEX
    from tests.serving import wait_ready

    port = free_port()
    env = {**os.environ, "MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name}
    proc = subprocess.Popen(
        [KERNELINDEX, "serve", "--subgraph", "registry", "--port", str(port), "--no-data"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_ready(proc, port)
        limit = Settings().max_body_bytes

        async def send(pad: int) -> tuple[int | None, dict | None]:
            async with connect(f"ws://127.0.0.1:{port}/graphql", subprotocols=["graphql-transport-ws"], max_size=None) as socket:
                await socket.send(json.dumps({"type": "connection_init", "payload": {}}))
                assert json.loads(await socket.recv())["type"] == "connection_ack"
                await socket.send(
                    json.dumps({"id": "1", "type": "subscribe", "payload": {"query": "{ __typename }", "variables": {"pad": "x" * pad}}})
                )
                try:
                    return None, json.loads(await asyncio.wait_for(socket.recv(), 10))
                except Exception:  # noqa: BLE001 - closed by the server
                    return socket.close_code, None

        assert asyncio.run(send(limit - 1000)) == (None, {"id": "1", "type": "next", "payload": {"data": {"__typename": "Query"}}})
        assert asyncio.run(send(limit)) == (1009, None)  # "message too big", like HTTP's 413
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


async def test_a_1_mb_invalid_query_is_not_copied_into_the_log(api, caplog):
    caplog.set_level(logging.INFO)
    query = "{ runs(first: 1) { nodes { " + "x" * 1_000_000 + " "
    body = await api.post(query)
    assert body["errors"][0]["extensions"]["code"] in ("GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED")
    logged = sum(len(record.getMessage()) + len(record.exc_text or "") for record in caplog.records)
    assert logged < 10_000, f"{logged} characters logged"


async def test_bad_ids_and_cursors_over_http_are_coded_and_short(api, db):
    await publish(db, factories.run_bundle("h1"))
    long_id = "Q" * 100_000
    body = await api.post("query($id: ID!) { node(id: $id) { id } }", {"id": long_id})
    error = body["errors"][0]
    assert error["extensions"]["code"] == "BAD_ID" and len(error["message"]) < 200, error["message"][:300]
    run_cursor = (await api.data("{ runs(first: 1) { edges { cursor } } }"))["runs"]["edges"][0]["cursor"]
    for query, cursor, reason in [
        ("query($a: String) { runs(first: 1, after: $a) { nodes { digest } } }", encode_cursor("runs", 10**30), "not a valid cursor"),
        ("query($a: String) { benchmarkJobs(first: 1, after: $a) { nodes { id } } }", run_cursor, "is a cursor of runs"),
        ("query($a: String) { runs(first: 1, after: $a) { nodes { digest } } }", encode_cursor("notes", 1), "is a cursor of notes"),
        ("query($a: String) { runs(first: 1, after: $a) { nodes { digest } } }", "A" * 100_000, "not a valid cursor"),
    ]:
        body = await api.post(query, {"a": cursor})
        [error] = body["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT", error
        assert reason in error["message"] and len(error["message"]) < 200, error["message"][:300]
