"""Benchmark: server time and size of the web pages with 10,000 runs loaded.

    python bench/pages.py [--runs 10000] [--group-size 1000] [--iterations 100] [--warmup 10] [--stack]
    python bench/pages.py --catalog [--stack]      # the bundled data instead: the real catalog
    python bench/pages.py --catalog --baseline DIR # and another checkout's code beside this one's

With --baseline DIR (a checkout of the code to compare with, e.g. `git archive main | tar -x -C
DIR`), the bundled data is loaded twice into the one database server, each copy by its own code
(so each has its own indexes), each served by its own single-process server (DIR's
bench/api.py under uvicorn, this checkout's beside it), and every request goes to both in turn:
one table, both sides measured under the same load, and the ratio.

With --catalog, the database gets what `serve` loads on first start (server/bootstrap.py: the
bundled KernelIndex catalog export, 7,857 runs in 1,912 cohorts, and our controlled runs), and the
pages are the real ones: /, the largest cohort's leaderboard, a random run's dossier, that
cohort's operation page and a comparison of two of its runs (issue 6/8's targets: p50 ≤ 25 ms and
≤ 100 kB for every page).

Starts SecantusDB (`secantusd-py`) on a temporary directory unless MONGODB_URI is set (then a
fresh database there, dropped at the end), publishes N synthetic runs: N - G in groups of 25
(bench/api.py's `make_bundles`) and one comparison group of G runs (default 1,000) of its own
operation, then starts the real single-process server (`server.app.create_app`: the web pages
mounted beside /graphql, querying it in process) under uvicorn in a child process on 127.0.0.1,
and requests each page as a browser does (`Accept: text/html`, HTTP keep-alive), one at a time
after a warm-up:

  /                 every operation's groups and #1s (first page of operations), newest runs
  /groups/{id}      the G-run group's leaderboard, first page
  /runs/{digest}    the dossier of a randomly chosen run (a new one each request)
  /operations/{n}   the big group's operation
  /compare          two runs of the big group (synthetic runs carry no per-case results)

With --stack the same pages go through the federated stack as `make serve` starts it
(`kernelindex serve --no-data` on the loaded database: Hive Gateway forwarding to the `kernelindex
web` process, which asks the gateway's /graphql, which asks the two subgraphs).

Server time is the page's `Server-Timing: page;dur=` header (from the request reaching the web
app to the response starting: its GraphQL round trips and rendering); `graphql;dur=` is the part
spent waiting for the API's answers (the rest is the web layer's own work); the client's wall
time over loopback is shown beside them. Size is the HTML body as sent (no compression). Targets: p50 server
time ≤ 50 ms and ≤ 100 kB for /, the group page and the dossier; exit status 1 when one is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _support import answers, closing_line, database_server, load_average, stop, wait_ready  # noqa: E402  (bench/_support.py)
from api import BATCH, make_bundles, percentile, start_uvicorn  # noqa: E402  (bench/api.py)

from store.client import make_client  # noqa: E402
from store.embedded import free_port  # noqa: E402
from store.publish import publish_many  # noqa: E402
from store.queries import definitions_page, runs_page  # noqa: E402
from store.schema import ensure_schema  # noqa: E402
from tests import factories  # noqa: E402

TARGET_MS = 50.0
TARGET_BYTES = 100_000
TARGETED = ("/", "group page", "dossier")
CATALOG_TARGET_MS = 25.0  # issue 6/8: every page, with the real catalog loaded
CATALOG_TARGETED = ("/", "group page", "dossier", "operation", "compare")
BIG_OPERATION = "bench-big-op"


def big_group(n: int) -> list:
    """One comparison group of n runs, best first (so loading moves no existing rank)."""
    defn = factories.definition(BIG_OPERATION)
    return [
        factories.run_bundle(f"big-{i}", score=round(1 - i / (n + 1), 6), latency_ns=20_000 + 37 * i, user=f"big{i}", defn=defn)
        for i in range(n)
    ]


async def load(uri: str, database: str, runs: int, group_size: int, console: Console) -> list[str]:
    client = make_client(uri)
    try:
        db = client[database]
        await ensure_schema(db)
        started = time.perf_counter()
        bundles = big_group(group_size) + make_bundles(runs - group_size)
        digests: list[str] = []
        for start in range(0, len(bundles), BATCH):
            digests += [o.run_digest for o in await publish_many(db, bundles[start : start + BATCH])]
        groups = await db.comparison_groups.count_documents({})
        console.print(f"loaded {len(digests):,} runs ({groups} comparison groups) in {time.perf_counter() - started:.1f} s")
        return digests
    finally:
        await client.close()


def timings(header: str) -> dict[str, float]:
    """`page;dur=1.2, graphql;dur=0.9;desc="2 queries"` -> {"page": 1.2, "graphql": 0.9}"""
    out = {}
    for metric in header.split(","):
        name, *params = (part.strip() for part in metric.split(";"))
        out[name] = next(float(p[4:]) for p in params if p.startswith("dur="))
    return out


def measure(http: httpx.Client, paths, iterations: int, warmup: int, *, beside: httpx.Client | None = None):
    """Timings of `iterations` requests (after `warmup`); with `beside`, each path also goes to
    that server right after (same path, same moment): a second list of timings."""
    clients = [http] if beside is None else [http, beside]
    results = [([], [], [], []) for _ in clients]
    for i in range(warmup + iterations):
        path = paths() if callable(paths) else paths
        for client, (server, api, wall, sizes) in zip(clients, results, strict=True):
            started = time.perf_counter()
            response = client.get(path, headers={"accept": "text/html"})
            elapsed = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                raise SystemExit(f"{path}: HTTP {response.status_code}: {response.text[:300]}")
            if i >= warmup:
                timing = timings(response.headers["server-timing"])
                server.append(timing["page"])
                api.append(timing["graphql"])
                wall.append(elapsed)
                sizes.append(len(response.content))
    return results[0] if beside is None else results


def start_stack(uri: str, database: str, home: Path) -> tuple[subprocess.Popen, str]:
    """`kernelindex serve --no-data` (the federated stack) on the loaded database."""
    port = free_port()
    env = {**os.environ, "MONGODB_URI": uri, "KERNELINDEX_DATABASE": database, "KERNELINDEX_HOME": str(home)}
    kernelindex = str(Path(sys.executable).with_name("kernelindex"))
    process = subprocess.Popen(
        [kernelindex, "serve", "--no-data", "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:  # the pages and the API both answer
        return (
            answers(f"{base}/static/site.css")()
            and httpx.post(f"{base}/graphql", json={"query": "{ __typename }"}, timeout=5).status_code == 200
        )

    wait_ready(process, ready, "kernelindex serve", timeout=240)
    return process, base


BOOTSTRAP = """import asyncio, sys
sys.path.insert(0, sys.argv[1])
from server.bootstrap import BUNDLED_DATA, bootstrap
from server.settings import Settings
asyncio.run(bootstrap(sys.argv[2], Settings(mongodb_uri=sys.argv[2], database=sys.argv[3]), BUNDLED_DATA))
"""


async def load_catalog(uri: str, database: str, console: Console, code: Path = ROOT) -> int:
    """What `serve` loads on first start, by the code of the checkout `code`."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", BOOTSTRAP, str(code), uri, database], cwd=code, check=True, stdin=subprocess.DEVNULL)
    client = make_client(uri)
    try:
        runs, groups = await client[database].runs.count_documents({}), await client[database].comparison_groups.count_documents({})
    finally:
        await client.close()
    console.print(f"loaded the bundled data ({code}): {runs:,} runs, {groups:,} comparison groups in {time.perf_counter() - started:.1f} s")
    return runs


