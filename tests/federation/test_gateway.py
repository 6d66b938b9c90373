"""KernelIndex behind a real federation gateway (Hive Gateway from npm): the supergraph is
composed from the live subgraph SDL, and queries and authenticated mutations go through it."""

import json
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from gateway.bootstrap import bootstrap
from gateway.embedded import free_port
from gateway.settings import Settings
from store.keys import Scope, create_key

FEDERATION = Path(__file__).resolve().parents[2] / "federation"
DATA = Path(__file__).resolve().parents[2] / "data"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]


def _serve(app) -> tuple[str, object, object]:
    import threading

    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}/graphql", server, thread


@pytest.fixture
def federation_gateway(db, mongo_uri, tmp_path):
    from gateway.app import create_app

    services, servers = [], []
    for name in ("registry", "benchmarks"):
        url, server, thread = _serve(create_app(mongo_uri, Settings(database=db.name), subgraph=name))
        servers.append((server, thread))
        sdl = httpx.post(url, json={"query": "{ _service { sdl } }"}).json()["data"]["_service"]["sdl"]
        services.append({"name": name, "url": url, "sdl": sdl})
    composed = subprocess.run(["node", str(FEDERATION / "compose.mjs"), "guild"], input=json.dumps(services), capture_output=True, text=True, timeout=120)
    assert composed.returncode == 0, composed.stdout + composed.stderr
    (tmp_path / "supergraph.graphql").write_text(json.loads(composed.stdout)["supergraphSdl"])
    port = free_port()
    proc = subprocess.Popen(
        [str(FEDERATION / "node_modules" / ".bin" / "hive-gateway"), "supergraph", str(tmp_path / "supergraph.graphql"),
         "--config-path", str(FEDERATION / "gateway.config.mjs"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = f"http://127.0.0.1:{port}/graphql"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(proc.stdout.read())
        try:
            if httpx.post(url, json={"query": "{ __typename }"}, timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        proc.kill()
        raise AssertionError("the gateway did not start")
    yield url
    proc.terminate()
    proc.wait(timeout=20)
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)


async def test_queries_and_mutations_through_the_gateway(db, mongo_uri, federation_gateway):
    await bootstrap(mongo_uri, Settings(database=db.name), DATA)
    query = """{ runByExternalId(source: "sol-execbench", externalId: "37369") {
      id title rank primaryMeasurement { display } group { size leader { title } }
      sourceNative { solExecBench { summary } } environment { gpu { display } } } }"""
    body = httpx.post(federation_gateway, json={"query": query}, timeout=30).json()
    run = body["data"]["runByExternalId"]
    assert run["title"] == "Geometric · 051_attention_qkv_with_qk_norm_single_kernel_backward · B200"
    assert run["primaryMeasurement"]["display"] == "333.6 µs" and run["rank"] == 1
    assert run["sourceNative"]["solExecBench"]["summary"] == "SOL 0.2851 · 0.46× reference · 2/16 cases faster"
    assert run["environment"]["gpu"]["display"] == "NVIDIA B200 (sm_100)"
    node = httpx.post(federation_gateway, json={"query": 'query($id: ID!) { node(id: $id) { ... on Run { digest } } }', "variables": {"id": run["id"]}}, timeout=30).json()
    assert node["data"]["node"]["digest"].startswith("sha256:")

    # The Authorization header travels through the gateway to the subgraph.
    _, secret = await create_key(db, name="through-gateway", scope=Scope.reader)
    mutation = 'mutation { benchmarkJobClaim(input: {gpu: "NVIDIA H200"}) { job { id } userErrors { code } } }'
    anonymous = httpx.post(federation_gateway, json={"query": mutation}, timeout=30).json()
    assert anonymous["data"]["benchmarkJobClaim"]["userErrors"] == [{"code": "UNAUTHENTICATED"}]
    as_reader = httpx.post(federation_gateway, json={"query": mutation}, headers={"Authorization": f"Bearer {secret}"}, timeout=30).json()
    assert as_reader["data"]["benchmarkJobClaim"]["userErrors"] == [{"code": "FORBIDDEN"}]


async def test_subscriptions_reach_clients_through_the_gateway(db, federation_gateway):
    """Client → Hive Gateway over graphql-transport-ws; gateway → subgraph over WebSocket too
    (its default SSE transport would deliver nothing from Strawberry)."""
    import asyncio

    from store.publish import publish
    from tests import factories
    from tests.subscriptions.support import RUN_PUBLISHED, ws_connection

    url = federation_gateway.replace("http://", "ws://")
    async with ws_connection(url) as connection:
        await connection.subscribe("runs", RUN_PUBLISHED)
        await asyncio.sleep(1.0)  # the gateway opens its own subscription to the subgraph
        outcome = await publish(db, factories.run_bundle("through-gateway"))
        message = await connection.next_data("runs")
    assert message["runPublished"]["run"]["digest"] == outcome.run_digest
    assert message["runPublished"]["run"]["name"] == "synthetic-through-gateway"
