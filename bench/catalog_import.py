"""Benchmark: `import kernelindex-catalog` of the bundled export (7,857 runs, 40,795 rows), and
`serve`'s first start (catalog imported) and restart (nothing imported), side by side.

    python bench/catalog_import.py [--serve] [--export FILE]

Starts SecantusDB (`secantusd-py`, `--sync-on-commit`) on a temporary directory and a free port
unless MONGODB_URI is set, then imports the export twice through `run_import`: into an empty
database, and again unchanged (its write commands are counted with PyMongo command monitoring:
there must be none). Prints runs per second against the target (≥ 2,000 runs/s, journaled
writes), where the time went, CPU seconds of this process and of the database server, and the
load average (the 2-core machine is shared: CPU seconds are the steadier figure). With
`--serve`, also times `kernelindex serve` from a fresh KERNELINDEX_HOME until it prints that it is
ready (target ≤ 30 s) and its restart on the same home (target ≤ 5 s).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _support import WriteCounter, process_cpu_seconds  # noqa: E402  (bench/_support.py)

from gateway.stack import READY  # noqa: E402
from loaders.pipeline import run_import as _run_import  # noqa: E402
from store.client import DURABLE_WRITES, make_client  # noqa: E402
from store.embedded import EmbeddedServer, free_port  # noqa: E402
from store.schema import ensure_schema  # noqa: E402

BUNDLED = Path(__file__).resolve().parents[1] / "data" / "kernelindex-catalog" / "catalog-2026-08-16-0022af0b.jsonl.zst"
TARGETS = {"first import": 2_000, "unchanged re-import": 2_000}
SERVE_TARGETS = {"first serve (catalog imported)": 30.0, "restart (nothing imported)": 5.0}


async def bench(export: Path, uri: str, server_pid: int | None) -> list[dict]:
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
            report = await _run_import("kernelindex-catalog", db, target=str(export), console=Console(file=io.StringIO()))
            client_cpu = time.process_time() - client_cpu
            if server_cpu is not None:
                server_cpu = process_cpu_seconds(server_pid) - server_cpu
            out = report.outcome
            rows.append(
                {
                    "phase": phase,
                    "runs": report.runs,
                    "new": out.runs_new,
                    "unchanged": out.runs_unchanged,
                    "seconds": report.seconds,
                    "runs/s": report.runs / report.seconds,
                    "target": TARGETS[phase],
                    "writes": counter.count,
                    "writes by command": dict(counter.by_command),
                    "phases": dict(report.phase_seconds),
                    "client cpu": client_cpu,
                    "server cpu": server_cpu,
                    "load": f"{load_before:.1f} → {os.getloadavg()[0]:.1f}",
                }
            )
    finally:
        await client.drop_database(db.name)
        await client.close()
    return rows


def time_serve(home: Path) -> float:
    """Seconds from `kernelindex serve` to its ready line, then stop it (SIGTERM)."""
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if k != "MONGODB_URI"}, "KERNELINDEX_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    kernelindex = str(Path(sys.executable).with_name("kernelindex"))
    started = time.perf_counter()
    process = subprocess.Popen(
        [kernelindex, "serve", "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        for line in process.stdout:
            if line.startswith("bundled data"):
                print(f"  {home.name}: {line.rstrip()}", file=sys.stderr)  # where a start's time goes
            if READY in line:
                return time.perf_counter() - started
        raise RuntimeError(f"serve exited with {process.wait()}")
    finally:
        process.terminate()
        process.wait(timeout=60)


def print_tables(rows: list[dict], serve: list[tuple[str, float, str]], console: Console) -> None:
    table = Table(title="import kernelindex-catalog (bundled export, journaled writes)")
    columns = ("phase", "runs", "new", "unchanged", "seconds", "runs/s", "target", "ok", "write commands", "CPU s: loader / db", "load avg")
    for column in columns:
        table.add_column(column, justify="left" if column == "phase" else "right")
    for row in rows:
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
    for phase, seconds, load in serve:
        target = SERVE_TARGETS[phase]
        table.add_row(phase, "", "", "", f"{seconds:.1f}", "", f"≤ {target:g} s", "yes" if seconds <= target else "NO", "", "", load)
    console.print(table)
    phases = Table(title="Where the import's time went (seconds)")
    phases.add_column("phase")
    names = list(dict.fromkeys(name for row in rows for name in row["phases"]))
    for name in names:
        phases.add_column(name, justify="right")
    for row in rows:
        phases.add_row(row["phase"], *(f"{row['phases'].get(name, 0):.2f}" for name in names))
    console.print(phases)
    for row in rows:
        if row["writes"]:
            console.print(f"{row['phase']}: write commands by kind {row['writes by command']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export", type=Path, default=BUNDLED)
    parser.add_argument("--serve", action="store_true", help="also time serve's first start and its restart")
    args = parser.parse_args()
    console = Console(width=170)
    with tempfile.TemporaryDirectory(prefix="kernelindex-bench-") as temp:
        if os.environ.get("MONGODB_URI"):
            console.print("database: MONGODB_URI")
            rows = asyncio.run(bench(args.export, os.environ["MONGODB_URI"], None))
        else:
            with EmbeddedServer(Path(temp) / "db") as server:
                console.print(
                    f"database: embedded SecantusDB at {server.uri} (data in a temp dir); journaled writes: "
                    f"server --sync-on-commit, client write concern {DURABLE_WRITES}"
                )
                rows = asyncio.run(bench(args.export, server.uri, server.process.pid))
        serve = []
        if args.serve:
            home = Path(temp) / "home"
            for phase in SERVE_TARGETS:
                load = os.getloadavg()[0]
                seconds = time_serve(home)
                serve.append((phase, seconds, f"{load:.1f} → {os.getloadavg()[0]:.1f}"))
    print_tables(rows, serve, console)
    missed = [r for r in rows if r["runs/s"] < r["target"] or (r["phase"] != "first import" and r["writes"])]
    missed += [s for s in serve if s[1] > SERVE_TARGETS[s[0]]]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
