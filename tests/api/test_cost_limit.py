"""The cost limit: an operation whose estimated cost is over the documented maximum is refused
with COST_LIMIT before it runs; ordinary pages are not."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess

import httpx
import pytest

from resolvers.cost_limit import MAX_COST
from store.embedded import free_port
from store.publish import publish_many
from tests import factories
from tests.command import KERNELINDEX
from tests.serving import env_for, start_serve, stop, wait_ready
from tests.subscriptions.support import RUN_PUBLISHED, ws_connection

# The 114-character query: 27.5 s and 693 KB before the limit.
NESTED = "{ runs(first:20){ nodes { group { runs(first:20){ nodes { group { runs(first:20){ nodes { digest } } } } } } } } }"


def _post(site: str, query: str, variables: dict | None = None) -> dict:
    return httpx.post(f"{site}/graphql", json={"query": query, "variables": variables or {}}, timeout=60).json()


async def _some_runs(db, count: int = 30) -> None:
    await publish_many(db, [factories.run_bundle(f"cost-{n}", score=n / 100) for n in range(count)])


async def _finds(db) -> int:
    """The database server's count of queries (find commands) so far."""
    return (await db.client.admin.command("serverStatus"))["opcounters"]["query"]


async def test_the_nested_query_is_refused_before_it_runs(db, live_site):
    await _some_runs(db)
    _post(live_site, "{ __typename }")  # a warm connection and schema
    # Run, it takes 27.5 s and hundreds of finds; refused before it runs, it reads nothing (a
    # count, not a clock: how fast the refusal is, is bench/'s business).
    before = await _finds(db)
    for _ in range(3):
        body = _post(live_site, NESTED)
        assert body.get("data") is None
        [error] = body["errors"]
        assert error["extensions"]["code"] == "COST_LIMIT"
        assert error["extensions"]["cost"] == {"estimated": 9261, "max": MAX_COST}
        assert "above the maximum of 5,000" in error["message"]
    assert await _finds(db) == before
    # ... while the same shape under the limit does read the database (so the count can fail).
    body = _post(live_site, "{ runs(first:2){ nodes { group { runs(first:2){ nodes { digest } } } } } }")
    assert "errors" not in body, body
    assert await _finds(db) > before


async def test_aliases_multiply_the_cost(db, live_site):
    await _some_runs(db, 3)
    one = "{ runs(first: 50) { nodes { digest group { title } } } }"  # 1 + 50 + 50 = 101
    body = _post(live_site, one)
    assert "errors" not in body, body
    many = "{ " + " ".join(f"a{n}: runs(first: 50) {{ nodes {{ digest group {{ title }} }} }}" for n in range(30)) + " }"
    body = _post(live_site, many)  # 30 × 101 = 3,030: under the limit
    assert "errors" not in body, body
    deeper = (
        "{ "
        + " ".join(f"a{n}: runs(first: 100) {{ nodes {{ digest group {{ title }} implementation {{ name }} }} }}" for n in range(30))
        + " }"
    )
    body = _post(live_site, deeper)  # 30 × 301
    assert body["errors"][0]["extensions"] == {"code": "COST_LIMIT", "cost": {"estimated": 9030, "max": MAX_COST}}


async def test_page_sizes_from_variables_count(db, live_site):
    await _some_runs(db, 3)
    query = "query($n: Int!) { runs(first: $n) { nodes { group { runs(first: $n) { nodes { digest } } } } } }"
    body = _post(live_site, query, {"n": 5})  # 1 + 5 + 5 + 5 + 25
    assert "errors" not in body, body
    body = _post(live_site, query, {"n": 100})  # 1 + 100 + 100 + 100 + 10,000
    assert body["errors"][0]["extensions"]["cost"]["estimated"] == 10_301
    # Estimates are kept per query text and integer variables (resolvers/cost_limit.py): each
    # page size gets its own, whichever was asked first.
    assert "errors" not in _post(live_site, query, {"n": 5})
    assert _post(live_site, query, {"n": 100})["errors"][0]["extensions"]["cost"]["estimated"] == 10_301


async def test_an_ordinary_dossier_query_is_far_under_the_limit(db, live_site):
    await _some_runs(db, 3)
    query = """{ runs(first: 100) { nodes { title primaryMeasurement { display statistic } rank
        group { size leader { title } } correctness { statement } evidenceLevel
        protocol { harness { name version } } environment { gpu { display } } citation { text } } } }"""
    body = _post(live_site, query)
    assert "errors" not in body, body


