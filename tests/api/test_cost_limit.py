"""The cost limit: an operation whose estimated cost is over the documented maximum is refused
with COST_LIMIT before it runs; ordinary pages are not."""

from __future__ import annotations

import shutil
import time

import httpx
import pytest

from resolvers.cost_limit import MAX_COST
from store.publish import publish_many
from tests import factories

# The 114-character query: 27.5 s and 693 KB before the limit.
NESTED = "{ runs(first:20){ nodes { group { runs(first:20){ nodes { group { runs(first:20){ nodes { digest } } } } } } } } }"


def _post(site: str, query: str, variables: dict | None = None) -> tuple[dict, float]:
    started = time.perf_counter()
    response = httpx.post(f"{site}/graphql", json={"query": query, "variables": variables or {}}, timeout=60)
    return response.json(), time.perf_counter() - started


async def _some_runs(db, count: int = 30) -> None:
    await publish_many(db, [factories.run_bundle(f"cost-{n}", score=n / 100) for n in range(count)])


async def test_the_nested_query_is_refused_before_it_runs_in_under_100_ms(db, live_site):
    await _some_runs(db)
    _post(live_site, "{ __typename }")  # a warm connection and schema
    timings = []
    for _ in range(3):
        body, seconds = _post(live_site, NESTED)
        timings.append(seconds)
        assert body.get("data") is None
        [error] = body["errors"]
        assert error["extensions"]["code"] == "COST_LIMIT"
        assert error["extensions"]["cost"] == {"estimated": 9261, "max": MAX_COST}
        assert "above the maximum of 5,000" in error["message"]
    assert min(timings) < 0.1, timings


async def test_aliases_multiply_the_cost(db, live_site):
    await _some_runs(db, 3)
    one = "{ runs(first: 50) { nodes { digest group { title } } } }"  # 1 + 50 + 50 = 101
    body, _ = _post(live_site, one)
    assert "errors" not in body, body
    many = "{ " + " ".join(f"a{n}: runs(first: 50) {{ nodes {{ digest group {{ title }} }} }}" for n in range(30)) + " }"
    body, _ = _post(live_site, many)  # 30 × 101 = 3,030: under the limit
    assert "errors" not in body, body
    deeper = "{ " + " ".join(f"a{n}: runs(first: 100) {{ nodes {{ digest group {{ title }} implementation {{ name }} }} }}" for n in range(30)) + " }"
    body, _ = _post(live_site, deeper)  # 30 × 301
    assert body["errors"][0]["extensions"] == {"code": "COST_LIMIT", "cost": {"estimated": 9030, "max": MAX_COST}}


async def test_page_sizes_from_variables_count(db, live_site):
    await _some_runs(db, 3)
    query = "query($n: Int!) { runs(first: $n) { nodes { group { runs(first: $n) { nodes { digest } } } } } }"
    body, _ = _post(live_site, query, {"n": 5})  # 1 + 5 + 5 + 5 + 25
    assert "errors" not in body, body
    body, _ = _post(live_site, query, {"n": 100})  # 1 + 100 + 100 + 100 + 10,000
    assert body["errors"][0]["extensions"]["cost"]["estimated"] == 10_301


async def test_an_ordinary_dossier_query_is_far_under_the_limit(db, live_site):
    await _some_runs(db, 3)
    query = """{ runs(first: 100) { nodes { title primaryMeasurement { display statistic } rank
        group { size leader { title } } correctness { statement } evidenceLevel
        protocol { harness { name version } } environment { gpu { display } } citation { text } } } }"""
    body, _ = _post(live_site, query)
    assert "errors" not in body, body


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_gateway_refuses_the_nested_query_too(tmp_path):
    """Through Hive Gateway, as `kernelindex serve` starts it: the same limit in its config."""
    from gateway.embedded import free_port
    from tests.serving import start_serve, stop, wait_ready

    port = free_port()
    proc = start_serve(tmp_path / "home", port, "--no-data")
    try:
        wait_ready(proc, port, timeout=240)
        body, _ = _post(f"http://127.0.0.1:{port}", NESTED)
        assert body.get("data") in (None, {"runs": None}), body
        assert body["errors"][0]["extensions"]["code"] == "COST_LIMIT", body
        # Refused by the gateway itself (its own message), with the subgraph's estimate.
        assert body["errors"][0]["message"] == f"Operation estimated cost 9261 exceeded configured maximum {MAX_COST}"
        assert body["errors"][0]["extensions"]["cost"] == {"estimated": 9261, "max": MAX_COST}
        ok, _ = _post(f"http://127.0.0.1:{port}", "{ runs(first: 100) { nodes { digest group { title } } } }")
        assert "errors" not in ok, ok
    finally:
        stop(proc)
