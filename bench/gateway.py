"""Benchmark: the federated stack (`kernelindex serve`'s processes) through Hive Gateway.

    python bench/gateway.py [--requests 300] [--seconds 15] [--clients 50] [--subscribers 1000]
                            [--runs 20] [--skip-throughput] [--skip-subscriptions]

Starts SecantusDB (in memory) unless MONGODB_URI is set, and the stack of gateway/stack.py on it
(the registry and benchmarks subgraphs on 127.0.0.1, Hive Gateway, the web process) with the
bundled data in a fresh database, and measures, one after the other:

1. the dossier query (README's seed query) sent `--requests` times, one at a time, alternately
   straight to the registry subgraph and through the gateway: p50 of each and their ratio
   (target ≤ 1.25×, issue 6/8);
2. the cross-subgraph query (a definition, its groups' #1s, its jobs and each job's run) through
   the gateway, one at a time, alternating with its floor: the three fetches of the gateway's plan
   sent straight to the subgraphs in a row, plus step 1's gateway hop once. The bundled data has
   no jobs: five succeeded ones are made first on 051's controlled runs (`seed_jobs`). p50, and
   the database round trips per request (the database's own `serverStatus` counters: finds, and
   other commands beyond those of an equally long idle window, which the subgraphs' change streams
   make; target p50 ≤ 8 ms);
3. `--clients` concurrent clients (one asyncio process, httpx) sending the dossier query through
   the gateway for `--seconds`, with 1 and then 2 processes per subgraph: requests per second,
   p50, p99 (target: 2 replicas ≥ 1.6× one, given the cores), plus the same straight to the
   registry subgraph's port (SO_REUSEPORT spreads it over the replicas), and the core count;
4. `--subscribers` graphql-transport-ws `runPublished` subscribers on the gateway (one client
   process), `--runs` runs published 0.2 s apart through store.publish (as `kernelindex load`):
   delivered / expected, latency p50/p99 (receipt − start of the publishing call; target 100 %,
   p99 ≤ 100 ms), and how many upstream WebSocket connections the gateway opened to the registry
   subgraph for them (ESTABLISHED sockets on the subgraph's port that appeared while subscribing);
   then the same subscribers straight to the registry subgraph, and on a bare Node WebSocket
   server that sends each event to every subscription on a POST (bench/broadcast_floor.mjs: the
   floor of delivery to this subscriber process on this machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _support import close_subscribers, events, percentile, subscribe  # noqa: E402  (bench/_support.py)

DOSSIER = """{ runByExternalId(source: "sol-execbench", externalId: "37369") {
    title primaryMeasurement { display statistic } rank group { size leader { title } }
    sourceNative { solExecBench { summary } } correctness { statement } evidenceLevel
    protocol { harness { name version } } environment { gpu { display } } citation { text } } }"""
SPANNING = """{ definition(name: "kernelindex-051-qkv-qknorm-backward") { name
    comparisonGroups { leader { title } }
    jobs(first: 5) { edges { node { state run { title evidenceLevel } } } } } }"""
SUBSCRIPTION = "subscription { runPublished { cursor run { digest name } } }"
# The fetches Hive Gateway's plan makes for SPANNING (read from its DEBUG=1 log, plugin
# useSubgraphExecuteDebug, on 2026-12-05): sent straight to the subgraphs, they are the floor of
# the cross-subgraph query, with the gateway's own hop (step 1) added once per fetch.
SPANNING_FETCHES = (
    ("registry", '{definition(name: "kernelindex-051-qkv-qknorm-backward"){__typename name comparisonGroups{leader{title}} id}}'),
    (
        "benchmarks",
        "query($representations:[_Any!]!){_entities(representations: $representations)"
        "{...on Definition{jobs(first: 5){edges{node{state run{__typename id}}}}}}}",
    ),
    ("registry", "query($representations:[_Any!]!){_entities(representations: $representations){...on Run{title evidenceLevel}}}"),
)
BENCH_JOBS = 5
# Issue 6/8's targets.
DOSSIER_RATIO = 1.25
SPANNING_P50_MS = 8.0
SUBSCRIBERS_P99_MS = 100


def established(port: int) -> set[str]:
    """The peers (address:port) of ESTABLISHED TCP sockets whose local port is `port`."""
    peers = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                peers.add(fields[2])
    return peers


# ---------------------------------------------------------------- the stack


def start_stack(uri: str, replicas: int, load_data: bool):
    from gateway.stack import Stack
    from server.settings import Settings
    from store.embedded import free_port

    stack = Stack(port=free_port(), replicas=replicas, load_data=load_data, settings=Settings(mongodb_uri=uri))
    try:
        stack.start()
    except BaseException:
        stack.stop()
        raise
    return stack


async def seed_jobs(uri: str, count: int = BENCH_JOBS) -> int:
    """`count` succeeded benchmark jobs on the 051 definition, each holding one of its bundled
    controlled runs, so the cross-subgraph query takes its third hop (job → run) as on a registry
    whose runner has worked. The bundled data has no jobs. Each goes through store.jobs as a
    request and a runner's work do (tests/jobs/support.py `finished_job`); only the run is not
    re-measured (a bundled controlled run of the same implementation and GPU). Bench data, in the
    benchmark's own database. Returns how many were made."""
    from store.client import make_client
    from store.job_specs import JobSpecError
    from tests.jobs.support import finished_job

    client = make_client(uri)
    db = client[os.environ["KERNELINDEX_DATABASE"]]
    made = 0
    try:
        definition = await db.definitions.find_one({"metadata.name": "kernelindex-051-qkv-qknorm-backward"}, {"_id": 1})
        runs = await db.runs.find({"definitionDigest": definition["_id"], "current": True}, {"_id": 1, "gpu": 1, "spec": 1}).to_list()
        for run in runs:
            if made == count:
                break
            implementation = await db.implementations.find_one({"_id": run["spec"]["implementationDigest"]}, {"metadata.name": 1})
            try:
                await finished_job(
                    db,
                    definition_digest=definition["_id"],
                    implementation=implementation["metadata"]["name"],
                    gpu=run["gpu"],
                    run_digest=run["_id"],
                    requested_by="bench-gateway",
                    idempotency_key=f"bench-{made}",
                )
            except JobSpecError:  # not one of ours with pinned code: no rerun can be asked of it
                continue
            made += 1
    finally:
        await client.close()
    return made


