"""Benchmark: how the cost of importing and reading grows with the number of runs.

    python bench/scale.py                              # 10,000 and 100,000 runs (SYNTHETIC rows)
    python bench/scale.py --sizes 10000,100000,1000000 # the million too (see --budget-s)
    python bench/scale.py --sizes 20000 --iterations 10 # a quick look

The store starts with the bundled KernelIndex catalog export imported (7,857 real runs, 1,912
cohorts, `import kernelindex-catalog`); the runs beyond it are SYNTHETIC: copies of the export's own
run documents (its shapes: manifest, measurements, catalog row fields) under made-up digests and
external ids (source `synthetic-scale`), in made-up cohorts whose sizes are drawn from the export's
(median 1 run, largest 260), four cohorts to a made-up operation (a renamed copy of a real one,
as the export has ~4 cohorts per operation), each cohort a copy of its template run's cohort
(same workload, protocol and environment, so every page and the dossier resolve). They are loaded
through the catalog's fast write path (`store.catalog.write_plan`: objects, then per batch of
cohorts one transaction with the runs, ranks, each cohort's size and #1, events), PLAN_RUNS runs
per plan, into one embedded SecantusDB on a temporary directory with journaled writes
(`--sync-on-commit`, `w: majority, j: true`) that grows from one size to the next. At each size
the real single-process server (`server.app.create_app` under uvicorn, as bench/pages.py) is
started on the database and asked, one request at a time after a warm-up:

  /                   the home page (first page of operations, newest runs)
  group page          the largest cohort's leaderboard, first 50
  dossier             a random run's page
  operation           the largest cohort's operation page
  runs(first: 100)    the GraphQL query, newest first (bench/api.py's (b))
  dossier query       GraphQL run(id:) with the dossier page's selection

One table: per size, the import rate of that step (runs/s and the database's CPU seconds per
1,000 runs), how long the server took to answer /healthz once started on the store (its
start-up and the database's first answer after the import; `--ready-timeout-s`, past which that
size has no reads and the run stops), each read's p50 and p99 (server time for the pages, client
time for GraphQL), the database's size on disk and the server's resident memory. `--budget-s`
bounds the whole run: a size whose import would not finish in it (estimated from the rate so
far) is not started, and the table says where it stopped; so does `--max-rss-gib` (the machine is shared): growing stops
once the database's resident memory passes it, and the reads are measured where it stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import hashlib
import io
import os
import random
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _support import closing_line, load_average, process_cpu_seconds, stop  # noqa: E402  (bench/_support.py)
from api import percentile, start_uvicorn  # noqa: E402  (bench/api.py)
from pages import measure  # noqa: E402  (bench/pages.py)

from loaders.common.format_plan import WritePlan  # noqa: E402
from loaders.pipeline import run_import  # noqa: E402
from store.catalog import write_plan  # noqa: E402
from store.client import make_client  # noqa: E402
from store.embedded import EmbeddedServer  # noqa: E402
from store.schema import ensure_schema  # noqa: E402
from web.queries import DOSSIER  # noqa: E402

EXPORT = ROOT / "data" / "kernelindex-catalog" / "catalog-2026-08-16-0022af0b.jsonl.zst"
RUNS_PAGE = "{ runs(first: 100) { nodes { id digest title rank primaryMeasurement { display } protocol { id } environment { id } group { id size } } } }"
PLAN_RUNS = 20_000  # runs per write plan: an export of this many runs
SOURCE = "synthetic-scale"


def fake_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class Synthetic:
    """SYNTHETIC runs in the catalog's shapes: copies of its run documents, in made-up cohorts of
    its cohort sizes, COHORTS_PER_OPERATION cohorts to a made-up operation (a copy of a real one,
    renamed), each cohort a copy of its template run's cohort."""

    def __init__(self, runs: list[dict], groups: dict[str, dict], definitions: dict[str, dict], seed: int = 1):
        self.templates = runs
        self.by_definition: dict[str, list[dict]] = {}
        for doc in runs:
            self.by_definition.setdefault(doc["definitionDigest"], []).append(doc)
        self.groups = groups
        self.definitions = definitions
        self.sizes = list(_cohort_sizes(runs))
        self.rng = random.Random(seed)
        self.cohorts = 0
        self.operations = 0
        self.runs = 0
        self.operation: tuple[str, str] | None = None  # (synthetic digest, the real one it copies)

    def _next_operation(self, plan: WritePlan) -> None:
        real = self.rng.choice(self.templates)["definitionDigest"]
        digest = fake_digest(f"{SOURCE} operation {self.operations}")
        doc = copy.deepcopy(self.definitions[real])
        doc.pop("provenance", None)
        doc["_id"] = digest
        doc["metadata"] = {**doc["metadata"], "name": f"{SOURCE}-{self.operations:07d}", "title": f"Synthetic operation {self.operations}"}
        doc["aliases"] = []
        plan.objects.setdefault("definitions", []).append(doc)
        self.operation = (digest, real)
        self.operations += 1

    def plan(self, n: int) -> WritePlan:
        """The next n runs (whole cohorts; the last one cut at n) as one write plan."""
        plan = WritePlan()
        while len(plan.runs) < n:
            if self.cohorts % COHORTS_PER_OPERATION == 0 or self.operation is None:
                self._next_operation(plan)
            operation, real = self.operation
            template = self.rng.choice(self.by_definition[real])
            key = fake_digest(f"{SOURCE} cohort {self.cohorts}")
            group = {k: v for k, v in self.groups[template["groupKey"]].items() if k in GROUP_FIELDS}
            plan.groups[key] = {**group, "definitionDigest": operation}
            size = min(self.rng.choice(self.sizes), n - len(plan.runs))
            for _ in range(size):
                doc = copy.deepcopy(template)
                doc.pop("provenance", None)
                ranked = doc.get("rankValue") is not None
                doc.update(
                    _id=fake_digest(f"{SOURCE} run {self.runs}"),
                    externalId=f"{SOURCE}-{self.runs}",
                    source=SOURCE,
                    groupKey=key,
                    definitionDigest=operation,
                    rankValue=round(self.rng.uniform(0.5, 2.0) * doc["rankValue"], 6) if ranked else None,
                )
                plan.runs.append(doc)
                self.runs += 1
            self.cohorts += 1
        return plan