def catalog_pages(http: httpx.Client) -> list:
    """The real pages of the bundled data: the largest cohort's among the newest 100 runs."""
    query = "{ runs(first: 100) { nodes { digest group { id size definition { name } } } } }"
    answer = http.post("/graphql", json={"query": query}).json()
    if "errors" in answer:
        raise SystemExit(f"runs: {answer['errors'][:1]}")
    nodes = answer["data"]["runs"]["nodes"]
    biggest = max((n["group"] for n in nodes if n["group"]), key=lambda g: g["size"])
    members = http.post(
        "/graphql",
        json={
            "query": "query($id: ID!) { comparisonGroup(id: $id) { runs(first: 50) { nodes { digest } } } }",
            "variables": {"id": biggest["id"]},
        },
    ).json()["data"]["comparisonGroup"]["runs"]["nodes"]
    digests = [n["digest"] for n in nodes]
    cohort = [n["digest"] for n in members]
    rng = random.Random(7)
    return [
        ("/", "/"),
        ("group page", f"/groups/{biggest['id']}"),
        ("dossier", lambda: f"/runs/{rng.choice(digests)}"),
        ("operation", f"/operations/{biggest['definition']['name']}"),
        ("compare", lambda: f"/compare?runs={rng.choice(cohort[1:])},{cohort[0]}"),
    ]