# ---------------------------------------------------------------- 1 and 2: one at a time


async def sequential(urls: dict[str, str], query: str, n: int) -> dict[str, list[float]]:
    """`n` requests to each URL, alternating, one at a time; latencies in ms."""
    import httpx

    times: dict[str, list[float]] = {name: [] for name in urls}
    async with httpx.AsyncClient(timeout=60) as client:
        for url in urls.values():  # warm-up (connections, caches, the gateway's plan)
            for _ in range(10):
                body = (await client.post(url, json={"query": query})).json()
                assert "errors" not in body, body
        for _ in range(n):
            for name, url in urls.items():
                start = time.perf_counter()
                response = await client.post(url, json={"query": query})
                times[name].append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200
    return times


async def spanning_side_by_side(gateway: str, subgraphs: dict[str, str], n: int) -> dict[str, list[float]]:
    """SPANNING through the gateway, alternating with its plan's three fetches sent straight to
    the subgraphs one after the other (each fed the previous one's keys, as the gateway does);
    latencies in ms: "gateway", "fetch 1".."fetch 3" and "fetches" (the three together)."""
    import httpx

    times: dict[str, list[float]] = {name: [] for name in ("gateway", "fetch 1", "fetch 2", "fetch 3", "fetches")}

    async def post(client, url: str, query: str, variables: dict | None = None) -> dict:
        body = (await client.post(url, json={"query": query, "variables": variables or {}})).json()
        assert "errors" not in body, body
        return body["data"]

    async def fetches(client) -> list[float]:
        spent = []
        (subgraph, query), start = SPANNING_FETCHES[0], time.perf_counter()
        definition = (await post(client, subgraphs[subgraph], query))["definition"]
        spent.append(time.perf_counter() - start)
        (subgraph, query), start = SPANNING_FETCHES[1], time.perf_counter()
        keys = [{"__typename": "Definition", "id": definition["id"]}]
        jobs = (await post(client, subgraphs[subgraph], query, {"representations": keys}))["_entities"][0]["jobs"]
        spent.append(time.perf_counter() - start)
        (subgraph, query), start = SPANNING_FETCHES[2], time.perf_counter()
        keys = [edge["node"]["run"] for edge in jobs["edges"] if edge["node"]["run"]]
        assert len(keys) == BENCH_JOBS, jobs
        await post(client, subgraphs[subgraph], query, {"representations": keys})
        spent.append(time.perf_counter() - start)
        return [x * 1000 for x in spent]

    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(10):  # warm-up
            await post(client, gateway, SPANNING)
            await fetches(client)
        for _ in range(n):
            start = time.perf_counter()
            answer = await post(client, gateway, SPANNING)
            times["gateway"].append((time.perf_counter() - start) * 1000)
            assert len(answer["definition"]["jobs"]["edges"]) == BENCH_JOBS
            spent = await fetches(client)
            for i, ms in enumerate(spent, 1):
                times[f"fetch {i}"].append(ms)
            times["fetches"].append(sum(spent))
    return times


