"""Benchmark: runPublished delivery to many WebSocket subscribers held by two server processes.

    python bench/subscriptions.py [--subscribers 1000] [--servers 2] [--runs 100] [--interval 0.1]
                                  [--clients 2] [--compression deflate|none] [--timeout 150]
                                  [--profile-server]

Starts SecantusDB (`secantusd-py`, in memory) on a free port unless MONGODB_URI is set (then it
uses a fresh database there and drops it at the end), starts `--servers` gateway processes
(uvicorn on 127.0.0.1, free ports, one database) and `--clients` client processes that open
`--subscribers` graphql-transport-ws connections between them, spread evenly over the servers,
each with one `runPublished { cursor run { digest name } }` subscription.

A warm-up run is published first and the benchmark waits until every subscriber has received it
(so every subscription is live). Then this process publishes `--runs` synthetic runs
(tests/factories.py) one at a time through `store.publish.publish` (as `kernelindex load` does),
`--interval` seconds apart, noting the wall-clock time just before each publishing call. Clients
note the wall-clock time of each receipt. Delivery latency = receipt − start of the publishing
call (same host, same clock). Prints delivered / expected, duplicates, and latency percentiles.
Loopback only; bounded by `--timeout`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _support import answers, close_subscribers, events, percentile, stop, subscribe, wait_ready  # noqa: E402  (bench/_support.py)

QUERY = "subscription { runPublished { cursor run { digest name } } }"
SERVE = """
import cProfile, os, pstats, signal, sys, uvicorn
from server.app import create_app
from server.settings import Settings
uri, database, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
profile = cProfile.Profile() if os.environ.get("KIX_PROFILE") else None
if profile:
    profile.enable()
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # uvicorn re-raises it after a graceful stop
try:
    uvicorn.run(create_app(uri, Settings(database=database, mongodb_uri=uri)), host="127.0.0.1", port=port,
                log_level="warning", ws_ping_interval=None)
except SystemExit:
    pass
if profile:
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(45)
    pstats.Stats(profile).sort_stats("cumulative").print_stats(60)
