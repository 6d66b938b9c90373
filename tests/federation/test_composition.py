"""The two subgraphs (registry, benchmarks), as served, compose with both real composers, and
resolve entities by key in one database round trip per entity type."""

import json
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from asgi_lifespan import LifespanManager
from pymongo import monitoring

from registry.digest import manifest_digest
from resolvers import ids
from server.app import create_app
from server.settings import Settings
from store.keys import Scope
from store.publish import publish_many
from tests import factories
from tests.jobs import support

GATEWAY_DIR = Path(__file__).resolve().parents[2] / "gateway"


class Finds(monitoring.CommandListener):
    def __init__(self):
        self.collections: list[str] = []

    def started(self, event):
        if event.command_name == "find":
            self.collections.append(event.command["find"])

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


async def _post(app, query: str, variables: dict | None = None) -> dict:
    async with LifespanManager(app) as manager:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://subgraph.test") as client:
            body = (await client.post("/graphql", json={"query": query, "variables": variables or {}})).json()
    assert "errors" not in body, body
    return body["data"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
async def test_subgraph_sdl_composes_with_guild_and_apollo(db, mongo_uri):
    if not (GATEWAY_DIR / "node_modules").is_dir():
        pytest.fail("gateway/node_modules missing: run `npm ci --prefix federation` (make test does)")
    services = []
    for name in ("registry", "benchmarks"):
        app = create_app(mongo_uri, Settings(database=db.name), subgraph=name)
        sdl = (await _post(app, "{ _service { sdl } }"))["_service"]["sdl"]
        assert '@key(fields: "id")' in sdl and "federation/v2.9" in sdl
        services.append({"name": name, "url": f"http://127.0.0.1:1/{name}", "sdl": sdl})
    registry_sdl, benchmarks_sdl = services[0]["sdl"], services[1]["sdl"]
    assert "runPublished" in registry_sdl and "benchmarkJobRequest" not in registry_sdl
    assert "benchmarkJobRequest" in benchmarks_sdl and "runByExternalId" not in benchmarks_sdl
    result = subprocess.run(
        ["node", str(GATEWAY_DIR / "compose.mjs")], input=json.dumps(services), capture_output=True, text=True, timeout=120
    )
    report = json.loads(result.stdout)
    assert report["guild"]["errors"] == [] and report["apollo"]["errors"] == [], report
    assert result.returncode == 0
    supergraph = report["supergraphSdl"]
    assert "type Run implements Node" in supergraph
    # Definition is resolved by both: the registry owns it, the benchmarks subgraph adds `jobs`.
    assert 'type Definition implements Node @join__type(graph: BENCHMARKS, key: "id") @join__type(graph: REGISTRY, key: "id")' in supergraph


async def test_entities_resolve_by_key_in_one_round_trip_per_type(db, mongo_uri):
    outcomes = await publish_many(db, [factories.run_bundle(str(i), user=f"u{i}") for i in range(3)])
    reps = [{"__typename": "Run", "id": ids.encode("Run", o.run_digest)} for o in outcomes]
    reps.append({"__typename": "ComparisonGroup", "id": ids.encode("ComparisonGroup", outcomes[0].group_key)})
    finds = Finds()
    app = create_app(mongo_uri, Settings(database=db.name), subgraph="registry", client_options={"event_listeners": [finds]})
    data = await _post(
        app,
        "query($r: [_Any!]!) { _entities(representations: $r) { ... on Run { digest } ... on ComparisonGroup { size } } }",
        {"r": reps},
    )
    assert [e.get("digest") for e in data["_entities"][:3]] == [o.run_digest for o in outcomes]
    assert data["_entities"][3] == {"size": 3}
    request_finds = [c for c in finds.collections if c in ("runs", "comparison_groups")]
    assert sorted(request_finds) == ["comparison_groups", "runs"], finds.collections


async def test_the_benchmarks_subgraph_reads_only_jobs_for_the_registrys_references(api, db, mongo_uri):
    """The benchmarks subgraph adds `jobs` to Definition and Implementation and resolves the
    registry's references to them by key alone: one find (jobs) per field, no read of the
    definitions or implementations the registry has just read."""
    objects = await support.registry_with_controlled_definition(db)
    maintainer = await support.key(db, Scope.maintainer)
    made = [(await support.request(api, maintainer, objects, idem=f"k{i}"))["job"]["id"] for i in range(3)]
    reps = [
        {"__typename": "Definition", "id": ids.encode("Definition", manifest_digest(objects["definition"]))},
        {"__typename": "Implementation", "id": ids.encode("Implementation", manifest_digest(objects["implementation"]))},
        {"__typename": "Definition", "id": ids.encode("Definition", "sha256:" + "0" * 64)},  # no such definition: no jobs
    ]
    finds = Finds()
    app = create_app(mongo_uri, Settings(database=db.name), subgraph="benchmarks", client_options={"event_listeners": [finds]})
    data = await _post(
        app,
        """query($r: [_Any!]!) { _entities(representations: $r) {
          ... on Definition { id jobs(first: 5) { edges { node { id } } } }
          ... on Implementation { id jobs(first: 5) { edges { node { id } } } } } }""",
        {"r": reps},
    )
    listed = [[edge["node"]["id"] for edge in entity["jobs"]["edges"]] for entity in data["_entities"]]
    assert listed == [made[::-1], made[::-1], []]  # newest first
    assert [entity["id"] for entity in data["_entities"]] == [rep["id"] for rep in reps]
    request_finds = [c for c in finds.collections if c in ("jobs", "definitions", "implementations")]
    assert request_finds == ["jobs", "jobs", "jobs"], finds.collections


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
async def test_a_restart_reuses_the_composition_with_its_new_urls(db, mongo_uri, tmp_path):
    """`serve` composes once per set of SDLs (the node composer is ~1.3 s of a restart): a restart's
    subgraphs listen on new ports, and its supergraph is what composing afresh gives."""
    from gateway.stack import cached_supergraph, compose_supergraph, gateway_packages, last_composition, with_urls

    sdls = {}
    for name in ("registry", "benchmarks"):
        app = create_app(mongo_uri, Settings(database=db.name), subgraph=name)
        sdls[name] = (await _post(app, "{ _service { sdl } }"))["_service"]["sdl"]
    gateway, cache = gateway_packages(), tmp_path / "supergraphs"

    def services(port: int) -> list[tuple[str, str, str]]:
        return [(name, f"http://127.0.0.1:{port + i}/graphql", sdls[name]) for i, name in enumerate(("registry", "benchmarks"))]

    first = cached_supergraph(services(41000), gateway, cache)
    [stored] = list(cache.glob("*.graphql"))
    composed_at = stored.stat().st_mtime_ns
    second = cached_supergraph(services(52000), gateway, cache)
    assert stored.stat().st_mtime_ns == composed_at and list(cache.glob("*.graphql")) == [stored]  # not composed again
    assert second == compose_supergraph(services(52000), gateway)
    assert 'url: "http://127.0.0.1:52001/graphql"' in second and "41000" not in second and "41000" in first
    # The home's last composition: what the next start gives Hive Gateway before its subgraphs answer.
    key, text = last_composition(cache)
    assert stored.name == f"{key}.graphql" and with_urls(text, {n: u for n, u, _ in services(52000)}) == second
    # Other SDLs are another composition.
    sdls["benchmarks"] += "\n# another revision of the benchmarks subgraph\n"
    cached_supergraph(services(52000), gateway, cache)
    assert len(list(cache.glob("*.graphql"))) == 2 and last_composition(cache)[0] != key