def opcounters(db_client) -> dict[str, int]:
    return db_client.admin.command("serverStatus")["opcounters"]


def round_trips(uri: str, url: str, query: str, n: int) -> tuple[float, float]:
    """(finds, other commands) per request, from the database's counters; change streams'
    polling (getMore, and commands in an idle window of the same length) is left out."""
    import httpx
    from pymongo import MongoClient

    client = MongoClient(uri)
    try:
        with httpx.Client(timeout=60) as http:
            before, start = opcounters(client), time.monotonic()
            for _ in range(n):
                assert "errors" not in http.post(url, json={"query": query}).json()
            after, elapsed = opcounters(client), time.monotonic() - start
        idle_before = opcounters(client)
        time.sleep(elapsed)
        idle_after = opcounters(client)
    finally:
        client.close()
    finds = (after["query"] - before["query"] - (idle_after["query"] - idle_before["query"])) / n
    commands = (after["command"] - before["command"] - (idle_after["command"] - idle_before["command"])) / n
    return finds, commands


# ---------------------------------------------------------------- 3: throughput


async def load(url: str, query: str, clients: int, seconds: float) -> tuple[float, float, float, int]:
    """(req/s, p50 ms, p99 ms, errors) of `clients` concurrent clients for `seconds`."""
    import httpx

    latencies: list[float] = []
    errors = 0
    failures: Counter[str] = Counter()
    stop_at = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def worker() -> None:
            nonlocal errors
            while time.monotonic() < stop_at:
                start = time.perf_counter()
                try:
                    response = await client.post(url, json={"query": query})
                    body = response.json()
                    failure = (
                        None if response.status_code == 200 and "errors" not in body else f"HTTP {response.status_code}: {str(body)[:120]}"
                    )
                except (httpx.HTTPError, ValueError) as error:
                    failure = f"{type(error).__name__}: {str(error)[:120]}"
                if failure is None:
                    latencies.append((time.perf_counter() - start) * 1000)
                else:
                    errors += 1
                    failures[failure] += 1

        began = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.monotonic() - began
    for failure, count in failures.most_common(3):
        print(f"  {url}: {count} × {failure}")
    return len(latencies) / wall, percentile(latencies, 50), percentile(latencies, 99), errors


