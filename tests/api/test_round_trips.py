"""No N+1: the number of database round trips of a page does not grow with its size."""

import httpx
from asgi_lifespan import LifespanManager
from pymongo import monitoring

from server.app import create_app
from server.settings import Settings
from store.publish import publish_many
from tests import factories


class CommandCounter(monitoring.CommandListener):
    def __init__(self):
        self.commands: list[str] = []

    def started(self, event):
        if event.command_name in {"find", "aggregate", "getMore", "count"}:
            self.commands.append(event.command_name)

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


QUERY = """query($n: Int!) { runs(first: $n) { edges { node {
  digest rank
  protocol { harness { name } comparabilityFamily }
  environment { gpu { product } }
  definition { name }
  workload { caseCount }
  implementation { project }
  group { size leader { digest } }
} } } }"""


async def _round_trips(db, mongo_uri, n: int) -> int:
    counter = CommandCounter()
    app = create_app(mongo_uri, Settings(database=db.name), client_options={"event_listeners": [counter]})
    async with LifespanManager(app) as manager:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://t") as http:
            counter.commands.clear()
            body = (await http.post("/graphql", json={"query": QUERY, "variables": {"n": n}})).json()
    assert "errors" not in body
    assert len(body["data"]["runs"]["edges"]) == n
    return len(counter.commands)


async def test_runs_page_round_trips_do_not_grow_with_page_size(db, mongo_uri):
    # Runs over several definitions, GPUs and groups, so the nested lookups really batch.
    bundles = []
    for i in range(100):
        defn = factories.definition(f"op-{i % 4}")
        env = factories.environment("NVIDIA H200", "sm_90") if i % 2 else factories.environment()
        bundles.append(factories.run_bundle(str(i), score=i / 100, user=f"u{i}", defn=defn, env=env))
    await publish_many(db, bundles)
    small = await _round_trips(db, mongo_uri, 10)
    large = await _round_trips(db, mongo_uri, 100)
    assert large == small, (small, large)
    assert large <= 9