COHORTS_PER_OPERATION = 4  # the export: 1,912 cohorts of 449 operations


# A group document's own fields (store.catalog inserts it with its size and #1).
GROUP_FIELDS = (
    "definitionDigest",
    "workloadDigest",
    "protocolDigest",
    "environmentDigest",
    "family",
    "familyVersion",
    "gpu",
    "rankRule",
    "title",
    "cohort",
    "source",
)


def _cohort_sizes(runs: list[dict]) -> list[int]:
    sizes: dict[str, int] = {}
    for doc in runs:
        sizes[doc["groupKey"]] = sizes.get(doc["groupKey"], 0) + 1
    return list(sizes.values())


async def import_catalog(uri: str, database: str) -> tuple[Synthetic, float, float]:
    """The bundled export imported as `import kernelindex-catalog` does; its runs and cohorts as
    the templates. (runs, seconds)."""
    client = make_client(uri)
    try:
        db = client[database]
        await ensure_schema(db)
        started = time.perf_counter()
        report = await run_import("kernelindex-catalog", db, target=str(EXPORT), console=Console(file=io.StringIO()))
        seconds = time.perf_counter() - started
        runs = await db.runs.find({}, {"provenance": 0, "seq": 0, "rank": 0, "rankOrder": 0, "current": 0, "storedAt": 0}).to_list()
        groups = {g["_id"]: g async for g in db.comparison_groups.find({})}
        definitions = {d["_id"]: d async for d in db.definitions.find({})}
        return Synthetic(runs, groups, definitions), report.runs, seconds
    finally:
        await client.close()


async def grow(
    uri: str, database: str, synthetic: Synthetic, n: int, pid: int, max_rss_mib: float
) -> tuple[int, float, float, dict[str, float]]:
    """Write n more runs through store.catalog.write_plan, stopping early when the database's
    resident memory passes max_rss_mib; (runs written, seconds making plans, seconds writing,
    the writing's seconds by write_plan's steps)."""
    client = make_client(uri)
    try:
        db = client[database]
        built = writing = 0.0
        done = 0
        steps: dict[str, float] = {}
        while done < n and rss_mib(pid) < max_rss_mib:
            started = time.perf_counter()
            plan = synthetic.plan(min(PLAN_RUNS, n - done))
            built += time.perf_counter() - started
            started = time.perf_counter()
            outcome = await write_plan(db, plan, datetime.now(UTC))
            writing += time.perf_counter() - started
            for step, seconds in outcome.seconds.items():
                steps[step] = steps.get(step, 0.0) + seconds
            done += len(plan.runs)
        return done, built, writing, steps
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