# ---------------------------------------------------------------- 4: subscribers (client process)


async def subscribers_main(url: str, count: int, expect: int, out: Path, deadline_s: float) -> None:
    receipts: list[tuple[int, str, float]] = []
    live = 0
    all_live = asyncio.Event()
    gate = asyncio.Semaphore(50)

    async def subscriber(index: int) -> None:
        nonlocal live
        async with gate:
            socket = await subscribe(url, SUBSCRIPTION, open_timeout=120)
        live += 1
        if live == count:
            all_live.set()
        async with socket:
            async for now, data in events(socket):
                receipts.append((index, data["runPublished"]["run"]["name"], now))

    tasks = [asyncio.create_task(subscriber(i)) for i in range(count)]
    try:
        await asyncio.wait_for(all_live.wait(), deadline_s)
        print("SUBSCRIBED", flush=True)
        end = time.monotonic() + deadline_s
        while time.monotonic() < end and len(receipts) < count * expect:
            await asyncio.sleep(0.2)
    finally:
        await close_subscribers(tasks, receipts, out)


def broadcast_floor() -> tuple[subprocess.Popen, str, str]:
    """bench/broadcast_floor.mjs on a free port: (process, its WebSocket URL, its publish URL)."""
    from store.embedded import free_port

    port = free_port()
    script = Path(__file__).resolve().parent / "broadcast_floor.mjs"
    process = subprocess.Popen(["node", str(script), str(port)], stdout=subprocess.PIPE, text=True, start_new_session=True)
    if process.stdout.readline().strip() != "READY":
        raise SystemExit("bench/broadcast_floor.mjs did not start")
    return process, f"ws://127.0.0.1:{port}/graphql", f"http://127.0.0.1:{port}/publish"


async def subscriptions(args, uri: str, stack, ws_url: str, publish_url: str | None = None) -> dict:
    """`--subscribers` subscribers on `ws_url`, `--runs` runs published 0.2 s apart: delivery and
    latency. Runs are published through store.publish (as `kernelindex load`), or with
    `publish_url` (bench/broadcast_floor.mjs) by a POST that makes that server send them."""
    import httpx

    from store.client import make_client
    from store.publish import publish
    from tests import factories

    registry_port = int(stack.subgraph_urls["registry"].rsplit(":", 1)[1].split("/")[0])
    out = Path(tempfile.mkdtemp()) / "receipts.json"
    before = established(registry_port)
    proc = subprocess.Popen(
        [sys.executable, __file__, "--as-subscribers", ws_url, str(args.subscribers), str(args.runs), str(out)],
        stdout=subprocess.PIPE,
        text=True,
    )
    loop = asyncio.get_running_loop()
    line = await loop.run_in_executor(None, proc.stdout.readline)
    if line.strip() != "SUBSCRIBED":
        raise SystemExit(f"the subscriber process failed: {line}")
    await asyncio.sleep(3.0)  # the gateway opens its upstream subscriptions
    upstream = len(established(registry_port) - before)  # opened while subscribing (no HTTP traffic then)
    client = make_client(uri)
    db = client[os.environ["KERNELINDEX_DATABASE"]]
    published: dict[str, float] = {}
    try:
        async with httpx.AsyncClient(timeout=60) as http:
            for i in range(args.runs):
                bundle = factories.run_bundle(f"gw-{uuid.uuid4().hex[:8]}-{i}", user=f"gw{i}")
                name = bundle.run.metadata.name
                published[name] = time.time()
                if publish_url:
                    await http.post(publish_url, json={"name": name})
                else:
                    await publish(db, bundle)
                await asyncio.sleep(0.2)
        await loop.run_in_executor(None, proc.stdout.readline)  # DONE
    finally:
        await client.close()
        proc.wait(timeout=120)
    receipts = json.loads(out.read_text())
    latencies = [(at - published[name]) * 1000 for _, name, at in receipts if name in published]
    unique = {(i, name) for i, name, _ in receipts if name in published}
    return {
        "expected": args.subscribers * args.runs,
        "delivered": len(unique),
        "duplicates": len(latencies) - len(unique),
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
        "max": max(latencies, default=float("nan")),
        "upstream": upstream,
    }


