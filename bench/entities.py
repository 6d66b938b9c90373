"""Benchmark: the benchmarks subgraph's share of the cross-subgraph query, this code against another.

    git archive 0af1d5f | tar -x -C /tmp/base      # the code to compare with
    python bench/entities.py --baseline /tmp/base [--requests 300]

Starts SecantusDB (in memory, unless MONGODB_URI is set), loads the bundled data with this code,
and serves the benchmarks subgraph twice on that one database: this checkout's and the baseline
checkout's (`python -m cli serve --subgraph benchmarks --no-data` run in DIR). Both are sent what
Hive Gateway sends it for the cross-subgraph query (bench/gateway.py's, `definition → jobs → runs`):
`_entities` of the Definition the registry answered with, and each of its jobs' `run` key. Requests
alternate, one at a time; printed: p50 and p90 of each, the finds per request (the database's own
`serverStatus` counters, polling of an idle window of the same length taken off), and the ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _support import answers, closing_line, database_server, load_average, percentile, stop, wait_ready  # noqa: E402

DEFINITION = "kernelindex-051-qkv-qknorm-backward"
ENTITIES = """query($r: [_Any!]!) { _entities(representations: $r) {
    ... on Definition { jobs(first: 5) { edges { node { state run { __typename id } } } } } } }"""


def serve_benchmarks(code: Path, uri: str, database: str) -> tuple[subprocess.Popen, str]:
    """The benchmarks subgraph of checkout `code` on `uri`, on a free loopback port."""
    from store.embedded import free_port

    port = free_port()
    env = {**os.environ, "MONGODB_URI": uri, "KERNELINDEX_DATABASE": database, "PYTHONPATH": str(code)}
    argv = [sys.executable, "-m", "cli", "serve", "--subgraph", "benchmarks", "--no-data", "--port", str(port)]
    process = subprocess.Popen(argv, cwd=code, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(process, answers(f"http://127.0.0.1:{port}/healthz"), f"the benchmarks subgraph of {code}", 120)
    return process, f"http://127.0.0.1:{port}/graphql"


def finds(client) -> int:
    return client.admin.command("serverStatus")["opcounters"]["query"]


def measure(urls: dict[str, str], variables: dict, n: int, uri: str) -> dict[str, tuple[list[float], float]]:
    """Latencies (ms) and finds per request of each URL, requests alternating one at a time."""
    import httpx
    from pymongo import MongoClient

    times: dict[str, list[float]] = {name: [] for name in urls}
    counted: dict[str, float] = {}
    db = MongoClient(uri)
    try:
        with httpx.Client(timeout=60) as http:
            for name, url in urls.items():
                for _ in range(20):  # warm-up; the answers must be the same
                    body = http.post(url, json={"query": ENTITIES, "variables": variables}).json()
                    if "errors" in body:
                        raise SystemExit(f"{name}: {body['errors'][:1]}")
            answers_ = {name: http.post(url, json={"query": ENTITIES, "variables": variables}).json() for name, url in urls.items()}
            if len({str(a) for a in answers_.values()}) != 1:
                raise SystemExit(f"the two answer differently: {answers_}")
            for name, url in urls.items():  # finds per request, one URL at a time
                before, start = finds(db), time.monotonic()
                for _ in range(50):
                    http.post(url, json={"query": ENTITIES, "variables": variables})
                after, elapsed = finds(db), time.monotonic() - start
                idle = finds(db)
                time.sleep(elapsed)
                counted[name] = (after - before - (finds(db) - idle)) / 50
            for _ in range(n):
                for name, url in urls.items():
                    start = time.perf_counter()
                    response = http.post(url, json={"query": ENTITIES, "variables": variables})
                    times[name].append((time.perf_counter() - start) * 1000)
                    if response.status_code != 200:
                        raise SystemExit(f"{name}: HTTP {response.status_code}")
    finally:
        db.close()
    return {name: (times[name], counted[name]) for name in urls}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, metavar="DIR", help="a checkout of the code to compare with")
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    baseline = Path(args.baseline).resolve()
    if not (baseline / "cli").is_dir():
        parser.error(f"--baseline: {baseline} is not a checkout (no cli/)")

    import asyncio

    import httpx
    from rich.console import Console
    from rich.table import Table

    from server.bootstrap import BUNDLED_DATA, bootstrap
    from server.settings import Settings

    console = Console()
    os.environ["KERNELINDEX_HOME"] = tempfile.mkdtemp(prefix="kernelindex-bench-entities-home-")
    database = f"bench_entities_{uuid.uuid4().hex[:8]}"
    started, load_before = time.perf_counter(), load_average()
    here = Path(__file__).resolve().parents[1]
    with database_server("kernelindex-bench-entities-", console.print) as uri:
        asyncio.run(bootstrap(uri, Settings(mongodb_uri=uri, database=database), BUNDLED_DATA, say=lambda line: None))
        processes = []
        try:
            urls = {}
            for name, code in (("baseline", baseline), ("this code", here)):
                process, urls[name] = serve_benchmarks(code, uri, database)
                processes.append(process)
            # The Definition's key, as the registry answers the gateway.
            from pymongo import MongoClient

            with MongoClient(uri) as client:
                doc = client[database].definitions.find_one({"spec.name": DEFINITION}) or client[database].definitions.find_one(
                    {"metadata.name": DEFINITION}
                )
            if doc is None:
                raise SystemExit(f"no definition {DEFINITION} in the bundled data")
            from resolvers import ids

            variables = {"r": [{"__typename": "Definition", "id": ids.encode("Definition", doc["_id"])}]}
            results = measure(urls, variables, args.requests, uri)
            jobs = httpx.post(urls["this code"], json={"query": ENTITIES, "variables": variables}).json()
        finally:
            stop(*processes)

    edges = jobs["data"]["_entities"][0]["jobs"]["edges"]
    table = Table(
        title=f"benchmarks subgraph, _entities(Definition) {{ jobs(first: 5) }}: {len(edges)} jobs, {args.requests} requests each"
    )
    for column in ("code", "p50 ms", "p90 ms", "finds / request"):
        table.add_column(column, justify="left" if column == "code" else "right")
    for name, (values, per_request) in results.items():
        table.add_row(name, f"{percentile(values, 50):.2f}", f"{percentile(values, 90):.2f}", f"{per_request:.1f}")
    base, now = (percentile(results[n][0], 50) for n in ("baseline", "this code"))
    table.add_row("this ÷ baseline (p50)", f"{now / base:.2f}×", "", "")
    console.print(table)
    console.print(closing_line(started, load_before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