def _seconds(ready_s: float | None, timeout_s: float) -> str:
    return f"{ready_s:.1f}" if ready_s is not None else f"> {timeout_s:g}"


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
    parser.add_argument("--max-rss-gib", type=float, default=8, help="stop growing when the database's RSS passes this (default 8)")
    parser.add_argument(
        "--ready-timeout-s", type=float, default=600, help="how long the server may take to answer /healthz at a size (default 600)"
    )
    parser.add_argument("--budget-s", type=float, default=3600, help="stop before a size whose import would end past this (default 3600)")
    args = parser.parse_args()
    sizes = sorted(int(s.replace("_", "")) for s in args.sizes.split(","))
    console = Console(width=max(Console().width, 160))
    started, load_before = time.perf_counter(), load_average()
    database = f"bench_scale_{uuid.uuid4().hex[:8]}"
    rows, stopped = [], None
    labels = ("/", "group page", "dossier", "operation", "runs(first: 100)", "dossier query")
    with tempfile.TemporaryDirectory(prefix="kernelindex-bench-scale-") as tmp:
        storage = Path(tmp) / "db"
        with EmbeddedServer(storage, log_path=Path(tmp) / "secantusd.log") as server:
            pid = server.process.pid
            cpu = process_cpu_seconds(pid)
            synthetic, have, seconds = asyncio.run(import_catalog(server.uri, database))
            console.print(
                f"bundled catalog imported: {have:,} runs in {seconds:.1f} s ({have / seconds:,.0f} runs/s, database CPU "
                f"{process_cpu_seconds(pid) - cpu:.1f} s); then SYNTHETIC runs in its shapes and cohort sizes"
            )
            rate = have / seconds
            for size in sizes:
                if size <= have:
                    continue
                remaining = args.budget_s - (time.perf_counter() - started)
                if (size - have) / rate > remaining:
                    stopped = f"{size:,} runs not started: at {rate:,.0f} runs/s it needs ~{(size - have) / rate / 60:,.0f} min, {remaining / 60:,.0f} min of --budget-s left"
                    console.print(stopped)
                    break
                load_at_start = load_average()
                cpu = process_cpu_seconds(pid)
                done, built, writing, steps = asyncio.run(grow(server.uri, database, synthetic, size - have, pid, args.max_rss_gib * 1024))
                db_cpu = process_cpu_seconds(pid) - cpu
                rate = done / (built + writing) if done else rate
                console.print(
                    f"{have + done:,} runs: {done:,} written in {built + writing:.0f} s ({built:.0f} s making plans), "
                    f"{rate:,.0f} runs/s, database CPU {db_cpu:.0f} s, RSS {rss_mib(pid):,.0f} MiB; load {load_at_start} -> {load_average()}"
                )
                console.print(
                    "  writing, by write_plan's steps: " + "; ".join(f"{step} {seconds:.0f} s" for step, seconds in steps.items())
                )
                per_k = db_cpu / done * 1000 if done else float("nan")
                have += done
                if have < size:
                    stopped = (
                        f"{size:,} runs not reached: stopped at {have:,}, the database's RSS passed --max-rss-gib {args.max_rss_gib:g}"
                    )
                    console.print(stopped)
                # How long the server takes to answer /healthz on a store this size (its start-up
                # and the database's first answer after the import), then its reads.
                starting = time.perf_counter()
                measured: dict[str, tuple[float, float]] = {}
                try:
                    process, base = start_uvicorn(server.uri, database, timeout=args.ready_timeout_s)
                except SystemExit as failed:
                    ready_s = None
                    stopped = f"{have:,} runs: no reads: {failed}"
                    console.print(stopped)
                else:
                    ready_s = time.perf_counter() - starting
                    try:
                        measured = reads(base, args.iterations, args.warmup)
                    finally:
                        stop(process)
                rows.append(
                    (
                        have,
                        synthetic.cohorts + len(synthetic.groups),
                        synthetic.operations + len(synthetic.definitions),
                        rate,
                        per_k,
                        ready_s,
                        measured,
                        disk_bytes(storage),
                        rss_mib(pid),
                        load_average(),
                    )
                )
                console.print(
                    f"{have:,} runs: server ready in {_seconds(ready_s, args.ready_timeout_s)} s; "
                    + ", ".join(f"{k} {v[0]:.1f} / {v[1]:.1f} ms" for k, v in measured.items())
                )
                if stopped:
                    break
    table = Table(
        title=f"cost by size: the bundled catalog + SYNTHETIC runs in its shapes and cohort sizes, {args.iterations} requests per read "
        "(p50 / p99 ms: pages server time, queries client time)"
    )
    columns = ("runs", "cohorts", "operations", "import runs/s", "db CPU s / 1k runs", "server ready s", *labels)
    for column in (*columns, "db on disk MB", "db RSS MiB", "load"):
        table.add_column(column, justify="right")
    for size, cohorts, operations, rate, per_k, ready_s, measured, disk, rss, load in rows:
        table.add_row(
            f"{size:,}",
            f"{cohorts:,}",
            f"{operations:,}",
            f"{rate:,.0f}",
            f"{per_k:.2f}",
            _seconds(ready_s, args.ready_timeout_s),
            *(f"{measured[label][0]:.1f} / {measured[label][1]:.1f}" if label in measured else "—" for label in labels),
            f"{disk / 1e6:,.0f}",
            f"{rss:,.0f}",
            load.split()[0],
        )
    console.print(table)
    if stopped:
        console.print(stopped)
    console.print(closing_line(started, load_before))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