# ---------------------------------------------------------------- main


async def run(args: argparse.Namespace, uri: str) -> int:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    cores = os.cpu_count()
    console.print(f"{cores} cores, load average {os.getloadavg()[0]:.1f} at start; database {uri}")
    stack = await asyncio.to_thread(start_stack, uri, 1, True)
    failures = []
    try:
        gateway = f"http://127.0.0.1:{stack.port}/graphql"
        direct = stack.subgraph_urls["registry"]
        times = await sequential({"direct": direct, "gateway": gateway}, DOSSIER, args.requests)
        d50, g50 = percentile(times["direct"], 50), percentile(times["gateway"], 50)
        table = Table(title=f"1. dossier query, {args.requests} requests each, one at a time")
        for column in ("path", "p50 ms", "p90 ms", "p99 ms"):
            table.add_column(column)
        for name in ("direct", "gateway"):
            table.add_row(
                name, f"{percentile(times[name], 50):.2f}", f"{percentile(times[name], 90):.2f}", f"{percentile(times[name], 99):.2f}"
            )
        table.add_row("ratio gateway / direct (p50)", f"{g50 / d50:.2f}×", "", "")
        console.print(table)
        if g50 / d50 > DOSSIER_RATIO:
            failures.append(f"gateway/direct p50 ratio {g50 / d50:.2f} > {DOSSIER_RATIO}")

        made = await seed_jobs(uri)
        assert made == BENCH_JOBS, f"only {made} jobs could be made on the bundled data"
        subgraphs = {name: url for name, url in stack.subgraph_urls.items()}
        spanning = await spanning_side_by_side(gateway, subgraphs, args.requests)
        finds, commands = await asyncio.to_thread(round_trips, uri, gateway, SPANNING, 50)
        hop = g50 - d50  # what the gateway added to one single-fetch query in step 1
        s50 = percentile(spanning["gateway"], 50)
        floor = percentile(spanning["fetches"], 50) + hop
        table = Table(title="2. cross-subgraph query (registry → benchmarks → registry), with its floor, alternating")
        for column in ("path", "p50 ms", "p99 ms"):
            table.add_column(column)
        table.add_row("through the gateway", f"{s50:.2f}", f"{percentile(spanning['gateway'], 99):.2f}")
        for i, (subgraph, _) in enumerate(SPANNING_FETCHES, 1):
            name = f"fetch {i}"
            table.add_row(
                f"  its {name}, straight to {subgraph}", f"{percentile(spanning[name], 50):.2f}", f"{percentile(spanning[name], 99):.2f}"
            )
        table.add_row(
            "  the three fetches in a row", f"{percentile(spanning['fetches'], 50):.2f}", f"{percentile(spanning['fetches'], 99):.2f}"
        )
        table.add_row("floor: the fetches + the gateway's hop of step 1 once", f"{floor:.2f}", "")
        table.add_row("gateway ÷ floor", f"{s50 / floor:.2f}×", "")
        console.print(table)
        console.print(f"database round trips per cross-subgraph request: {finds:.1f} finds, {commands:.1f} other commands")
        if s50 > SPANNING_P50_MS:
            failures.append(f"cross-subgraph p50 {s50:.1f} ms > {SPANNING_P50_MS:g} ms (floor {floor:.1f} ms)")

        if not args.skip_subscriptions:
            # Through the gateway, then the same straight to the registry subgraph, then from a
            # bare Node broadcast (the floor: delivery alone, to the same subscriber process on
            # the same cores; no GraphQL, no database write).
            paths = {
                "through the gateway": f"ws://127.0.0.1:{stack.port}/graphql",
                "straight to registry": direct.replace("http", "ws", 1),
            }
            results = {name: await subscriptions(args, uri, stack, url) for name, url in paths.items()}
            floor, floor_ws, floor_publish = broadcast_floor()
            try:
                results["a bare Node broadcast (floor)"] = await subscriptions(args, uri, stack, floor_ws, floor_publish)
            finally:
                floor.terminate()
                floor.wait(timeout=30)
            table = Table(title=f"4. {args.subscribers} runPublished subscribers, {args.runs} runs 0.2 s apart")
            for column in ("path", "delivered", "duplicates", "p50 ms", "p99 ms", "max ms", "upstream WebSockets (gateway → registry)"):
                table.add_column(column)
            for name, result in results.items():
                table.add_row(
                    name,
                    f"{result['delivered']} / {result['expected']}",
                    str(result["duplicates"]),
                    f"{result['p50']:.0f}",
                    f"{result['p99']:.0f}",
                    f"{result['max']:.0f}",
                    str(result["upstream"]) if name.startswith("through") else "",
                )
            console.print(table)
            result = results["through the gateway"]
            if result["delivered"] != result["expected"] or result["p99"] > SUBSCRIBERS_P99_MS:
                failures.append(f"subscriptions: not all delivered or p99 > {SUBSCRIBERS_P99_MS} ms")
    finally:
        await asyncio.to_thread(stack.stop)

    if not args.skip_throughput:
        table = Table(title=f"3. {args.clients} concurrent clients, dossier query, {args.seconds:g} s each ({cores} cores)")
        for column in ("processes per subgraph", "path", "req/s", "p50 ms", "p99 ms", "errors"):
            table.add_column(column)
        rates = {}
        for replicas in (1, 2):
            stack = await asyncio.to_thread(start_stack, uri, replicas, False)
            try:
                for path, url in (("gateway", f"http://127.0.0.1:{stack.port}/graphql"), ("direct", stack.subgraph_urls["registry"])):
                    await load(url, DOSSIER, args.clients, 2.0)  # warm-up
                    rate, p50, p99, errors = await load(url, DOSSIER, args.clients, args.seconds)
                    rates[(replicas, path)] = rate
                    table.add_row(str(replicas), path, f"{rate:.0f}", f"{p50:.1f}", f"{p99:.1f}", str(errors))
            finally:
                await asyncio.to_thread(stack.stop)
        for path in ("gateway", "direct"):
            table.add_row("2 vs 1", path, f"{rates[(2, path)] / rates[(1, path)]:.2f}×", "", "", "")
        console.print(table)
        if rates[(2, "gateway")] / rates[(1, "gateway")] < 1.6:
            failures.append(f"2 replicas gave {rates[(2, 'gateway')] / rates[(1, 'gateway')]:.2f}× of one (target 1.6×; {cores} cores)")
    console.print(f"load average {os.getloadavg()[0]:.1f} at the end")
    for failure in failures:
        console.print(f"missed: {failure}")
    return 1 if failures else 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--as-subscribers":
        url, count, expect, out = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5])
        asyncio.run(subscribers_main(url, count, expect, out, 120))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-subscriptions", action="store_true")
    args = parser.parse_args()

    from store.embedded import EmbeddedServer

    os.environ["KERNELINDEX_HOME"] = tempfile.mkdtemp(prefix="kernelindex-bench-gateway-")
    os.environ["KERNELINDEX_DATABASE"] = f"bench_gateway_{uuid.uuid4().hex[:8]}"
    if os.environ.get("MONGODB_URI"):
        return asyncio.run(run(args, os.environ["MONGODB_URI"]))
    with EmbeddedServer(":memory:") as server:
        return asyncio.run(run(args, server.uri))


if __name__ == "__main__":
    sys.exit(main())
