"""Benchmark: GraphQL read latency against a raw PyMongo fetch of the same documents.

    python bench/api.py [--runs 10000] [--iterations 300] [--warmup 30] [--no-uvicorn]
                        [--only dossier|page|page-op] [--profile dossier|page|page-op] [--verbose]

Starts SecantusDB (`secantusd-py`) on a temporary directory and a free port unless MONGODB_URI is
set (then it uses a fresh database there and drops it at the end), publishes N synthetic runs
(tests/factories.py: made-up operations and users; see `make_bundles`) through
`store.publish.publish_many` in batches of 500, then measures, one request at a time after a
warm-up:

  (a)  dossier: one run's full record page (`run(id:)` with every field the page shows),
       K iterations over randomly chosen runs;
  (b)  page:    `runs(first: 100)`, newest first, with nested protocol / environment / group,
       K/3 iterations;
  (b') page-op: the same page filtered to one operation (`filter: {definition:}`), K/3 iterations.
       On SecantusDB the unfiltered page's find costs O(all current runs) (it sorts them in
       memory, index or not), which hides the GraphQL layer's cost; this one matches 100 runs.

Each GraphQL request is paired with a raw `AsyncMongoClient` fetch of the same documents in the
same process and event loop, as a hand-written data layer would do it (independent lookups
concurrent, dependent ones chained); the two alternate request by request:

  (a) the run; then its protocol, environment, workload, implementation, definition, group (whose
      document carries its #1's row, store/leaderboards.py: the API reads no leader run either)
      and its first attestations, concurrently.
  (b) the page of 101 current runs by `seq` descending (the find of `store.queries.runs_page`,
      projected to the listed fields, `LISTED_FIELDS`, as the API reads it for this query);
      then `$in` lookups of the page's protocols, environments and groups (concurrently).

GraphQL goes through the real ASGI app (`server.app.create_app`, production settings: limits and
error masking on) in-process with httpx.ASGITransport + asgi_lifespan.LifespanManager, and
(unless --no-uvicorn) through a live uvicorn child process (this file with --serve) on 127.0.0.1
over HTTP keep-alive. Every GraphQL answer is checked against the raw fetch once before timing.
Prints p50/p99 latency, requests/s (sequential: 1 / mean latency) and the GraphQL/raw ratio of the
p50s against the targets (a) ≤ 2×, (b) ≤ 3×, beside the request floor (`{ __typename }` on the
same transport, timed in the same alternation: what any request costs with no resolver and no
database); then database commands per request, the cost of
graphql-core's parse + validate of each query text and of its execution alone over each answer
(`executor_floor_ms`: the part of GraphQL − raw that lies in graphql-core walking the fields),
and the garbage collection this process did inside the in-process requests.

--profile runs that scenario's in-process GraphQL loop once more under cProfile and prints the
request stages (parse, validate, execute), our resolvers and the functions with most own time.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from pymongo import monitoring
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _support import answers, closing_line, database_server, load_average, stop, wait_ready  # noqa: E402  (bench/_support.py)

from resolvers import ids  # noqa: E402
from server.app import create_app  # noqa: E402
from server.schema import build_schema  # noqa: E402
from server.settings import Settings  # noqa: E402
from store.client import make_client
from store.embedded import free_port  # noqa: E402
from store.publish import publish_many  # noqa: E402
from store.queries import LISTED_FIELDS, attestations_page, runs_page  # noqa: E402
from store.schema import ensure_schema  # noqa: E402
from tests import factories  # noqa: E402

TARGETS = {"dossier": 2.0, "page": 3.0}
SCENARIOS = ("dossier", "page", "page-op")
BATCH = 500
PAGE = 100
ATTESTATIONS = 20  # DOSSIER_QUERY's attestations(first: 20)

# Every field the run record page (seed/run-record-37369.txt) shows, plus what a frontend needs
# to link onwards (IDs).
DOSSIER_QUERY = """query Dossier($id: ID!) {
  run(id: $id) {
    id digest name title status current observedAt publishedAt rank evidenceLevel
    labels { key value }
    primaryMeasurement { statistic valueNs display }
    measurements { statistic valueNs display }
    group { id title size rankedSize rankRule { metric order noiseAware } sourceNative
            leader { id digest title rank primaryMeasurement { display } } }
    sourceNative { source sourceTitle benchmark externalId externalReference
                   metrics { name value text } raw solExecBench { summary } }
    identity { digest comparisonKey source sourceTitle externalId externalReference
               protocolDigest workloadDigest environmentDigest implementationDigest }
    implementation { id name project revision }
    definition { id name title }
    correctness { status statement policy rounds }
    workload { id name description caseCount comparator aggregation }
    protocol { id name harness { name version } timer primaryStatistic warmups samples l2Flush
               correctnessReference comparator correctnessRounds correctnessPolicy
               comparabilityFamily comparabilityVersion notes }
    environment { id gpu { vendor product architecture display } driver cuda os }
    artifacts { name mediaType uri digest }
    attestations(first: 20) { edges { cursor node { id author verified attestedAt } }
                              pageInfo { hasNextPage endCursor } }
    manifest
    citation { permalink digest accessedAt text }
  }
}"""

PAGE_QUERY = """query Page($first: Int!, $filter: RunFilter) {
  runs(first: $first, filter: $filter) {
    edges { cursor node {
      id digest title rank status evidenceLevel current observedAt
      primaryMeasurement { statistic valueNs display }
      protocol { id name harness { name version } comparabilityFamily }
      environment { id gpu { product architecture display } }
      group { id title size rankedSize }
    } }
    pageInfo { hasNextPage endCursor }
  }
}"""

Doc = dict[str, Any]


# ------------------------------------------------------------------------------------ data


GROUP_SIZE = 25


def make_bundles(n: int, seed: int = 1) -> list:
    """N runs in comparison groups of 25: operation × GPU (B200, H200) × protocol version (v1.1,
    v1.0), each run with its own implementation and a random score.

    Publication order: each batch of 500 holds 20 whole groups, their runs interleaved (so the
    newest page spans 20 groups, 5 operations, 2 GPUs and 2 protocols), and inside a group the runs
    arrive best first. That keeps loading linear: a run that arrives below every earlier one moves
    no existing rank, whereas random arrival makes `store.groups.recompute` rewrite ~5 ranks per
    new run (about 1 ms each on SecantusDB; 10,000 runs then took over 5 minutes to load).
    """
    rng = random.Random(seed)
    n_groups = max(1, math.ceil(n / GROUP_SIZE))
    definitions = [factories.definition(f"bench-op-{d:03d}") for d in range(math.ceil(n_groups / 4))]
    environments = [factories.environment(), factories.environment("NVIDIA H200", "sm_90")]
    protocols = [factories.protocol(version="v1.1"), factories.protocol(version="v1.0")]
    scores = [sorted((round(rng.random(), 6) for _ in range(GROUP_SIZE)), reverse=True) for _ in range(n_groups)]
    per_batch = BATCH // GROUP_SIZE
    order = [
        (group, k)
        for first in range(0, n_groups, per_batch)
        for k in range(GROUP_SIZE)
        for group in range(first, min(first + per_batch, n_groups))
    ][:n]
    return [
        factories.run_bundle(
            f"bench-{i}",
            score=scores[group][k],
            latency_ns=rng.randrange(20_000, 2_000_000),
            user=f"user{i % 997}",
            defn=definitions[group // 4],
            env=environments[(group // 2) % 2],
            proto=protocols[group % 2],
        )
        for i, (group, k) in enumerate(order)
    ]


async def load(db, n: int, console: Console) -> list[str]:
    await ensure_schema(db)
    started = time.perf_counter()
    bundles = make_bundles(n)
    made = time.perf_counter() - started
    digests: list[str] = []
    for start in range(0, n, BATCH):
        outcomes = await publish_many(db, bundles[start : start + BATCH])
        digests += [o.run_digest for o in outcomes]
    took = time.perf_counter() - started
    groups = await db.comparison_groups.count_documents({})
    console.print(
        f"loaded {n:,} runs ({groups} comparison groups) in {took:.1f} s ({made:.1f} s building manifests), {n / took:,.0f} runs/s"
    )
    return digests


# ------------------------------------------------------------------------------------ raw PyMongo


async def raw_dossier(db, digest: str) -> dict[str, Any]:
    run = await db.runs.find_one({"_id": digest})
    spec = run["spec"]

    async def group_and_leader() -> tuple[Doc | None, Doc | None]:
        # The group's document carries its #1's row (store/leaderboards.py), as the API reads it.
        group = await db.comparison_groups.find_one({"_id": run["groupKey"]})
        return group, ((group or {}).get("leaderboard") or {}).get("leader")

    protocol, environment, workload, implementation, definition, (group, leader), attestations = await asyncio.gather(
        db.protocols.find_one({"_id": spec["protocolDigest"]}),
        db.environments.find_one({"_id": spec["environmentDigest"]}),
        db.workloads.find_one({"_id": spec["workloadDigest"]}),
        db.implementations.find_one({"_id": spec["implementationDigest"]}),
        db.definitions.find_one({"_id": run["definitionDigest"]}),
        group_and_leader(),
        # The page's first attestations of the run, through the API's own query.
        attestations_page(db, subject=digest, first=ATTESTATIONS, after_seq=None),
    )
    return {
        "run": run,
        "protocol": protocol,
        "environment": environment,
        "workload": workload,
        "implementation": implementation,
        "definition": definition,
        "group": group,
        "leader": leader,
        "attestations": attestations[0],
    }


async def raw_page(db, query: dict[str, Any], first: int = PAGE) -> dict[str, Any]:
    """The page through `store.queries.runs_page` (the API's own access path: seq windows), then
    the page's references by `$in`; what is left for GraphQL to add is its own overhead."""
    page, has_next = await runs_page(db, query=query, first=first, after_seq=None, projection=LISTED_FIELDS)

    def by_ids(collection: str, keys: set[str]) -> Awaitable[list[Doc]]:
        return db[collection].find({"_id": {"$in": sorted(keys)}}).to_list()

    protocols, environments, groups = await asyncio.gather(
        by_ids("protocols", {d["spec"]["protocolDigest"] for d in page}),
        by_ids("environments", {d["spec"]["environmentDigest"] for d in page}),
        by_ids("comparison_groups", {d["groupKey"] for d in page}),
    )
    return {"runs": page, "hasNext": has_next, "protocols": protocols, "environments": environments, "groups": groups}


# ------------------------------------------------------------------------------------ GraphQL


class CommandCounter(monitoring.CommandListener):
    """Counts database commands while `active` (to report round trips per request)."""

    def __init__(self):
        self.active = False
        self.names: list[str] = []

    def started(self, event):
        if self.active:
            self.names.append(f"{event.command_name} {event.command.get(event.command_name)}")

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


async def graphql(http: httpx.AsyncClient, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    response = await http.post("/graphql", json={"query": query, "variables": variables})
    body = response.json()
    if response.status_code != 200 or body.get("errors"):
        raise SystemExit(f"GraphQL error ({response.status_code}): {body.get('errors')}")
    return body["data"]


def check_dossier(data: dict[str, Any], raw: dict[str, Any]) -> None:
    run = data["run"]
    assert run and run["digest"] == raw["run"]["_id"], "dossier: wrong run"
    assert run["protocol"]["id"] == ids.encode("Protocol", raw["protocol"]["_id"]), "dossier: protocol differs"
    assert run["group"]["size"] == raw["group"]["size"], "dossier: group size differs"
    leader = raw["leader"]
    assert (run["group"]["leader"] or {}).get("digest") == (leader and leader["_id"]), "dossier: leader differs"
    assert run["implementation"]["revision"] == raw["implementation"]["spec"]["revision"]
    assert len(run["attestations"]["edges"]) == len(raw["attestations"]), "dossier: attestations differ"


def check_page(data: dict[str, Any], raw: dict[str, Any]) -> None:
    edges = data["runs"]["edges"]
    assert [e["node"]["digest"] for e in edges] == [d["_id"] for d in raw["runs"]], "page: runs differ"
    assert {e["node"]["group"]["id"] for e in edges} == {ids.encode("ComparisonGroup", g["_id"]) for g in raw["groups"]}
    assert {e["node"]["protocol"]["id"] for e in edges} == {ids.encode("Protocol", p["_id"]) for p in raw["protocols"]}


# ------------------------------------------------------------------------------------ measuring


def percentile(samples: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


class Series:
    """Latencies of one side of one scenario, and the garbage collections of this process that
    ran inside them (collections in a uvicorn child are not seen)."""

    current: Series | None = None

    def __init__(self):
        self.samples: list[float] = []
        self.gc_runs = 0
        self.gc_full = 0
        self.gc_s = 0.0

    async def time(self, call: Awaitable[Any]) -> Any:
        Series.current = self
        started = time.perf_counter()
        try:
            return await call
        finally:
            self.samples.append(time.perf_counter() - started)
            Series.current = None

    def p(self, q: float) -> float:
        return percentile(self.samples, q) * 1000

    def rate(self) -> float:
        """Sequential requests: requests per second of busy time."""
        return len(self.samples) / sum(self.samples)


_gc_started = 0.0


def _on_gc(phase: str, info: dict[str, Any]) -> None:
    global _gc_started
    if phase == "start":
        _gc_started = time.perf_counter()
    elif Series.current is not None:
        Series.current.gc_runs += 1
        Series.current.gc_full += info["generation"] == 2
        Series.current.gc_s += time.perf_counter() - _gc_started


gc.callbacks.append(_on_gc)


FLOOR_QUERY = "{ __typename }"


async def measure(
    gql: Callable[[int], Awaitable[Any]],
    raw: Callable[[int], Awaitable[Any]],
    floor: Callable[[], Awaitable[Any]],
    iterations: int,
    warmup: int,
) -> tuple[Series, Series, Series]:
    """Alternate one GraphQL request, one raw fetch of the same documents and one request of
    FLOOR_QUERY per iteration, so all three see the same machine state (the database server
    shares these two cores). The floor is what any request costs on the same path with no
    resolver and no database: the transport, strawberry's view, extensions and context."""
    for i in range(warmup):
        await gql(i)
        await raw(i)
        await floor()
    g, r, f = Series(), Series(), Series()
    for i in range(iterations):
        await g.time(gql(warmup + i))
        await r.time(raw(warmup + i))
        await f.time(floor())
    return g, r, f


def parse_validate_ms(schema, query: str, repeat: int = 30) -> float:
    """What graphql-core's parse + validate of this query text costs (median), outside any cache."""
    from graphql import parse, validate

    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        errors = validate(schema._schema, parse(query))
        samples.append(time.perf_counter() - started)
        assert not errors, errors
    return percentile(samples, 50) * 1000


def executor_floor_ms(schema, query: str, variables: dict[str, Any], data: dict[str, Any], repeat: int = 30) -> float:
    """graphql-core's execution of this document over its own answer (median): the schema's SDL
    rebuilt without resolvers, so every field is a dict or attribute lookup, the answer as the root
    value. No database, no strawberry, no HTTP: what graphql-core itself costs to walk this answer's
    fields, which no resolver or data layer change can remove."""
    from graphql import build_schema as schema_from_sdl
    from graphql import execute, parse, print_schema

    plain, document = schema_from_sdl(print_schema(schema._schema)), parse(query)
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = execute(plain, document, root_value=data, variable_values=variables)
        samples.append(time.perf_counter() - started)
        assert not result.errors and result.data == data, result.errors
    return percentile(samples, 50) * 1000


async def count_commands(counter: CommandCounter, call: Awaitable[Any]) -> list[str]:
    counter.names, counter.active = [], True
    try:
        await call
    finally:
        counter.active = False
    return sorted(counter.names)


# ------------------------------------------------------------------------------------ uvicorn


def serve(uri: str, database: str, port: int) -> None:
    """The child process: the real app under uvicorn on loopback."""
    import uvicorn

    app = create_app(uri, Settings(database=database, mongodb_uri=uri))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="on")


def start_uvicorn(uri: str, database: str, timeout: float = 30) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", uri, database, str(port)],
        stdin=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    wait_ready(process, answers(f"{base}/healthz"), "uvicorn", timeout=timeout)
    return process, base


# ------------------------------------------------------------------------------------ main


@dataclass
class Scenario:
    key: str
    label: str
    target: float
    query: str
    variables: Callable[[int], dict[str, Any]]
    raw: Callable[[int], Awaitable[dict[str, Any]]]
    check: Callable[[dict[str, Any], dict[str, Any]], None]
    iterations: int
    warmup: int
    trips: tuple[list[str], list[str]] = ([], [])
    response_bytes: int = 0
    parse_validate_ms: float = 0.0
    executor_floor_ms: float = 0.0


def scenarios(db, args: argparse.Namespace, picks: list[str], definition_digest: str) -> list[Scenario]:
    page_iterations = max(1, args.iterations // 3)
    # A newest-first page costs SecantusDB ~0.3 s at 10,000 runs: a few warm-ups are plenty.
    page_warmup = max(1, args.warmup // 10)
    by_definition = {"current": True, "definitionDigest": definition_digest}
    return [
        Scenario(
            "dossier",
            "(a) dossier",
            TARGETS["dossier"],
            DOSSIER_QUERY,
            lambda i: {"id": ids.encode("Run", picks[i % len(picks)])},
            lambda i: raw_dossier(db, picks[i % len(picks)]),
            check_dossier,
            args.iterations,
            args.warmup,
        ),
        Scenario(
            "page",
            f"(b) runs({PAGE})",
            TARGETS["page"],
            PAGE_QUERY,
            lambda i: {"first": PAGE},
            lambda i: raw_page(db, {"current": True}),
            check_page,
            page_iterations,
            page_warmup,
        ),
        Scenario(
            "page-op",
            f"(b') runs({PAGE}) of one op",
            TARGETS["page"],
            PAGE_QUERY,
            lambda i: {"first": PAGE, "filter": {"definition": ids.encode("Definition", definition_digest)}},
            lambda i: raw_page(db, by_definition),
            check_page,
            page_iterations,
            max(1, args.warmup // 3),
        ),
    ]


async def bench(uri: str, database: str, args: argparse.Namespace, console: Console) -> bool:
    raw_counter, app_counter = CommandCounter(), CommandCounter()
    client = make_client(uri, event_listeners=[raw_counter])
    db = client[database]
    uvicorn_process = None
    try:
        digests = await load(db, args.runs, console)
        rng = random.Random(7)
        picks = [rng.choice(digests) for _ in range(args.iterations + args.warmup)]
        newest = await db.runs.find_one({"_id": digests[-1]}, {"definitionDigest": 1})
        cases = scenarios(db, args, picks, newest["definitionDigest"])
        if args.only:
            cases = [c for c in cases if c.key == args.only]

        settings = Settings(database=database, mongodb_uri=uri)
        schema = build_schema(settings)
        app = create_app(uri, settings, client_options={"event_listeners": [app_counter]})
        async with LifespanManager(app) as manager:
            in_process = httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://kernelindex.bench")
            transports = [("in-process", in_process)]
            if not args.no_uvicorn:
                uvicorn_process, base = start_uvicorn(uri, database)
                transports.append(("uvicorn", httpx.AsyncClient(base_url=base, timeout=60)))

            # Check each scenario's answers against the raw fetch, and count round trips, before timing.
            for case in cases:
                case.check(await graphql(in_process, case.query, case.variables(0)), await case.raw(0))
                case.trips = (
                    await count_commands(app_counter, graphql(in_process, case.query, case.variables(1))),
                    await count_commands(raw_counter, case.raw(1)),
                )
                body = {"query": case.query, "variables": case.variables(1)}
                case.response_bytes = len((await in_process.post("/graphql", json=body)).content)
                case.parse_validate_ms = parse_validate_ms(schema, case.query)
                answer = await graphql(in_process, case.query, case.variables(1))
                case.executor_floor_ms = executor_floor_ms(schema, case.query, case.variables(1), answer)

            rows = []
            for transport, http in transports:
                for case in cases:
                    g, r, f = await measure(
                        lambda i, http=http, case=case: graphql(http, case.query, case.variables(i)),
                        case.raw,
                        lambda http=http: graphql(http, FLOOR_QUERY, {}),
                        case.iterations,
                        case.warmup,
                    )
                    rows.append((case, transport, g, r, f))
            for _, http in transports:
                await http.aclose()
            met = report(console, args, rows, cases)

            if args.profile:
                case = next(c for c in scenarios(db, args, picks, newest["definitionDigest"]) if c.key == args.profile)
                async with httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://kernelindex.bench") as http:
                    await profile(lambda i: graphql(http, case.query, case.variables(i)), case.iterations, case.label, console)
            return met
    finally:
        if uvicorn_process is not None:
            stop(uvicorn_process)
        if os.environ.get("MONGODB_URI"):
            await client.drop_database(database)
        await client.close()


def report(console: Console, args: argparse.Namespace, rows, cases: list[Scenario]) -> bool:
    """Print the results; True when every row meets its target."""
    table = Table(title=f"GraphQL vs raw PyMongo: {args.runs:,} runs, sequential requests, latencies in ms")
    for column in (
        "scenario",
        "transport",
        "n",
        "GQL p50",
        "GQL p99",
        "GQL req/s",
        "raw p50",
        "raw p99",
        "raw req/s",
        "GQL/raw p50",
        "GQL−raw p50",
        "floor p50",
        "walk",
        "(raw+floor+walk)/raw",
        "target",
    ):
        table.add_column(column, justify="left" if column in {"scenario", "transport"} else "right")
    all_ok = True
    for case, transport, g, r, f in rows:
        ratio = g.p(50) / r.p(50)
        ok = ratio <= case.target
        all_ok = all_ok and ok
        table.add_row(
            case.label,
            transport,
            str(len(g.samples)),
            f"{g.p(50):.2f}",
            f"{g.p(99):.2f}",
            f"{g.rate():,.0f}",
            f"{r.p(50):.2f}",
            f"{r.p(99):.2f}",
            f"{r.rate():,.0f}",
            f"[{'green' if ok else 'red'}]{ratio:.2f}×[/]",
            f"{g.p(50) - r.p(50):.2f}",
            f"{f.p(50):.2f}",
            f"{case.executor_floor_ms:.2f}",
            f"{(r.p(50) + f.p(50) + case.executor_floor_ms) / r.p(50):.2f}×",
            f"≤ {case.target:.0f}× {'ok' if ok else 'MISSED'}",
        )
    console.print(table)
    for case in cases:
        console.print(
            f"{case.label}: database commands per request GraphQL {len(case.trips[0])}, raw {len(case.trips[1])}; "
            f"response {case.response_bytes:,} bytes; graphql-core parse + validate of the query text "
            f"{case.parse_validate_ms:.2f} ms; graphql-core's execution alone over the answer (no resolvers, "
            f"no database) {case.executor_floor_ms:.2f} ms"
        )
    if args.verbose:
        for case in cases:
            console.print(f"{case.label} commands, GraphQL: {', '.join(case.trips[0])}")
            console.print(f"{case.label} commands, raw: {', '.join(case.trips[1])}")
    console.print(
        f"floor: `{FLOOR_QUERY}` on the same transport, timed between the scenario's requests (no resolver, "
        "no database); walk: graphql-core executing the document over its answer alone (below); "
        "(raw+floor+walk)/raw: the ratio of a GraphQL layer whose resolvers cost nothing"
    )
    for case, transport, g, r, _ in rows:
        if transport == "in-process":
            n = len(g.samples)
            console.print(
                f"{case.label}, in-process: garbage collection inside GraphQL requests "
                f"{g.gc_s / n * 1000:.2f} ms/request ({g.gc_runs / n:.1f} runs/request, {g.gc_full} full); "
                f"inside raw fetches {r.gc_s / len(r.samples) * 1000:.2f} ms/request"
            )
    return all_ok


async def profile(gql: Callable[[int], Awaitable[Any]], n: int, scenario: str, console: Console) -> None:
    """cProfile over n in-process GraphQL requests (the raw side is not profiled): the stages of a
    request (parse, validate, execute, serialize) and our resolvers by cumulative time, then the
    functions with the most own time. cProfile inflates pure-Python call-heavy code; read the
    stages as shares, not as milliseconds."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for i in range(n):
        await gql(i)
    prof.disable()
    console.print(f"\ncProfile, {n} in-process GraphQL requests of {scenario}: stages and resolvers, by cumulative time")
    stages = (
        r"(graphql/language/parser.py.*\(parse\)|graphql/validation/validate.py.*\(validate\)"
        r"|strawberry/schema/schema.py.*\((execute|_execute_operation)\)|json/__init__.py.*\(dumps\)"
        r"|starlette/applications.py|/resolvers/|/store/)"
    )
    pstats.Stats(prof).sort_stats("cumulative").print_stats(stages, 30)
    console.print(f"cProfile, {scenario}: most own time")
    pstats.Stats(prof).sort_stats("tottime").print_stats(20)


def main() -> int:
    """Exit status 1 when a target is missed."""
    if len(sys.argv) == 5 and sys.argv[1] == "--serve":
        serve(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000, help="synthetic runs to load (default 10000)")
    parser.add_argument("--iterations", type=int, default=300, help="timed dossier requests; the page gets a third (default 300)")
    parser.add_argument(
        "--warmup",
        type=int,
        default=30,
        help="untimed dossier requests first (default 30); the newest page gets a tenth, the one-operation page a third",
    )
    parser.add_argument("--no-uvicorn", action="store_true", help="only the in-process ASGI transport")
    parser.add_argument("--verbose", action="store_true", help="list the database commands of each scenario")
    parser.add_argument("--only", choices=SCENARIOS, help="measure only this scenario")
    parser.add_argument("--profile", choices=SCENARIOS, help="profile that scenario's in-process GraphQL loop afterwards")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 150))
    started = time.perf_counter()
    load_before = load_average()
    database = f"bench_api_{uuid.uuid4().hex[:8]}"
    with database_server("kernelindex-bench-api-", console.print) as uri:
        met = asyncio.run(bench(uri, database, args, console))
    console.print(closing_line(started, load_before))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