async def home_floor(uri: str, database: str, iterations: int) -> tuple[float, float, float]:
    """What `/` cannot go below on this database (p50 ms, in this process): its reads alone, as its
    resolvers make them (store.queries: the newest ten runs as rows and the first 20 operations at
    once, then the operations' groups and the runs' environments and implementations), without
    GraphQL or HTML; and, side by side, the newest ten runs read by `_id` as rows
    (store/run_rows.py) and as whole documents (what the rows replace: SecantusDB's cost grows
    with a document's size, whatever the projection)."""
    client = make_client(uri)
    db = client[database]
    reads, rows, whole = [], [], []
    try:
        for i in range(iterations + 3):
            started = time.perf_counter()
            (runs, _), (definitions, _, _) = await asyncio.gather(
                runs_page(db, query={"current": True}, first=10, after_seq=None, rows=True),
                definitions_page(db, words=[], first=20, after_name=None),
            )
            await asyncio.gather(
                db.comparison_groups.find({"definitionDigest": {"$in": [d["_id"] for d in definitions]}}).to_list(),
                db.environments.find({"_id": {"$in": list({r["spec"]["environmentDigest"] for r in runs})}}).to_list(),
                db.implementations.find({"_id": {"$in": list({r["spec"]["implementationDigest"] for r in runs})}}).to_list(),
            )
            middle = time.perf_counter()
            digests = [r["_id"] for r in runs]
            await db.run_rows.find({"_id": {"$in": digests}}).to_list()
            after_rows = time.perf_counter()
            await db.runs.find({"_id": {"$in": digests}}).to_list()
            if i >= 3:
                reads.append((middle - started) * 1000)
                rows.append((after_rows - middle) * 1000)
                whole.append((time.perf_counter() - after_rows) * 1000)
    finally:
        await client.close()
    return percentile(reads, 50), percentile(rows, 50), percentile(whole, 50)


def print_home_floor(uri: str, database: str, args: argparse.Namespace, console: Console) -> None:
    reads, rows, whole = asyncio.run(home_floor(uri, database, args.iterations))
    console.print(
        f"floor of `/`: its database reads alone (store.queries, no GraphQL, no HTML) p50 {reads:.1f} ms; "
        f"the newest ten runs by _id as rows {rows:.1f} ms, as whole documents {whole:.1f} ms"
    )


def start_baseline(code: Path, uri: str, database: str) -> tuple[subprocess.Popen, str]:
    """The checkout `code`'s single-process server (its bench/api.py --serve) under uvicorn."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(code / "bench" / "api.py"), "--serve", uri, database, str(port)], cwd=code, stdin=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    wait_ready(process, answers(f"{base}/healthz"), "baseline uvicorn", timeout=300)
    return process, base


def side_by_side(uri: str, database: str, args: argparse.Namespace, console: Console) -> bool:
    """--baseline: the bundled data loaded by each checkout's code, both served, requests alternating."""
    code = Path(args.baseline).resolve()
    served = asyncio.run(load_catalog(uri, database + "_base", console, code))
    asyncio.run(load_catalog(uri, database, console))
    base_process, base_url = start_baseline(code, uri, database + "_base")
    process, url = start_uvicorn(uri, database)
    try:
        with httpx.Client(base_url=url, timeout=120) as http, httpx.Client(base_url=base_url, timeout=120) as base:
            pages = catalog_pages(http)
            table = Table(
                title=f"web pages, single process, {served:,} runs loaded, {args.iterations} requests each, "
                f"alternating: {code} (before) and {ROOT} (after) (server p50 ms; kB = 1,000 bytes)"
            )
            for column in ("page", "before p50", "p90", "after p50", "p90", "after ÷ before", "size kB before / after", "target", "met"):
                table.add_column(column, justify="left" if column in ("page", "target") else "right")
            met = True
            for name, path in pages:
                after, before = measure(http, path, args.iterations, args.warmup, beside=base)
                p50, size = percentile(after[0], 50), max(after[3])
                ok = p50 <= CATALOG_TARGET_MS and size <= TARGET_BYTES
                met = met and ok
                table.add_row(
                    name,
                    f"{percentile(before[0], 50):.1f}",
                    f"{percentile(before[0], 90):.1f}",
                    f"{p50:.1f}",
                    f"{percentile(after[0], 90):.1f}",
                    f"{p50 / percentile(before[0], 50):.2f}×",
                    f"{max(before[3]) / 1000:.1f} / {size / 1000:.1f}",
                    f"p50 ≤ {CATALOG_TARGET_MS:g} ms, ≤ 100 kB",
                    "yes" if ok else "NO",
                )
            console.print(table)
            print_home_floor(uri, database, args, console)
            return met
    finally:
        stop(process, base_process)