# Through Hive Gateway, as `kernelindex serve` starts it: the same limit in its config, over HTTP
# and over graphql-transport-ws.
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
EXPENSIVE_SUBSCRIPTION = """subscription { runPublished { cursor run { group {
  runs(first: 100) { nodes { group { runs(first: 100) { nodes { digest } } } } } } } } }"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """(port, home) of a `kernelindex serve --no-data`."""
    home, port = tmp_path_factory.mktemp("cost") / "home", free_port()
    proc = start_serve(home, port, "--no-data")
    try:
        wait_ready(proc, port, timeout=240)
        yield port, home
    finally:
        stop(proc)


@pytest.mark.slow
@needs_node
def test_the_gateway_refuses_the_nested_query_too(gateway):
    port, _ = gateway
    body = _post(f"http://127.0.0.1:{port}", NESTED)
    assert body.get("data") in (None, {"runs": None}), body
    assert body["errors"][0]["extensions"]["code"] == "COST_LIMIT", body
    # Refused by the gateway itself (its own message), with the subgraph's estimate.
    assert body["errors"][0]["message"] == f"Operation estimated cost 9261 exceeded configured maximum {MAX_COST}"
    assert body["errors"][0]["extensions"]["cost"] == {"estimated": 9261, "max": MAX_COST}
    ok = _post(f"http://127.0.0.1:{port}", "{ runs(first: 100) { nodes { digest group { title } } } }")
    assert "errors" not in ok, ok


@pytest.mark.slow
@needs_node
async def test_the_gateway_refuses_over_the_limit_operations_on_a_websocket_and_runs_none_of_them(gateway, tmp_path):
    """A query and a subscription over graphql-transport-ws costing more than 5,000 each get one
    COST_LIMIT error and `complete`; the subscription never runs: a run published afterwards
    reaches a cheap subscription on the same connection and not the refused one."""
    port, home = gateway
    async with ws_connection(f"ws://127.0.0.1:{port}/graphql") as conn:
        await conn.subscribe("query", NESTED)
        await conn.subscribe("expensive", EXPENSIVE_SUBSCRIPTION)
        for op, estimated in (("query", 9261), ("expensive", 10_304)):
            refused = await conn.receive(op, timeout=30)
            assert refused["type"] == "next" and refused["payload"].get("data") is None, refused
            [error] = refused["payload"]["errors"]
            assert error["extensions"] == {"code": "COST_LIMIT", "cost": {"estimated": estimated, "max": MAX_COST}}, error
            # The gateway's own refusal: the operation was not sent on to a subgraph.
            assert error["message"] == f"Operation estimated cost {estimated} exceeded configured maximum {MAX_COST}"
            assert (await conn.receive(op, timeout=30))["type"] == "complete"

        await conn.subscribe("cheap", RUN_PUBLISHED)
        await asyncio.sleep(1.5)  # the gateway opens its subscription to the subgraph
        bundle = factories.run_bundle("after-the-refusal")
        manifests = tmp_path / "m.json"
        manifests.write_text(
            json.dumps(
                [
                    m.to_json()
                    for m in (bundle.definition, bundle.workload, bundle.protocol, bundle.environment, bundle.implementation, bundle.run)
                ]
            )
        )
        load = [KERNELINDEX, "load", str(manifests)]
        loaded = await asyncio.to_thread(subprocess.run, load, env=env_for(home), capture_output=True, text=True, timeout=120)
        assert loaded.returncode == 0, loaded.stderr
        assert (await conn.next_data("cheap", timeout=30))["runPublished"]["run"]["name"] == "synthetic-after-the-refusal"
        await conn.quiet("expensive", 1.0)


async def test_definitions_is_counted_as_the_list_it_answers(db, live_site):
    await _some_runs(db, 3)
    # every definition (up to 1,000) under each of its workloads' manifests: 1,000 × (1 + 10 × 17)
    body = _post(live_site, "{ definitions { workloads { manifest } } }")
    [error] = body["errors"]
    assert error["extensions"]["code"] == "COST_LIMIT" and error["extensions"]["cost"]["estimated"] == 171_000
    # `first` is what it is multiplied by, given literally, as a variable, or by a variable's default
    body = _post(live_site, "{ definitions(first: 2) { name workloads { digest } } }")
    assert "errors" not in body and len(body["data"]["definitions"]) == 1  # one definition stored
    sliced = "query($n: Int! = 500) { definitions(first: $n) { workloads { manifest } } }"
    assert _post(live_site, sliced)["errors"][0]["extensions"]["cost"]["estimated"] == 500 * 171
    assert "errors" not in _post(live_site, sliced, {"n": 20})
    [error] = _post(live_site, "{ definitions(first: 1001) { name } }")["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and "first: 1001" in error["message"]
