"""Benchmark: `import kernelindex-catalog` of the bundled export (7,857 runs, 40,795 rows), and
`serve`'s first start (catalog imported) and restart (nothing imported), side by side.

    python bench/catalog_import.py [--serve] [--export FILE] [--baseline DIR]

Starts SecantusDB (`secantusd-py`, `--sync-on-commit`) on a temporary directory and a free port
unless MONGODB_URI is set, then imports the export twice through `run_import`: into an empty
database, and again unchanged (its write commands are counted with PyMongo command monitoring:
there must be none). Prints runs per second against the target (≥ 2,000 runs/s, journaled
writes), where the time went, CPU seconds of this process and of the database server, and the
load average (the 2-core machine is shared: CPU seconds are the steadier figure). With
`--serve`, also times `kernelindex serve` from a fresh KERNELINDEX_HOME until it prints that it is
ready (target ≤ 30 s) and its restart on the same home (target ≤ 5 s).

Two more rows say what the database alone takes (the floor): `raw insert_many, every document`
writes the very documents the first import stored (every collection, read back from it) into an
empty database with the same validators, indexes and write concern, in transactions of at most
RUNS_PER_TRANSACTION documents, with no other work; `raw insert_many, runs only` the same for the
7,857 run documents alone. With `--baseline DIR` (a checkout of other code, e.g. `git worktree
add /tmp/base main`), DIR's importer makes a first import into its own empty database on the same
server first, so before and after are one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from pymongo.errors import PyMongoError
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _support import WriteCounter, process_cpu_seconds  # noqa: E402  (bench/_support.py)

from gateway.stack import READY  # noqa: E402
from loaders.pipeline import run_import as _run_import  # noqa: E402
from store.catalog import RUNS_PER_TRANSACTION  # noqa: E402
from store.client import DURABLE_WRITES, make_client  # noqa: E402
from store.embedded import EmbeddedServer, free_port  # noqa: E402
from store.schema import ensure_schema  # noqa: E402

BUNDLED = Path(__file__).resolve().parents[1] / "data" / "kernelindex-catalog" / "catalog-2026-08-16-0022af0b.jsonl.zst"
TARGETS = {"first import": 2_000, "unchanged re-import": 2_000}
SERVE_TARGETS = {"first serve (catalog imported)": 30.0, "restart (nothing imported)": 5.0}


async def bench(export: Path, uri: str, server_pid: int | None, baseline: Path | None) -> list[dict]:
    rows = [baseline_import(baseline, export, uri, server_pid)] if baseline else []
    counter = WriteCounter()
    client = make_client(uri, event_listeners=[counter])
    db = client[f"bench_{uuid.uuid4().hex[:8]}"]
    await ensure_schema(db)
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
        rows += await floor(uri, server_pid, db.name, rows[-1]["runs"])
    finally:
        with contextlib.suppress(PyMongoError):  # a dead server's error is the one to see
            await client.drop_database(db.name)
        await client.close()
    return rows


BASELINE = """
import asyncio, io, json, sys, time
sys.path.insert(0, sys.argv[1])
from rich.console import Console
from loaders.pipeline import run_import
from store.client import make_client
from store.schema import ensure_schema
async def main():
    client = make_client(sys.argv[2])
    db = client[sys.argv[3]]
    await ensure_schema(db)
    report = await run_import("kernelindex-catalog", db, target=sys.argv[4], console=Console(file=io.StringIO()))
    print(json.dumps({"runs": report.runs, "new": report.outcome.runs_new, "seconds": report.seconds, "phases": report.phase_seconds}))
    await client.drop_database(db.name)
    await client.close()