def bench(uri: str, database: str, args: argparse.Namespace, console: Console) -> bool:
    if args.baseline:
        return side_by_side(uri, database, args, console)
    if args.catalog:
        served = asyncio.run(load_catalog(uri, database, console))
        digests = []
    else:
        digests = asyncio.run(load(uri, database, args.runs, args.group_size, console))
    if args.stack:
        process, base = start_stack(uri, database, Path(tempfile.mkdtemp(prefix="kernelindex-bench-stack-")))
    else:
        process, base = start_uvicorn(uri, database)  # bench/api.py's child: the real app under uvicorn
    try:
        with httpx.Client(base_url=base, timeout=60) as http:
            if args.catalog:
                pages = catalog_pages(http)
                met = report(http, pages, served, args, console, target_ms=CATALOG_TARGET_MS, targeted=CATALOG_TARGETED)
                print_home_floor(uri, database, args, console)
                return met
            groups = http.post(
                "/graphql",
                json={
                    "query": "query($n: String!) { definition(name: $n) { comparisonGroups { id size } } }",
                    "variables": {"n": BIG_OPERATION},
                },
            ).json()
            group = groups["data"]["definition"]["comparisonGroups"][0]
            assert group["size"] == args.group_size, group
            big = digests[: args.group_size]
            rng = random.Random(7)
            pages = [
                ("/", "/"),
                ("group page", f"/groups/{group['id']}"),
                ("dossier", lambda: f"/runs/{rng.choice(digests)}"),
                ("operation", f"/operations/{BIG_OPERATION}"),
                ("compare", lambda: f"/compare?runs={rng.choice(big[1:])},{big[0]}"),
            ]
            return report(http, pages, len(digests), args, console, target_ms=TARGET_MS, targeted=TARGETED)
    finally:
        stop(process)


def report(http: httpx.Client, pages: list, served: int, args: argparse.Namespace, console: Console, *, target_ms: float, targeted) -> bool:
    where = "federated stack (Hive Gateway, web process, 2 subgraphs)" if args.stack else "single process"
    table = Table(title=f"web pages, {where}, {served:,} runs loaded, {args.iterations} requests each (ms; kB = 1,000 bytes)")
    for column in ("page", "server p50", "p90", "p99", "GraphQL p50", "client p50", "size kB", "target", "met"):
        table.add_column(column, justify="left" if column in ("page", "target") else "right")
    met = True
    for name, path in pages:
        server, api, wall, sizes = measure(http, path, args.iterations, args.warmup)
        p50, size = percentile(server, 50), max(sizes)
        ok = p50 <= target_ms and size <= TARGET_BYTES
        aimed = name in targeted
        met = met and (ok or not aimed)
        table.add_row(
            name,
            f"{p50:.1f}",
            f"{percentile(server, 90):.1f}",
            f"{percentile(server, 99):.1f}",
            f"{percentile(api, 50):.1f}",
            f"{percentile(wall, 50):.1f}",
            f"{size / 1000:.1f}" if min(sizes) == size else f"{min(sizes) / 1000:.1f}–{size / 1000:.1f}",
            f"p50 ≤ {target_ms:g} ms, ≤ 100 kB" if aimed else "—",
            ("yes" if ok else "NO") if aimed else "",
        )
    console.print(table)
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000, help="runs to load in all (default 10000)")
    parser.add_argument("--group-size", type=int, default=1_000, help="runs in the big group (default 1000)")
    parser.add_argument("--iterations", type=int, default=100, help="timed requests per page (default 100)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed requests per page first (default 10)")
    parser.add_argument("--catalog", action="store_true", help="load the bundled data (the real catalog) instead of synthetic runs")
    parser.add_argument(
        "--stack", action="store_true", help="through the federated stack (kernelindex serve) instead of the single process"
    )
    parser.add_argument("--baseline", metavar="DIR", help="with --catalog: also serve checkout DIR's code, requests alternating")
    args = parser.parse_args()
    if args.baseline and (not args.catalog or args.stack):
        parser.error("--baseline goes with --catalog, single process")
    console = Console(width=max(Console().width, 120))
    started = time.perf_counter()
    load_before = load_average()
    database = f"bench_pages_{uuid.uuid4().hex[:8]}"
    with database_server("kernelindex-bench-pages-") as uri:
        met = bench(uri, database, args, console)
        if os.environ.get("MONGODB_URI"):  # a server of the user's: leave it as it was
            asyncio.run(make_client(uri).drop_database(database))
    console.print(closing_line(started, load_before))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
