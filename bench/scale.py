"""Benchmark: how the cost of importing and reading grows with the number of runs.

    python bench/scale.py                              # 10,000 and 100,000 runs (SYNTHETIC rows)
    python bench/scale.py --sizes 10000,100000,1000000 # the million too (hours on a 2-core machine)
    python bench/scale.py --sizes 2000 --iterations 10 # a quick look

The runs are SYNTHETIC (tests/factories.py's made-up operations, users and scores, in our
v1alpha1 format), in the shapes of the bundled KernelIndex catalog export: their cohort sizes are
drawn from the export's own (the `comparisonKey` of each of its 7,857 `benchmark_runs` rows:
1,912 cohorts, median 1 run, largest 260), four cohorts per operation (two GPUs × two protocol
versions, as in bench/api.py). One embedded SecantusDB on a temporary directory with journaled
writes (`--sync-on-commit`, `w: majority, j: true`) grows from one size to the next: each step
publishes the runs that take it to the size (`store.publish.publish_many`, batches of 500, each
cohort's runs best first, see bench/api.py), then the real single-process server
(`server.app.create_app` under uvicorn, as bench/pages.py) is started on the database and asked,
one request at a time after a warm-up:

  /                   the home page (first page of operations, newest runs)
  group page          the largest cohort's leaderboard, first 50
  dossier             a random run's page
  operation           the largest cohort's operation page
  runs(first: 100)    the GraphQL query, newest first (bench/api.py's (b))
  dossier query       GraphQL run(id:) with the dossier page's selection

One table: per size, the import rate of that step, each read's p50 and p99 (server time for the
pages, client time for GraphQL), the database's size on disk and the server's resident memory.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
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

from _support import closing_line, load_average, stop  # noqa: E402  (bench/_support.py)
from api import BATCH, percentile, start_uvicorn  # noqa: E402  (bench/api.py)
from pages import measure  # noqa: E402  (bench/pages.py)

from store.client import make_client  # noqa: E402
from store.embedded import EmbeddedServer  # noqa: E402
from store.publish import publish_many  # noqa: E402
from store.schema import ensure_schema  # noqa: E402
from tests import factories  # noqa: E402
from web.queries import DOSSIER  # noqa: E402

EXPORT = ROOT / "data" / "kernelindex-catalog" / "catalog-2026-08-16-0022af0b.jsonl.zst"
RUNS_PAGE = "{ runs(first: 100) { nodes { id digest title rank primaryMeasurement { display } protocol { id } environment { id } group { id size } } } }"


def catalog_cohort_sizes() -> list[int]:
    """The size of each cohort of the bundled export (its `benchmark_runs` rows' comparisonKey)."""
    import zstandard

    per_cohort: collections.Counter[str] = collections.Counter()
    with open(EXPORT, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as stream:
        for line in stream.read().splitlines():
            if b"benchmark_runs" in line[:40] and (row := json.loads(line))["table"] == "benchmark_runs":
                per_cohort[row["row"]["comparisonKey"]] += 1
    if not per_cohort:
        raise SystemExit(f"{EXPORT}: no benchmark_runs rows")
    return list(per_cohort.values())


class Synthetic:
    """SYNTHETIC runs, cohort by cohort, cohort sizes drawn from the catalog's."""

    def __init__(self, sizes: list[int], seed: int = 1):
        self.sizes = sizes
        self.rng = random.Random(seed)
        self.environments = [factories.environment(), factories.environment("NVIDIA H200", "sm_90")]
        self.protocols = [factories.protocol(version="v1.1"), factories.protocol(version="v1.0")]
        self.cohorts = 0
        self.runs = 0
        self.definition = None

    def take(self, n: int) -> list:
        """The next n runs: whole cohorts (the last one cut at n), each best first."""
        bundles: list = []
        while len(bundles) < n:
            if self.cohorts % 4 == 0:
                self.definition = factories.definition(f"scale-op-{self.cohorts // 4:06d}")
            size = min(self.rng.choice(self.sizes), n - len(bundles))
            scores = sorted((round(self.rng.random(), 6) for _ in range(size)), reverse=True)
            for score in scores:
                bundles.append(
                    factories.run_bundle(
                        f"scale-{self.runs}",
                        score=score,
                        latency_ns=self.rng.randrange(20_000, 2_000_000),
                        user=f"user{self.runs % 997}",
                        defn=self.definition,
                        env=self.environments[(self.cohorts // 2) % 2],
                        proto=self.protocols[self.cohorts % 2],
                    )
                )
                self.runs += 1
            self.cohorts += 1
        return bundles


async def grow(uri: str, database: str, synthetic: Synthetic, n: int) -> tuple[float, float]:
    """Publish n more runs; (seconds building manifests, seconds publishing)."""
    client = make_client(uri)
    try:
        db = client[database]
        await ensure_schema(db)
        built = publishing = 0.0
        done = 0
        while done < n:
            started = time.perf_counter()
            bundles = synthetic.take(min(BATCH * 10, n - done))
            built += time.perf_counter() - started
            started = time.perf_counter()
            for start in range(0, len(bundles), BATCH):
                await publish_many(db, bundles[start : start + BATCH])
            publishing += time.perf_counter() - started
            done += len(bundles)
        return built, publishing
    finally:
        await client.close()


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def rss_mib(pid: int) -> float:
    """Resident memory of the process and its children (secantusd-py may run a child)."""
    total = 0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for p in pids:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def time_graphql(http: httpx.Client, query: str, variables, iterations: int, warmup: int) -> list[float]:
    samples = []
    for i in range(warmup + iterations):
        started = time.perf_counter()
        body = http.post("/graphql", json={"query": query, "variables": variables() if callable(variables) else variables}).json()
        elapsed = (time.perf_counter() - started) * 1000
        if body.get("errors"):
            raise SystemExit(f"GraphQL errors: {body['errors'][:1]}")
        if i >= warmup:
            samples.append(elapsed)
    return samples


def reads(base: str, iterations: int, warmup: int) -> dict[str, tuple[float, float]]:
    """p50 and p99 of each page and query."""
    rng = random.Random(7)
    with httpx.Client(base_url=base, timeout=300) as http:
        newest = http.post("/graphql", json={"query": RUNS_PAGE}).json()["data"]["runs"]["nodes"]
        digests = [n["digest"] for n in newest]
        run_ids = [n["id"] for n in newest]
        biggest = max((n["group"] for n in newest), key=lambda g: g["size"])
        name = http.post(
            "/graphql",
            json={"query": "query($id: ID!) { comparisonGroup(id: $id) { definition { name } } }", "variables": {"id": biggest["id"]}},
        ).json()["data"]["comparisonGroup"]["definition"]["name"]
        out = {}
        for label, path in (
            ("/", "/"),
            ("group page", f"/groups/{biggest['id']}"),
            ("dossier", lambda: f"/runs/{rng.choice(digests)}"),
            ("operation", f"/operations/{name}"),
        ):
            server, _api, _wall, _sizes = measure(http, path, iterations, warmup)
            out[label] = (percentile(server, 50), percentile(server, 99))
        page = time_graphql(http, RUNS_PAGE, {}, iterations, warmup)
        out["runs(first: 100)"] = (percentile(page, 50), percentile(page, 99))
        dossier = time_graphql(http, DOSSIER, lambda: {"id": rng.choice(run_ids)}, iterations, warmup)
        out["dossier query"] = (percentile(dossier, 50), percentile(dossier, 99))
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="run counts to measure at, ascending (default 10000,100000)")
    parser.add_argument("--iterations", type=int, default=50, help="timed requests per read and size (default 50)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed requests first (default 5)")
    args = parser.parse_args()
    sizes = sorted(int(s.replace("_", "")) for s in args.sizes.split(","))
    console = Console(width=max(Console().width, 140))
    started, load_before = time.perf_counter(), load_average()
    cohort_sizes = catalog_cohort_sizes()
    console.print(
        f"SYNTHETIC runs; cohort sizes drawn from the bundled export's {len(cohort_sizes):,} cohorts "
        f"(median {sorted(cohort_sizes)[len(cohort_sizes) // 2]}, largest {max(cohort_sizes)})"
    )
    synthetic = Synthetic(cohort_sizes)
    database = f"bench_scale_{uuid.uuid4().hex[:8]}"
    rows = []
    labels = ("/", "group page", "dossier", "operation", "runs(first: 100)", "dossier query")
    with tempfile.TemporaryDirectory(prefix="kernelindex-bench-scale-") as tmp:
        storage = Path(tmp) / "db"
        with EmbeddedServer(storage, log_path=Path(tmp) / "secantusd.log") as server:
            have = 0
            for size in sizes:
                load_at_start = load_average()
                built, publishing = asyncio.run(grow(server.uri, database, synthetic, size - have))
                rate = (size - have) / (built + publishing)
                console.print(
                    f"{size:,} runs ({synthetic.cohorts:,} cohorts): {size - have:,} published in {built + publishing:.0f} s "
                    f"({built:.0f} s building manifests), {rate:,.0f} runs/s; load {load_at_start} -> {load_average()}"
                )
                have = size
                process, base = start_uvicorn(server.uri, database)
                try:
                    measured = reads(base, args.iterations, args.warmup)
                finally:
                    stop(process)
                rows.append((size, synthetic.cohorts, rate, measured, disk_bytes(storage), rss_mib(server.process.pid), load_average()))
    table = Table(
        title=f"cost by size, SYNTHETIC runs in the catalog's cohort sizes, {args.iterations} requests per read "
        "(p50 / p99 ms: pages server time, queries client time)"
    )
    for column in ("runs", "cohorts", "import runs/s", *labels, "db on disk MB", "db RSS MiB", "load"):
        table.add_column(column, justify="right")
    for size, cohorts, rate, measured, disk, rss, load in rows:
        table.add_row(
            f"{size:,}",
            f"{cohorts:,}",
            f"{rate:,.0f}",
            *(f"{measured[label][0]:.1f} / {measured[label][1]:.1f}" for label in labels),
            f"{disk / 1e6:,.0f}",
            f"{rss:,.0f}",
            load.split()[0],
        )
    console.print(table)
    console.print(closing_line(started, load_before))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
