"""Benchmark: imports of synthetic snapshots — SOL-ExecBench (235 kernels × 200 submissions =
47,000 runs) and GPU MODE KernelBot (50 per-shape boards × 400 users + a flat board = 20,400 runs
from 22,400 rows).

    python bench/import.py [--source both|sol-execbench|gpumode] [--kernels 235] [--submissions 200]
                           [--boards 50] [--users 400] [--keep DIR]

Writes synthetic snapshot directories (tests/loaders/synthetic.py, tests/loaders/gpumode_synthetic.py:
made-up kernels, boards and users), starts SecantusDB (`secantusd-py`) on a temporary directory
and a free port unless MONGODB_URI is set, then imports each source twice through the import
pipeline's `run_import` (loaders/pipeline.py): a first import into an empty database and an unchanged re-import, whose write
commands are counted with PyMongo command monitoring (there must be none). Prints runs per second against the targets (first import
≥ 1,000 runs/s, re-import ≥ 5,000 runs/s), where the time went, the CPU seconds of this process
and of the database server, and the machine's load average (other work on a shared 2-core
machine slows both down; CPU seconds are the steadier figure).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import io
import os
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _support import WriteCounter, process_cpu_seconds  # noqa: E402  (bench/_support.py)

from loaders.pipeline import run_import  # noqa: E402
from store.client import DURABLE_WRITES, make_client  # noqa: E402
from store.embedded import EmbeddedServer  # noqa: E402
from store.schema import ensure_schema  # noqa: E402
from tests.loaders import gpumode_synthetic, synthetic  # noqa: E402

import_gpumode = functools.partial(run_import, "gpumode")
import_sol = functools.partial(run_import, "sol-execbench")

TARGETS = {"first import": 1_000, "unchanged re-import": 5_000}


def make_snapshot(root: Path, kernels: int, per_kernel: int, seed: int = 7) -> int:
    """Synthetic pages for `kernels` kernels with `per_kernel` submissions each; every submission
    has a latency, so every one becomes a run: mostly passed, some incorrect, disqualified or
    failed, scores on a 4-decimal grid (so some tie)."""
    rng = random.Random(seed)
    by_kernel = {}
    next_id = 1_000_000
    for k in range(kernels):
        kernel_id = 1000 + k
        records = []
        for _ in range(per_kernel):
            roll = rng.random()
            fields = {}
            if roll < 0.04:
                fields = {"is_disqualified": True}
            elif roll < 0.08:
                fields = {"is_correct": False}
            elif roll < 0.10:
                fields = {"status": "ERROR", "is_correct": None}
            records.append(
                synthetic.submission(
                    kernel_id,
                    next_id,
                    sol_score=round(rng.uniform(0.05, 0.95), 4),
                    latency_ms=round(rng.uniform(0.01, 2.0), 6),
                    stack="v1.1",
                    **fields,
                )
            )
            next_id += 1
        by_kernel[kernel_id] = records
    synthetic.write_snapshot(root, by_kernel, cases=16)
    return next_id - 1_000_000


def make_gpumode_snapshot(root: Path, boards: int, users: int, seed: int = 7) -> int:
    """`boards` per-shape boards (4 cases, MI300X) with `users` users each — one in ten with a
    second, slower submission that its best one beats — and one flat board of `users` scores."""
    rng = random.Random(seed)
    board_rows = [gpumode_synthetic.leaderboard(20_000 + b, f"synthetic-board-{b}", ["MI300X"]) for b in range(boards)]
    board_rows.append(gpumode_synthetic.leaderboard(29_999, "synthetic-flat", ["B200"]))
    rows, next_id = [], 1_000_000
    for b in range(boards):
        for user in range(users):
            means = [round(rng.uniform(5_000, 500_000), 3) for _ in range(4)]
            rows.append(gpumode_synthetic.per_shape_row(next_id, 20_000 + b, user, means=means, rel_std=rng.uniform(0.005, 0.05)))
            next_id += 1
            if user % 10 == 0:
                rows.append(
                    gpumode_synthetic.per_shape_row(next_id, 20_000 + b, user, means=[m * 1.2 for m in means], time="2026-04-01T00:00:00")
                )
                next_id += 1
    flat = [gpumode_synthetic.flat_row(next_id + u, "synthetic-flat", u, score=round(rng.uniform(1e-5, 1e-3), 9)) for u in range(users)]
    gpumode_synthetic.write_snapshot(
        root,
        {
            "leaderboards": board_rows,
            gpumode_synthetic.PER_SHAPE_CONFIG: rows,
            gpumode_synthetic.FLAT_CONFIG: flat,
        },
    )
    return boards * users + users


async def bench(snapshot: Path, uri: str, expected_runs: int, server_pid: int | None = None, run_import=import_sol) -> list[dict]:
    counter = WriteCounter()
    client = make_client(uri, event_listeners=[counter])
    db = client[f"bench_{uuid.uuid4().hex[:8]}"]
    await ensure_schema(db)
    rows = []
    try:
        for phase in TARGETS:
            counter.count, counter.by_command = 0, {}
            load_before = os.getloadavg()[0]
            client_cpu, server_cpu = time.process_time(), process_cpu_seconds(server_pid)
            report = await run_import(db, snapshot_dir=snapshot, console=Console(file=io.StringIO()))
            client_cpu = time.process_time() - client_cpu
            if server_cpu is not None:
                server_cpu = process_cpu_seconds(server_pid) - server_cpu
            assert report.parsed == expected_runs, (report.parsed, report.rejected[:3], report.skipped[:3])
            rows.append(
                {
                    "phase": phase,
                    "runs": report.parsed,
                    "new": report.new,
                    "unchanged": report.unchanged,
                    "seconds": report.seconds,
                    "runs/s": report.parsed / report.seconds,
                    "target": TARGETS[phase],
                    "writes": counter.count,
                    "writes by command": dict(counter.by_command),
                    "phases": dict(report.phase_seconds),
                    "client cpu": client_cpu,
                    "server cpu": server_cpu,
                    "load": f"{load_before:.1f} → {os.getloadavg()[0]:.1f}",
                }
            )
        groups = await db.comparison_groups.count_documents({})
        ranked = await db.runs.count_documents({"rank": {"$ne": None}})
        rows.append({"groups": groups, "ranked": ranked})
    finally:
        await client.drop_database(db.name)
        await client.close()
    return rows


def print_table(rows: list[dict], console: Console, title: str) -> None:
    table = Table(title=f"{title} import benchmark")
    columns = ("phase", "runs", "new", "unchanged", "seconds", "runs/s", "target", "ok", "write commands", "CPU s: loader / db", "load avg")
    for column in columns:
        table.add_column(column, justify="left" if column == "phase" else "right")
    for row in rows:
        if "phase" not in row:
            continue
        ok = row["runs/s"] >= row["target"] and (row["phase"] == "first import" or row["writes"] == 0)
        table.add_row(
            row["phase"],
            f"{row['runs']:,}",
            f"{row['new']:,}",
            f"{row['unchanged']:,}",
            f"{row['seconds']:.1f}",
            f"{row['runs/s']:,.0f}",
            f"≥ {row['target']:,}",
            "yes" if ok else "NO",
            f"{row['writes']:,}",
            f"{row['client cpu']:.1f} / " + ("-" if row["server cpu"] is None else f"{row['server cpu']:.1f}"),
            row["load"],
        )
    console.print(table)
    phases = Table(title="Where the time went (seconds)")
    phases.add_column("phase")
    names = sorted({name for row in rows if "phases" in row for name in row["phases"]})
    for name in names:
        phases.add_column(name, justify="right")
    for row in rows:
        if "phases" in row:
            phases.add_row(row["phase"], *(f"{row['phases'].get(name, 0):.1f}" for name in names))
    console.print(phases)
    for row in rows:
        if "phase" in row and row["writes"]:
            console.print(f"{row['phase']}: write commands by kind {row['writes by command']}")
        if "groups" in row:
            console.print(f"comparison groups: {row['groups']}, ranked runs: {row['ranked']:,}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=("both", "sol-execbench", "gpumode"), default="both")
    parser.add_argument("--kernels", type=int, default=235)
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--boards", type=int, default=50)
    parser.add_argument("--users", type=int, default=400)
    parser.add_argument("--keep", type=Path, help="write the synthetic snapshots under this directory and keep them")
    args = parser.parse_args()
    console = Console(width=160)
    sources = ("sol-execbench", "gpumode") if args.source == "both" else (args.source,)

    missed = []
    with tempfile.TemporaryDirectory(prefix="kernelindex-bench-") as temp:
        for source in sources:
            snapshot = (args.keep or Path(temp)) / f"synthetic-{source}"
            started = time.perf_counter()
            if source == "sol-execbench":
                runs, run_import, title = make_snapshot(snapshot, args.kernels, args.submissions), import_sol, "SOL-ExecBench"
                what = f"{args.kernels} kernels × {args.submissions} submissions"
            else:
                runs, run_import, title = make_gpumode_snapshot(snapshot, args.boards, args.users), import_gpumode, "GPU MODE KernelBot"
                what = f"{args.boards} per-shape boards × {args.users} users (+10 % second submissions) + a flat board"
            console.print(f"synthetic snapshot: {what} = {runs:,} runs in {snapshot} ({time.perf_counter() - started:.1f} s)")
            if os.environ.get("MONGODB_URI"):
                console.print("database: MONGODB_URI")
                rows = asyncio.run(bench(snapshot, os.environ["MONGODB_URI"], runs, run_import=run_import))
            else:
                with EmbeddedServer(Path(temp) / f"db-{source}") as server:
                    console.print(
                        f"database: embedded SecantusDB at {server.uri} (data in a temp dir); journaled writes: "
                        f"server --sync-on-commit, client write concern {DURABLE_WRITES}"
                    )
                    rows = asyncio.run(bench(snapshot, server.uri, runs, server.process.pid, run_import=run_import))
            print_table(rows, console, title)
            missed += [r for r in rows if "phase" in r and (r["runs/s"] < r["target"] or (r["phase"] != "first import" and r["writes"]))]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