asyncio.run(main())
"""


def baseline_import(code: Path, export: Path, uri: str, server_pid: int | None) -> dict:
    """A first import by another checkout's importer (a child process on its code), same server."""
    load_before = os.getloadavg()[0]
    server_cpu = process_cpu_seconds(server_pid)
    before = os.times()
    done = subprocess.run(
        [sys.executable, "-c", BASELINE, str(code), uri, f"bench_base_{uuid.uuid4().hex[:8]}", str(export)],
        cwd=code,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    after = os.times()
    return {
        "phase": f"first import, baseline ({code.name})",
        "runs": result["runs"],
        "new": result["new"],
        "unchanged": result["runs"] - result["new"],
        "seconds": result["seconds"],
        "runs/s": result["runs"] / result["seconds"],
        "target": TARGETS["first import"],
        "writes": None,
        "writes by command": {},
        "phases": result["phases"],
        "client cpu": after.children_user + after.children_system - before.children_user - before.children_system,
        "server cpu": None if server_cpu is None else process_cpu_seconds(server_pid) - server_cpu,
        "load": f"{load_before:.1f} → {os.getloadavg()[0]:.1f}",
    }


async def floor(uri: str, server_pid: int | None, source: str, runs: int) -> list[dict]:
    """The documents the first import stored (database `source`), written again by plain
    insert_many into empty databases with the same schema and write concern: every collection,
    then the runs alone."""
    client = make_client(uri)
    rows = []
    try:
        stored = client[source]
        names = [n for n in await stored.list_collection_names() if n not in ("counters", "catalog_imports")]
        documents = {name: await stored[name].find({}).to_list() for name in names}
        for label, collections in (("raw insert_many, runs only", ["runs"]), ("raw insert_many, every document", names)):
            db = client[f"bench_floor_{uuid.uuid4().hex[:8]}"]
            await ensure_schema(db)
            count = sum(len(documents[name]) for name in collections)
            load_before = os.getloadavg()[0]
            server_cpu = process_cpu_seconds(server_pid)
            started = time.perf_counter()
            try:
                async with client.start_session() as session:
                    for name in collections:
                        docs = documents[name]
                        for start in range(0, len(docs), RUNS_PER_TRANSACTION):
                            batch = docs[start : start + RUNS_PER_TRANSACTION]

                            async def write(session, db=db, name=name, batch=batch):
                                await db[name].insert_many(batch, ordered=False, session=session)

                            await session.with_transaction(write)
            except PyMongoError as error:  # said in the table's stead, the rows so far kept
                print(f"{label}: {type(error).__name__}: {error}", file=sys.stderr)
                break
            seconds = time.perf_counter() - started
            rows.append(
                {
                    "phase": f"{label} ({count:,} documents)",
                    "runs": runs,
                    "new": runs,
                    "unchanged": 0,
                    "seconds": seconds,
                    "runs/s": runs / seconds,
                    "target": TARGETS["first import"],
                    "writes": None,
                    "writes by command": {},
                    "phases": {},
                    "client cpu": None,
                    "server cpu": None if server_cpu is None else process_cpu_seconds(server_pid) - server_cpu,
                    "load": f"{load_before:.1f} → {os.getloadavg()[0]:.1f}",
                }
            )
            await client.drop_database(db.name)
    finally:
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
        ok = row["runs/s"] >= row["target"] and (row["phase"] != "unchanged re-import" or row["writes"] == 0)
        table.add_row(
            row["phase"],
            f"{row['runs']:,}",
            f"{row['new']:,}",
            f"{row['unchanged']:,}",
            f"{row['seconds']:.1f}",
            f"{row['runs/s']:,.0f}",
            f"≥ {row['target']:,}",
            "yes" if ok else "NO",
            "-" if row["writes"] is None else f"{row['writes']:,}",
            ("-" if row["client cpu"] is None else f"{row['client cpu']:.1f}")
            + " / "
            + ("-" if row["server cpu"] is None else f"{row['server cpu']:.1f}"),
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
        if row["phases"]:
            phases.add_row(row["phase"], *(f"{row['phases'].get(name, 0):.2f}" for name in names))
    console.print(phases)
    for row in rows:
        if row["writes"]:
            console.print(f"{row['phase']}: write commands by kind {row['writes by command']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export", type=Path, default=BUNDLED)
    parser.add_argument("--serve", action="store_true", help="also time serve's first start and its restart")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="a checkout whose importer makes a first import first (before/after)")
    args = parser.parse_args()
    console = Console(width=170)
    with tempfile.TemporaryDirectory(prefix="kernelindex-bench-") as temp:
        if os.environ.get("MONGODB_URI"):
            console.print("database: MONGODB_URI")
            rows = asyncio.run(bench(args.export, os.environ["MONGODB_URI"], None, args.baseline))
        else:
            with EmbeddedServer(Path(temp) / "db", log_path=Path(temp) / "secantusd.log") as server:
                console.print(
                    f"database: embedded SecantusDB at {server.uri} (data in a temp dir); journaled writes: "
                    f"server --sync-on-commit, client write concern {DURABLE_WRITES}"
                )
                try:
                    rows = asyncio.run(bench(args.export, server.uri, server.process.pid, args.baseline))
                except Exception:
                    print((Path(temp) / "secantusd.log").read_text()[-3000:], file=sys.stderr)  # why the server stopped answering
                    raise
        serve = []
        if args.serve:
            home = Path(temp) / "home"
            for phase in SERVE_TARGETS:
                load = os.getloadavg()[0]
                seconds = time_serve(home)
                serve.append((phase, seconds, f"{load:.1f} → {os.getloadavg()[0]:.1f}"))
    print_tables(rows, serve, console)
    missed = [r for r in rows if r["phase"] in TARGETS and (r["runs/s"] < r["target"] or (r["phase"] != "first import" and r["writes"]))]
    missed += [s for s in serve if s[1] > SERVE_TARGETS[s[0]]]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
