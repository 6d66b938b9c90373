"""The web app as its own process (`kernelindex web`, as behind the federation gateway): the same
pages, from GraphQL asked over the network; and the home page's paging over many operations."""

import subprocess
import time

import httpx
import pytest

from store.embedded import free_port
from store.publish import publish_many
from tests import factories
from tests.command import KERNELINDEX, kernelindex
from web import create_web_app

JSON = {"accept": "application/json"}


@pytest.fixture
def web_process(site):
    """`kernelindex web` pointed at the API server's /graphql over real HTTP, on its own port."""
    port = free_port()
    process = subprocess.Popen([KERNELINDEX, "web", "--graphql", f"{site}/graphql", "--port", str(port)], stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()
        try:
            httpx.get(f"{base}/static/site.css", timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    yield base
    process.terminate()
    assert process.wait(timeout=10) == 0


def test_web_refuses_a_bad_endpoint_or_a_taken_port(site):
    bad = kernelindex("web", "--graphql", "localhost:8000/graphql")
    assert bad.returncode == 1 and bad.stderr == "error: --graphql: 'localhost:8000/graphql' is not an http(s) URL\n"
    taken = kernelindex("web", "--graphql", f"{site}/graphql", "--port", site.rsplit(":", 1)[1])
    assert taken.returncode == 1 and "is already in use" in taken.stderr


async def test_a_separate_web_process_serves_the_same_pages(db, site, web_process):
    outcomes = await publish_many(
        db, [factories.run_bundle("a", score=0.9, user="alice"), factories.run_bundle("b", score=0.2, user="bob")]
    )
    async with httpx.AsyncClient(timeout=30) as http:
        home = (await http.get(f"{web_process}/", headers=JSON)).json()
        assert home == (await http.get(f"{site}/", headers=JSON)).json()
        group = home["operations"][0]["groups"][0]
        board = (await http.get(f"{web_process}/groups/{group['id']}", headers=JSON)).json()
        assert [r["digest"] for r in board["runs"]] == [o.run_digest for o in outcomes]
        page = await http.get(f"{web_process}/runs/{outcomes[1].run_digest}", headers={"accept": "text/html"})
        assert page.status_code == 200 and "Rank 2 of 2" in page.text and page.headers["server-timing"].startswith("page;dur=")
        # The API down: a page says so, with no stack trace.
        down = create_web_app(f"http://127.0.0.1:{free_port()}/graphql")
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=down), base_url="http://web.test") as alone:
            response = await alone.get("/", headers=JSON)
            assert response.status_code == 502 and response.json() == {"error": "the API did not answer: ConnectError"}


async def test_home_pages_through_many_operations(db, site):
    bundles = [factories.run_bundle(f"op{i}", defn=factories.definition(f"op-{i:02d}")) for i in range(25)]
    await publish_many(db, bundles)
    async with httpx.AsyncClient(base_url=site, timeout=30) as http:
        first = (await http.get("/", headers=JSON)).json()
        assert [op["name"] for op in first["operations"]] == [f"op-{i:02d}" for i in range(20)]
        assert first["page"]["after"] is None and first["page"]["matching"] == 25 and first["page"]["next"]
        rest = (await http.get("/", params={"after": first["page"]["next"]}, headers=JSON)).json()
        assert [op["name"] for op in rest["operations"]] == [f"op-{i:02d}" for i in range(20, 25)] and rest["page"]["next"] is None
        found = (await http.get("/", params={"q": "OP-2"}, headers=JSON)).json()
        assert [op["name"] for op in found["operations"]] == ["op-20", "op-21", "op-22", "op-23", "op-24"]
        assert all(op["groups"][0]["leader"]["title"] == f"alice · {op['name']} · B200" for op in found["operations"])