"""
WARMUP = "synthetic-warmup"


# ---------------------------------------------------------------- client process


async def client_main(urls: list[str], count: int, expect: int, out: Path, deadline_s: float, compression: str) -> None:
    receipts: list[tuple[int, str, float]] = []
    warm = 0
    done = 0
    all_warm = asyncio.Event()
    all_done = asyncio.Event()
    gate = asyncio.Semaphore(50)

    async def subscriber(index: int) -> None:
        nonlocal warm, done
        url = urls[index % len(urls)]
        async with gate:
            socket = await subscribe(url, QUERY, open_timeout=60, compression="deflate" if compression == "deflate" else None)
        got = 0
        warmed = False
        async with socket:
            async for now, data in events(socket):
                name = data["runPublished"]["run"]["name"]
                if name.startswith(WARMUP):
                    if not warmed:
                        warmed = True
                        warm += 1
                        if warm == count:
                            all_warm.set()
                    continue
                receipts.append((index, name, now))
                got += 1
                if got == expect:
                    done += 1
                    if done == count:
                        all_done.set()

    def report(task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is not None:
            print(f"subscriber failed: {task.exception()!r}", file=sys.stderr)

    tasks = [asyncio.create_task(subscriber(i)) for i in range(count)]
    for task in tasks:
        task.add_done_callback(report)
    print("SUBSCRIBED", flush=True)  # connections are being opened; the warm-up run tells when all are live
    try:
        await asyncio.wait_for(all_warm.wait(), deadline_s)
        print("WARM", flush=True)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(all_done.wait(), deadline_s)
    finally:
        await close_subscribers(tasks, receipts, out)


# ---------------------------------------------------------------- the benchmark


def _free_port() -> int:
    from store.embedded import free_port

    return free_port()


async def _wait_line(proc: subprocess.Popen, token: str, timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        line = await asyncio.wait_for(loop.run_in_executor(None, proc.stdout.readline), max(0.1, deadline - loop.time()))
        if not line:
            raise SystemExit(f"a client process exited before {token}")
        if line.strip() == token:
            return
    raise SystemExit(f"timed out waiting for {token}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc), 0 where unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


async def bench(args: argparse.Namespace, uri: str, db_pid: int | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    from store.client import make_client
    from store.publish import publish
    from store.schema import ensure_schema
    from tests import factories

    console = Console()
    database = f"bench_subs_{uuid.uuid4().hex[:8]}"
    client = make_client(uri)
    db = client[database]
    await ensure_schema(db)
    started = time.monotonic()
    servers: list[subprocess.Popen] = []
    clients: list[subprocess.Popen] = []
    workdir = Path(tempfile.mkdtemp(prefix="kix-bench-subs-"))
    try:
        ports = [_free_port() for _ in range(args.servers)]
        for port in ports:
            servers.append(
                subprocess.Popen(
                    [sys.executable, "-c", SERVE, uri, database, str(port)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    env={
                        **os.environ,
                        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
                        "KIX_PROFILE": "1" if args.profile_server and not servers else "",
                    },
                )
            )
        for port, proc in zip(ports, servers):
            wait_ready(proc, answers(f"http://127.0.0.1:{port}/healthz"), "a gateway process", timeout=60)
        urls = ",".join(f"ws://127.0.0.1:{p}/graphql" for p in ports)
        per_client = [args.subscribers // args.clients + (1 if i < args.subscribers % args.clients else 0) for i in range(args.clients)]
        outputs = [workdir / f"client-{i}.json" for i in range(args.clients)]
        for i, count in enumerate(per_client):
            clients.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        __file__,
                        "--client",
                        "--urls",
                        urls,
                        "--count",
                        str(count),
                        "--expect",
                        str(args.runs),
                        "--out",
                        str(outputs[i]),
                        "--timeout",
                        str(args.timeout),
                        "--compression",
                        args.compression,
                    ],
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
        for proc in clients:
            await _wait_line(proc, "SUBSCRIBED", 60)

        # Warm-up: publish until every subscriber has received one (subscriptions open asynchronously).
        warm = asyncio.ensure_future(asyncio.gather(*(_wait_line(proc, "WARM", args.timeout) for proc in clients)))
        connect_started = time.monotonic()
        n = 0
        while not warm.done():
            await publish(db, factories.run_bundle(f"warmup-{n}"))
            n += 1
            await asyncio.wait([warm], timeout=1.0)
        await warm
        console.print(f"{args.subscribers} subscribers live on {args.servers} servers after {time.monotonic() - connect_started:.1f} s")

        groups = {
            "servers": [p.pid for p in servers],
            "clients": [p.pid for p in clients],
            "database": [db_pid] if db_pid else [],
            "publisher": [os.getpid()],
        }
        cpu_before = {name: sum(cpu_seconds(pid) for pid in pids) for name, pids in groups.items()}
        published: dict[str, float] = {}
        publish_ms: list[float] = []
        for i in range(args.runs):
            bundle = factories.run_bundle(f"b{i:04d}", score=0.1 + i / (args.runs * 2), user=f"user{i % 7}")
            t0 = time.time()
            await publish(db, bundle)
            publish_ms.append((time.time() - t0) * 1000)
            published[bundle.run.metadata.name] = t0
            await asyncio.sleep(args.interval)
        publishing_s = sum(publish_ms) / 1000 + args.interval * args.runs
        cpu_used = {name: sum(cpu_seconds(pid) for pid in pids) - cpu_before[name] for name, pids in groups.items()}

        await asyncio.gather(*(_wait_line(proc, "DONE", args.timeout) for proc in clients))
        receipts = [(c, i, name, t) for c, path in enumerate(outputs) for i, name, t in json.loads(path.read_text())]
        first: dict[tuple[int, int, str], float] = {}
        for c, i, name, t in receipts:
            if name in published:
                first.setdefault((c, i, name), t)
        latencies = [(t - published[name]) * 1000 for (_, _, name), t in first.items()]
        expected = args.subscribers * args.runs
        delivered = len(latencies)
        duplicates = len(receipts) - delivered

        table = Table(
            title=f"runPublished: {args.subscribers} subscribers on {args.servers} processes, {args.runs} runs"
            f" (compression: {args.compression})"
        )
        table.add_column("metric")
        table.add_column("value", justify="right")
        table.add_row("delivered / expected", f"{delivered} / {expected} ({100 * delivered / expected:.2f} %)")
        table.add_row("pause between publications", f"{args.interval * 1000:.0f} ms")
        table.add_row("publishing call p50 / p99", f"{percentile(publish_ms, 50):.1f} / {percentile(publish_ms, 99):.1f} ms")
        table.add_row("runs published per second", f"{args.runs / publishing_s:.1f}")
        table.add_row("deliveries per second", f"{delivered / publishing_s:,.0f}")
        for q in (50, 90, 99):
            table.add_row(f"latency p{q}", f"{percentile(latencies, q):.1f} ms")
        table.add_row("latency max", f"{max(latencies, default=float('nan')):.1f} ms")
        table.add_row("duplicates", str(duplicates))
        table.add_row(
            "CPU s while publishing",
            ", ".join(f"{name} {cpu_used[name]:.1f}" for name in groups if groups[name]) + f" (of {publishing_s:.0f} s wall)",
        )
        table.add_row("target", "100 % delivered, p99 ≤ 250 ms")
        console.print(table)
        ok = delivered == expected and duplicates == 0 and percentile(latencies, 99) <= 250
        console.print(f"[{'green' if ok else 'red'}]{'PASS' if ok else 'MISS'}[/] in {time.monotonic() - started:.0f} s")
        return 0 if ok else 1
    finally:
        stop(*clients, *servers, timeout=20)
        if args.profile_server and servers:
            print(servers[0].stdout.read())
        await client.drop_database(database)
        await client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=2, help="client processes holding the connections")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between publications")
    parser.add_argument("--timeout", type=float, default=150)
    parser.add_argument(
        "--compression",
        choices=["deflate", "none"],
        default="deflate",
        help="permessage-deflate on the clients' connections (browsers and `websockets` ask for it by default)",
    )
    parser.add_argument("--profile-server", action="store_true", help="run the first server under cProfile; print where its time went")
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--urls", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        asyncio.run(client_main(args.urls.split(","), args.count, args.expect, args.out, args.timeout, args.compression))
        return 0
    if os.environ.get("MONGODB_URI"):
        return asyncio.run(bench(args, os.environ["MONGODB_URI"]))
    from store.embedded import EmbeddedServer

    with EmbeddedServer(":memory:") as server:
        return asyncio.run(bench(args, server.uri, server.process.pid))


if __name__ == "__main__":
    sys.exit(main())
