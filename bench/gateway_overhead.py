"""Benchmark: what Hive Gateway adds to a request, by query planner and by plugin, in one run.

    python bench/gateway_overhead.py [--requests 300] [--query dossier|spanning] [--variants ...]

Starts SecantusDB (in memory, unless MONGODB_URI is set) and the stack of gateway/stack.py on it
with the bundled data (subgraphs, web process, Hive Gateway as `serve` configures it), then more
Hive Gateway processes on the same supergraph and subgraphs, one per variant:

- `plain`: the gateway as `kernelindex serve` runs it (the default JavaScript query planner);
- `router`: the same config with Hive Router's Rust query planner (`@graphql-hive/router-runtime`,
  switched on by Hive Gateway's own HIVE_ROUTER_RUNTIME variable);
- `-NAME`: `plain` with one of our plugins switched off (KERNELINDEX_GATEWAY_PLUGINS_OFF, read by
  gateway/gateway.config.mjs for this benchmark only; see its PLUGINS table for the names).

The query is sent `--requests` times to each target in turn (the registry subgraph straight, then
each gateway), one request at a time, so that every target sees the same machine load; printed:
p50 and p90 of each, and its p50 ÷ the subgraph's (the target: plain ≤ 1.25×). The machine's load
average closes the table: on a shared 2-core machine the ratios are steadier than the times.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _support import answers, closing_line, database_server, load_average, percentile, stop, wait_ready  # noqa: E402

QUERIES = {
    # The README's seed query: one subgraph, nested objects through DataLoaders.
    "dossier": """{ runByExternalId(source: "sol-execbench", externalId: "37369") {
        title primaryMeasurement { display statistic } rank group { size leader { title } }
        correctness { statement } evidenceLevel
        protocol { harness { name version } } environment { gpu { display } } citation { text } } }""",
    # Both subgraphs: a definition (registry), its jobs (benchmarks), each job's run (registry).
    "spanning": """{ definition(name: "kernelindex-051-qkv-qknorm-backward") { name
        comparisonGroups { leader { title } }
        jobs(first: 5) { edges { node { state run { title evidenceLevel } } } } } }""",
}
DEFAULT_VARIANTS = ["plain", "router", "-cost", "-body", "-auth", "-web", "-limits", "-deadline"]
TARGET = 1.25


def start_stack(uri: str):
    from gateway.stack import Stack
    from server.settings import Settings
    from store.embedded import free_port

    stack = Stack(port=free_port(), replicas=1, load_data=True, settings=Settings(mongodb_uri=uri))
    try:
        stack.start()
    except BaseException:
        stack.stop()
        raise
    return stack


def write_supergraph(stack, path: Path) -> Path:
    """The stack's supergraph, composed again from its subgraphs' SDL (as the stack composes it)."""
    import httpx

    from gateway.stack import SUBGRAPHS, compose_supergraph

    services = []
    for name in SUBGRAPHS:
        url = stack.subgraph_urls[name]
        sdl = httpx.post(url, json={"query": "{ _service { sdl } }"}, timeout=30).json()["data"]["_service"]["sdl"]
        services.append((name, url, sdl))
    path.write_text(compose_supergraph(services))
    return path


def gateway_variant(stack, supergraph: Path, variant: str) -> tuple[subprocess.Popen, str]:
    """Another Hive Gateway on the stack's subgraphs, configured as `variant` says."""
    from gateway.stack import GATEWAY_DIR, HIVE_GATEWAY
    from store.embedded import free_port

    port = free_port()
    # Pages are not asked for here; the forwarder is given the stack's gateway to point at.
    env = {**os.environ, "KERNELINDEX_WEB_URL": f"http://127.0.0.1:{stack.port}", "NO_COLOR": "1"}
    env.pop("HIVE_ROUTER_RUNTIME", None)
    env.pop("KERNELINDEX_GATEWAY_PLUGINS_OFF", None)
    if variant == "router":
        env["HIVE_ROUTER_RUNTIME"] = "1"
    elif variant.startswith("-"):
        env["KERNELINDEX_GATEWAY_PLUGINS_OFF"] = variant[1:]
    elif variant != "plain":
        raise SystemExit(f"--variants: unknown variant {variant!r} (plain, router, or -PLUGIN)")
    argv = [str(HIVE_GATEWAY), "supergraph", str(supergraph), "--config-path", str(GATEWAY_DIR / "gateway.config.mjs")]
    process = subprocess.Popen(
        [*argv, "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    wait_ready(process, answers(f"http://127.0.0.1:{port}/readiness"), f"Hive Gateway ({variant})", 120)
    return process, f"http://127.0.0.1:{port}/graphql"


async def interleaved(urls: dict[str, str], query: str, n: int) -> dict[str, list[float]]:
    """`n` requests to each URL in turn, one at a time, after a warm-up; latencies in ms."""
    import httpx

    times: dict[str, list[float]] = {name: [] for name in urls}
    async with httpx.AsyncClient(timeout=60) as client:
        for name, url in urls.items():  # connections, caches, each gateway's plan
            for _ in range(20):
                body = (await client.post(url, json={"query": query})).json()
                if "errors" in body:
                    raise SystemExit(f"{name}: {body['errors'][:1]}")
        for _ in range(n):
            for name, url in urls.items():
                start = time.perf_counter()
                response = await client.post(url, json={"query": query})
                times[name].append((time.perf_counter() - start) * 1000)
                if response.status_code != 200 or "errors" in response.json():
                    raise SystemExit(f"{name}: HTTP {response.status_code} {response.text[:200]}")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--query", choices=sorted(QUERIES), default="dossier")
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help="comma-separated: plain, router, -PLUGIN")
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]

    from rich.console import Console
    from rich.table import Table

    console = Console()
    started, load_before = time.monotonic(), load_average()
    with database_server("kernelindex-bench-overhead-", console.print) as uri:
        stack = start_stack(uri)
        gateways: list[subprocess.Popen] = []
        try:
            supergraph = write_supergraph(stack, Path(tempfile.mkdtemp(prefix="kernelindex-bench-overhead-")) / "supergraph.graphql")
            urls = {"registry subgraph (direct)": stack.subgraph_urls["registry"]}
            for variant in variants:
                process, url = gateway_variant(stack, supergraph, variant)
                gateways.append(process)
                urls[f"gateway {variant}"] = url
            times = asyncio.run(interleaved(urls, QUERIES[args.query], args.requests))
        finally:
            stop(*gateways)
            stack.stop()

    direct = percentile(times["registry subgraph (direct)"], 50)
    table = Table(title=f"{args.query} query, {args.requests} requests per target, one at a time, interleaved")
    for column in ("target", "p50 ms", "p90 ms", "÷ direct (p50)"):
        table.add_column(column, justify="left" if column == "target" else "right")
    for name, values in times.items():
        p50 = percentile(values, 50)
        table.add_row(name, f"{p50:.2f}", f"{percentile(values, 90):.2f}", f"{p50 / direct:.2f}×")
    console.print(table)
    plain = percentile(times.get("gateway plain", [float("nan")]), 50) / direct
    console.print(f"target: the gateway as served ≤ {TARGET}× the subgraph straight: {plain:.2f}×")
    console.print(closing_line(started, load_before))
    return 0 if plain <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
