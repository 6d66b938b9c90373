"""The federated stack exactly as `make serve` starts it (`kernelindex serve`, the installed entry
point, with the bundled data): the embedded database, the registry and benchmarks subgraphs on
127.0.0.1, Hive Gateway on the port asked for, and the web process behind it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from gateway.stack import READY
from server.settings import Settings
from tests import factories
from tests.serving import ServedStack as Stack
from tests.subscriptions.support import RUN_PUBLISHED, ws_connection

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]

DEFINITION = "kernelindex-051-qkv-qknorm-backward"
SPANNING = """query($name: String!) { definition(name: $name) { id name
  comparisonGroups { leader { title } }
  jobs(first: 5) { edges { node { state gpu implementation { name } run { title evidenceLevel } } } } } }"""
REQUEST = """mutation($input: BenchmarkJobRequestInput!) { benchmarkJobRequest(input: $input) {
  created job { id state definition { name } } userErrors { field code } } }"""
JOB_UPDATED = "subscription($id: ID!) { benchmarkJobUpdated(id: $id) { cursor state job { id state gpu } } }"


def _children(pid: int) -> list[int]:
    """Every live descendant of `pid` (from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        for child in parents.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def test_serving_runs_through_the_gateway(stack):
    """The serving runs are the registry subgraph's; Hive Gateway plans them and prices the page."""
    answer = stack.post(
        '{ servingRuns(filter: {scenario: "server"}, first: 2) { totalCount nodes { digest model { name } '
        "configuration { stack { project } } provenance { license } } } }"
    )
    assert "errors" not in answer, answer
    runs = answer["data"]["servingRuns"]
    assert runs["totalCount"] == 304 and len(runs["nodes"]) == 2
    assert all(n["provenance"][0]["license"] == "Apache-2.0" and n["configuration"]["stack"]["project"] for n in runs["nodes"])
    page = httpx.get(f"http://127.0.0.1:{stack.port}/serving?scenario=server", headers={"Accept": "text/html"}, timeout=60)
    assert page.status_code == 200 and "304 of 722 serving runs match" in page.text


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    home = tmp_path_factory.mktemp("stack") / "home"
    started = Stack(home).wait_ready()  # with the bundled data, like `make serve`
    yield started
    started.stop()


def _key(stack: Stack, scope: str, tmp: Path) -> str:
    args = ["keys", "create", "--name", f"{scope}-{time.monotonic_ns()}", "--scope", scope]
    if scope == "runner":
        private = Ed25519PrivateKey.generate()
        (tmp / "runner.pub.pem").write_bytes(
            private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
        args += ["--public-key", str(tmp / "runner.pub.pem")]
    created = stack.cli(*args)
    assert created.returncode == 0, created.stderr
    return created.stdout.strip()


def test_start_up_says_what_it_does_and_where_it_answers_in_a_clean_log(stack):
    """Progress while the bundled data imports, both URLs once ready, and nothing a log reader
    has to skip: no colour codes (stdout is a file here, not a terminal), no warnings."""
    out = stack.output()
    for step in ("SOL-ExecBench snapshot", "controlled runs", "verified reruns"):
        assert re.search(rf"bundled data \d/\d: the {step}: .* \(\d+\.\d s\)", out), step
    # A first start composes and starts Hive Gateway while the data loads, not after the subgraphs
    # answer (gateway/stack.py GatewayAhead); the subgraphs' SDLs matched that composition.
    ahead = out.index("starting Hive Gateway on the composition made while the data loads")
    assert ahead < out.index("starting the registry and benchmarks subgraphs and the web process"), out
    assert "composing the supergraph" not in out and "schema changed" not in out, out
    assert f"  web pages  http://127.0.0.1:{stack.port}/\n" in out
    assert f"  GraphQL    http://127.0.0.1:{stack.port}/graphql" in out
    assert "\x1b[" not in out and "Warning" not in out and "WARN" not in out, out


def test_subgraphs_listen_on_loopback_only_and_the_gateway_serves_both(stack):
    subgraphs = [pid for pid in _children(stack.process.pid) if "--subgraph" in _cmdline(pid)]
    assert len(subgraphs) == 2
    for pid in subgraphs:
        assert "--host 127.0.0.1" in _cmdline(pid)
    sdl = stack.post("{ __schema { queryType { fields { name } } } }")["data"]["__schema"]["queryType"]["fields"]
    names = {f["name"] for f in sdl}
    assert {"runByExternalId", "definition", "benchmarkJobs"} <= names and "_entities" not in names


def test_the_subgraphs_and_the_web_process_serve_ports_the_stack_bound(stack):
    # Handed down as sockets (--fd; tests/federation/test_handed_sockets.py shows what that buys).
    handed = [_cmdline(pid) for pid in _children(stack.process.pid) if " --fd " in _cmdline(pid)]
    assert sorted("web" if " web " in line else line.split("--subgraph ")[1].split()[0] for line in handed) == [
        "benchmarks",
        "registry",
        "web",
    ]
    web = next(line for line in handed if " web " in line)
    page = httpx.get(f"http://127.0.0.1:{web.split('--port ')[1].split()[0]}/static/site.css", timeout=60)
    assert page.status_code == 200


def test_an_authenticated_mutation_and_a_query_spanning_both_subgraphs(stack, tmp_path):
    definition = stack.post(SPANNING, {"name": DEFINITION})["data"]["definition"]
    request = {
        "definition": definition["id"],
        "implementation": "kernelindex-051-ext-streamnorm",
        "gpu": "NVIDIA H200",
        "idempotencyKey": "stack-1",
    }

    anonymous = stack.post(REQUEST, {"input": request})["data"]["benchmarkJobRequest"]
    assert anonymous["userErrors"] == [{"field": "authorization", "code": "UNAUTHENTICATED"}]
    maintainer = _key(stack, "maintainer", tmp_path)
    made = stack.post(REQUEST, {"input": request}, key=maintainer)["data"]["benchmarkJobRequest"]
    assert made["userErrors"] == [] and made["created"] is True
    # benchmarks -> registry: the job's definition is resolved by the registry, by key.
    assert made["job"]["state"] == "queued" and made["job"]["definition"]["name"] == DEFINITION

    # registry -> benchmarks: the definition (registry) with its jobs (benchmarks) and each
    # job's implementation (registry again), in one request through the gateway.
    body = stack.post(SPANNING, {"name": DEFINITION})
    assert "errors" not in body, body
    data = body["data"]["definition"]
    assert data["name"] == DEFINITION
    assert any(g["leader"] and g["leader"]["title"] for g in data["comparisonGroups"])
    jobs = [e["node"] for e in data["jobs"]["edges"]]
    assert {"state": "queued", "gpu": "NVIDIA H200", "implementation": {"name": "kernelindex-051-ext-streamnorm"}, "run": None} in jobs


def _finish_a_job_with(stack: Stack, run_digest: str, implementation: str) -> None:
    """A job on DEFINITION that succeeded with the bundled run `run_digest` (tests/jobs/support.py
    `finished_job`), on an H100: the module's other jobs wait for an H200."""
    from store.client import make_client
    from tests.jobs.support import finished_job

    uri = re.search(r"embedded database on (mongodb://\S+)", stack.output()).group(1)

    async def finish() -> None:
        client = make_client(uri)
        db = client[stack.env.get("KERNELINDEX_DATABASE", "kernelindex")]
        try:
            definition = await db.definitions.find_one({"metadata.name": DEFINITION}, {"_id": 1})
            await finished_job(
                db,
                definition_digest=definition["_id"],
                implementation=implementation,
                gpu="NVIDIA H100 80GB HBM3",
                run_digest=run_digest,
                requested_by="test",
                idempotency_key=f"finished-{run_digest}",
            )
        finally:
            await client.close()

    asyncio.run(finish())


def test_a_finished_jobs_run_is_the_registrys_run_through_the_gateway(stack):
    # The benchmarks subgraph gives the job's run by key alone; the registry resolves the rest:
    # from the run's leaderboard row when the row answers, else from the whole run.
    wanted = "kernelindex-051-ext-streamnorm"
    groups = stack.data(
        """query($name: String!) { definition(name: $name) { comparisonGroups { runs(first: 100) { nodes {
        id digest title evidenceLevel implementation { name } } } } } }""",
        {"name": DEFINITION},
    )["definition"]["comparisonGroups"]
    run = next(r for g in groups for r in g["runs"]["nodes"] if r["implementation"]["name"] == wanted)
    run["cases"] = stack.data("query($id: ID!) { run(id: $id) { cases { index } } }", {"id": run["id"]})["run"]["cases"]
    assert run["cases"], "a controlled run of ours has per-case results (which its row leaves out)"
    _finish_a_job_with(stack, run["digest"], wanted)

    query = """query($name: String!) { definition(name: $name) { jobs(first: 100, state: succeeded) { edges { node {
        run { %s } } } } } }"""
    nodes = [e["node"] for e in stack.data(query % "id title evidenceLevel", {"name": DEFINITION})["definition"]["jobs"]["edges"]]
    assert {"id": run["id"], "title": run["title"], "evidenceLevel": run["evidenceLevel"]} in [n["run"] for n in nodes]
    nodes = [e["node"] for e in stack.data(query % "id cases { index }", {"name": DEFINITION})["definition"]["jobs"]["edges"]]
    assert {"id": run["id"], "cases": run["cases"]} in [n["run"] for n in nodes]


def _load_run(stack: Stack, tmp_path: Path, name: str) -> None:
    bundle = factories.run_bundle(name)
    manifests = tmp_path / f"{name}.json"
    objects = (bundle.definition, bundle.workload, bundle.protocol, bundle.environment, bundle.implementation, bundle.run)
    manifests.write_text(json.dumps([m.to_json() for m in objects]))
    loaded = stack.cli("load", str(manifests))
    assert loaded.returncode == 0, loaded.stderr


async def test_a_subscription_of_each_subgraph_through_the_gateway(stack, tmp_path):
    ws = stack.url.replace("http://", "ws://")
    definition = stack.post(SPANNING, {"name": DEFINITION})["data"]["definition"]["id"]
    maintainer, runner = _key(stack, "maintainer", tmp_path), _key(stack, "runner", tmp_path)
    request = {
        "definition": definition,
        "implementation": "kernelindex-051-ext-streamnorm",
        "gpu": "NVIDIA H200",
        "idempotencyKey": "stack-2",
    }
    assert stack.post(REQUEST, {"input": request}, key=maintainer)["data"]["benchmarkJobRequest"]["job"]
    # A claim takes the oldest queued job (another test's may be older): watch that one.
    queued = stack.post("{ benchmarkJobs(filter: {state: queued}, first: 100) { nodes { id } } }")["data"]["benchmarkJobs"]["nodes"]
    job = queued[-1]

    # registry: runPublished, public.
    async with ws_connection(ws) as connection:
        await connection.subscribe("runs", RUN_PUBLISHED)
        await asyncio.sleep(1.5)  # the gateway opens its own subscription to the subgraph
        await asyncio.to_thread(_load_run, stack, tmp_path, "through-the-stack")
        message = await connection.next_data("runs", timeout=30)
    assert message["runPublished"]["run"]["name"] == "synthetic-through-the-stack"

    # benchmarks: benchmarkJobUpdated, with the key in connection_init (passed on upstream).
    async with ws_connection(ws, {"Authorization": "Bearer not-a-key"}) as connection:
        await connection.subscribe("job", JOB_UPDATED, {"id": job["id"]})
        refused = await connection.receive("job", timeout=30)
    assert refused["type"] in ("error", "next") and "UNAUTHENTICATED" in json.dumps(refused)
    async with ws_connection(ws, {"Authorization": f"Bearer {maintainer}"}) as connection:
        await connection.subscribe("job", JOB_UPDATED, {"id": job["id"]})
        await asyncio.sleep(1.5)
        claim = 'mutation { benchmarkJobClaim(input: {gpu: "NVIDIA H200", leaseSeconds: 600}) { job { id } userErrors { code } } }'
        claimed = await asyncio.to_thread(stack.post, claim, None, runner)
        assert claimed["data"]["benchmarkJobClaim"]["job"]["id"] == job["id"], claimed
        event = await connection.next_data("job", timeout=30)
    assert event["benchmarkJobUpdated"]["state"] == "claimed"
    assert event["benchmarkJobUpdated"]["job"] == {"id": job["id"], "state": "claimed", "gpu": "NVIDIA H200"}


def _registry_connections(stack: Stack) -> set[str]:
    """Peers of the ESTABLISHED TCP sockets on the registry subgraph's port (from /proc)."""
    port = int(re.search(r"registry subgraph on http://127\.0\.0\.1:(\d+)/", stack.output()).group(1))
    peers = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                peers.add(fields[2])
    return peers


async def test_identical_live_subscriptions_share_one_upstream_subscription(stack, tmp_path):
    # 40 anonymous clients of the same runPublished subscription through the gateway: one
    # upstream subscription (gateway/gateway.config.mjs shareLiveSubscriptions), so the gateway
    # needs no more upstream connections for 40 than for one; every client gets every run, the
    # first one leaving stops nobody else, and a resuming client (`after`) replays on its own.
    ws = stack.url.replace("http://", "ws://")
    async with contextlib.AsyncExitStack() as exits:
        before = _registry_connections(stack)
        clients = [await exits.enter_async_context(ws_connection(ws)) for _ in range(40)]
        for client in clients:
            await client.subscribe("runs", RUN_PUBLISHED)
        await asyncio.sleep(2.0)  # the gateway opens its upstream subscription(s)
        opened = _registry_connections(stack) - before
        assert len(opened) <= 1, f"{len(opened)} upstream connections for 40 identical subscriptions"

        await asyncio.to_thread(_load_run, stack, tmp_path, "shared-1")
        first = [(await client.next_data("runs", timeout=30))["runPublished"] for client in clients]
        assert {m["run"]["name"] for m in first} == {"synthetic-shared-1"}
        assert len({m["cursor"] for m in first}) == 1

        for client in clients[:20]:  # the client whose subscribe opened the upstream one among them
            await client.complete("runs")
        late = await exits.enter_async_context(ws_connection(ws))
        await late.subscribe("runs", RUN_PUBLISHED)
        resuming = await exits.enter_async_context(ws_connection(ws))
        await resuming.subscribe("runs", RUN_PUBLISHED, {"after": first[0]["cursor"]})
        await asyncio.sleep(1.5)

        await asyncio.to_thread(_load_run, stack, tmp_path, "shared-2")
        for client in [*clients[20:], late, resuming]:
            assert (await client.next_data("runs", timeout=30))["runPublished"]["run"]["name"] == "synthetic-shared-2"
        for client in clients[:20]:
            await client.quiet("runs", 0.5)


def test_pages_are_served_through_the_gateway(stack):
    run = stack.post('{ runByExternalId(source: "sol-execbench", externalId: "37369") { digest title } }')["data"]["runByExternalId"]
    page = httpx.get(f"http://127.0.0.1:{stack.port}/runs/{run['digest']}", headers={"Accept": "text/html"}, timeout=60)
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert run["title"].split(" · ")[1] in page.text


def test_sigterm_stops_every_process(tmp_path):
    started = Stack(tmp_path / "home", "--no-data", "--replicas", "2").wait_ready()
    children = _children(started.process.pid)
    assert len([pid for pid in children if "--subgraph registry" in _cmdline(pid)]) == 2
    assert len([pid for pid in children if "--subgraph benchmarks" in _cmdline(pid)]) == 2
    started.stop()
    assert started.process.returncode == 0, started.output()
    time.sleep(0.5)
    assert [pid for pid in children if Path(f"/proc/{pid}").exists() and _cmdline(pid)] == []
    assert not (tmp_path / "home" / "db.json").exists()


def test_sigterm_while_the_data_loads_stops_the_gateway_started_beside_it(tmp_path):
    """A first start's Hive Gateway runs while the catalog imports (spawned from GatewayAhead's
    thread): a stop then ends it, the database and the composer too, and nothing is left."""
    started = Stack(tmp_path / "home")
    deadline = time.monotonic() + 120
    while "starting Hive Gateway on the composition made while the data loads" not in started.output():
        assert time.monotonic() < deadline and started.process.poll() is None, started.output()
        time.sleep(0.1)
    gateway = []
    while not gateway and time.monotonic() < deadline:
        children = _children(started.process.pid)
        gateway = [pid for pid in children if "hive-gateway" in _cmdline(pid)]
        time.sleep(0.1)
    assert gateway, started.output()
    out = started.stop()
    assert "the KernelIndex catalog export:" not in out and READY not in out, out  # stopped during the import
    assert started.process.returncode == 0 and "Traceback" not in out, out
    time.sleep(0.5)
    assert [pid for pid in children if Path(f"/proc/{pid}").exists() and _cmdline(pid)] == []


def test_a_restart_starts_the_gateway_on_the_last_composition_and_mends_a_stale_one(tmp_path):
    """A restart hands Hive Gateway this home's last composition (today's URLs written in) before
    the database starts and the subgraphs answer; when their SDLs turn out to be another composition's, the gateway is
    started again on theirs, and the stack answers a query spanning both subgraphs either way."""
    home = tmp_path / "home"
    Stack(home, "--no-data").wait_ready().stop()
    cache = home / "supergraphs"
    key = (cache / "last").read_text()
    for stale in (False, True):
        if stale:  # as if the code changed since: the last composition is not the subgraphs' one
            (cache / f"{key}.graphql").rename(cache / f"{'0' * 32}.graphql")
            (cache / "last").write_text("0" * 32)
        started = Stack(home, "--no-data").wait_ready()
        try:
            out = started.output()
            # Hive Gateway first (it needs no database), then the database, then the rest.
            gateway, database = out.index("starting Hive Gateway on the last composition"), out.index("starting the embedded database")
            assert gateway < database < out.index("starting the registry and benchmarks subgraphs and the web process"), out
            assert ("the subgraphs' schema changed" in out) is stale, out
            assert started.data(SPANNING, {"name": "no-such-definition"}) == {"definition": None}
            assert f'url: "{started.url}"' not in (home / "supergraph.graphql").read_text()  # the subgraphs' URLs, not its own
        finally:
            started.stop()
    assert (cache / "last").read_text() == key and (cache / f"{key}.graphql").is_file()


def test_a_crashed_subgraph_stops_the_stack_with_one_error_line(tmp_path):
    started = Stack(tmp_path / "home", "--no-data").wait_ready()
    children = _children(started.process.pid)
    victim = next(pid for pid in children if "--subgraph benchmarks" in _cmdline(pid))
    os.kill(victim, signal.SIGKILL)
    try:
        started.process.wait(timeout=60)
    finally:
        started.stop()
    assert started.process.returncode == 1
    errors = [line for line in started.output().splitlines() if line.startswith("error:")]
    assert errors == ["error: the benchmarks subgraph exited unexpectedly (code -9)"]
    time.sleep(0.5)
    assert [pid for pid in children if Path(f"/proc/{pid}").exists() and _cmdline(pid)] == []


async def test_many_subscriptions_share_the_gateway_but_each_client_connection_is_limited(stack, tmp_path):
    """The gateway carries every client's subscriptions to the subgraph on a few connections, so
    30 subscriptions (more than one client may hold) all get the run; one client connection
    still holds at most 20 at once."""
    ws = stack.url.replace("http://", "ws://")
    async with ws_connection(ws) as first, ws_connection(ws) as second:
        for i in range(15):
            await first.subscribe(f"a{i}", RUN_PUBLISHED)
            await second.subscribe(f"b{i}", RUN_PUBLISHED)
        for i in range(15, 20):
            await first.subscribe(f"a{i}", RUN_PUBLISHED)
        await first.subscribe("one-too-many", RUN_PUBLISHED)
        refused = await first.receive("one-too-many", timeout=30)
        assert "TOO_MANY_SUBSCRIPTIONS" in json.dumps(refused), refused
        await asyncio.sleep(2.0)
        bundle = factories.run_bundle("thirty-five")
        manifests = tmp_path / "m.json"
        manifests.write_text(
            json.dumps(
                [
                    m.to_json()
                    for m in (bundle.definition, bundle.workload, bundle.protocol, bundle.environment, bundle.implementation, bundle.run)
                ]
            )
        )
        loaded = await asyncio.to_thread(stack.cli, "load", str(manifests))
        assert loaded.returncode == 0, loaded.stderr
        for connection, ids_ in ((first, [f"a{i}" for i in range(20)]), (second, [f"b{i}" for i in range(15)])):
            for op in ids_:
                message = await connection.next_data(op, timeout=30)
                assert message["runPublished"]["run"]["name"] == "synthetic-thirty-five"
        # Completing one frees a place on that connection.
        await first.complete("a0")
        await asyncio.sleep(0.5)
        await first.subscribe("a-again", RUN_PUBLISHED)
        await first.quiet("a-again", 1.0)


def _graphql_body(pad: int) -> bytes:
    return json.dumps({"query": "{ __typename }", "variables": {"pad": "x" * pad}}).encode()


def test_the_gateway_bounds_request_bodies_as_the_subgraphs_do(stack):
    """Hive Gateway answers `{ __typename }` itself, so only its own limit stands between a client
    and its memory: 1 MiB, with Content-Length or chunked, refused with 413 and the subgraphs' code."""
    limit = Settings().max_body_bytes
    refusal = {
        "errors": [{"message": f"request body is larger than the limit of {limit} bytes", "extensions": {"code": "PAYLOAD_TOO_LARGE"}}]
    }
    json_type = {"content-type": "application/json"}

    def chunked(body: bytes):
        for start in range(0, len(body), 64 * 1024):
            yield body[start : start + 64 * 1024]

    at_limit = _graphql_body(limit - len(_graphql_body(0)))
    assert len(at_limit) == limit
    for content in (at_limit, chunked(at_limit)):
        answer = httpx.post(stack.url, content=content, headers=json_type, timeout=60)
        assert answer.status_code == 200 and answer.json() == {"data": {"__typename": "Query"}}, answer.text[:300]
    for content in (at_limit + b" ", chunked(at_limit + b" ")):
        answer = httpx.post(stack.url, content=content, headers=json_type, timeout=60)
        assert answer.status_code == 413 and answer.json() == refusal, answer.text[:300]


async def test_the_gateway_closes_a_websocket_whose_message_is_over_the_limit(stack):
    """As the subgraphs do (1009, "message too big"): connection_init and operations alike."""
    limit = Settings().max_body_bytes
    ws = stack.url.replace("http://", "ws://")

    async def send(first: dict, then: dict | None = None) -> tuple[int | None, list[dict]]:
        received = []
        async with connect(ws, subprotocols=["graphql-transport-ws"], max_size=None) as socket:
            for message in (first, then):
                if message is None:
                    break
                await socket.send(json.dumps(message))
                try:
                    received.append(json.loads(await asyncio.wait_for(socket.recv(), 30)))
                except ConnectionClosed:
                    return socket.close_code, received
        return None, received

    def subscribe(pad: int) -> dict:
        message = {"id": "1", "type": "subscribe", "payload": {"query": "{ __typename }", "variables": {"pad": ""}}}
        message["payload"]["variables"]["pad"] = "x" * (pad - len(json.dumps(message)))
        return message

    init = {"type": "connection_init", "payload": {}}
    under = subscribe(limit)
    assert len(json.dumps(under)) == limit
    assert await send(init, under) == (
        None,
        [{"type": "connection_ack"}, {"id": "1", "type": "next", "payload": {"data": {"__typename": "Query"}}}],
    )
    assert await send(init, subscribe(limit + 1)) == (1009, [{"type": "connection_ack"}])
    big_init = {"type": "connection_init", "payload": {"pad": "x" * limit}}
    assert await send(big_init) == (1009, [])
