"""Benchmark: what Hive Gateway adds to a request, by query planner and by plugin, and its floor.

    python bench/gateway_overhead.py [--requests 300] [--query dossier|spanning] [--variants ...]

Starts SecantusDB (in memory, unless MONGODB_URI is set) and the stack of gateway/stack.py on it
with the bundled data (subgraphs, web process, Hive Gateway as `serve` configures it), then more
Hive Gateway processes on the same supergraph and subgraphs, one per variant:

- `router`: the gateway as `kernelindex serve` runs it: Hive Router's Rust query planner
  (`@graphql-hive/router-runtime`, switched on by Hive Gateway's own HIVE_ROUTER_RUNTIME), every
  plugin of ours;
- `plain`: the same with Hive Gateway's JavaScript query planner;
- `-NAME`: `router` with one of our plugins switched off (KERNELINDEX_GATEWAY_PLUGINS_OFF, read by
  gateway/gateway.config.mjs for this benchmark only): cost (demand control), body (body limit),
  auth (Authorization pass-through), web (the page forwarder), armor (graphql-armor's token, depth,
  alias and directive limits), counts (field and fragment counts), deadline, errors (error codes);
- `bare`: `router` with all of them off: Hive Gateway alone;
- `+NAME`: `router` with a setting `serve` might use (TUNINGS: `semispace`, a larger young
  generation for Node's garbage collector).

The floor, in the same run: a bare Node HTTP hop to the subgraph (bench/loopback_proxy.mjs, no
GraphQL work), and a tiny query (`{ viewer { name } }`: no key, so no database read) straight, through
the hop, and through `router` and `bare`; `{ __typename }`, which Hive Gateway answers itself.

Every (target, query) pair is sent `--requests` times in turn, one request at a time, so that every
target sees the same machine load; printed: p50 and p90 of each, and its p50 ÷ the same query
straight to the subgraph (the target: `router` ≤ 1.25× on the dossier). The machine's load average
closes the table: on a shared 2-core machine the ratios are steadier than the times.
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
# The floor: a query the subgraph answers without the database (no key: viewer is null), and
# one Hive Gateway answers itself.
TINY = "{ viewer { name } }"
TYPENAME = "{ __typename }"
PLUGINS = ["cost", "body", "auth", "web", "armor", "counts", "deadline", "errors"]
# Settings of Node or Hive Gateway that `serve` might use, each tried on `router` as `+NAME`.
# (Hive Gateway's --jit is not one: with the Rust planner it answers null without asking the
# subgraphs, e.g. `runByExternalId: null` for the seed record.)
TUNINGS = {
    "semispace": {"NODE_OPTIONS": "--max-semi-space-size=64"},  # fewer young-generation GCs (9 % of its CPU)
}
DEFAULT_VARIANTS = ["router", "plain", *(f"-{name}" for name in PLUGINS), "bare", *(f"+{name}" for name in TUNINGS)]
DIRECT = "subgraph (direct)"
HOP = "bare Node hop"
SERVED = "gateway router"
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


def variant_env(variant: str) -> dict[str, str]:
    """The environment that configures Hive Gateway as `variant`."""
    env = {k: v for k, v in os.environ.items() if k not in ("HIVE_ROUTER_RUNTIME", "KERNELINDEX_GATEWAY_PLUGINS_OFF")}
    env["HIVE_ROUTER_RUNTIME"] = "0" if variant == "plain" else "1"
    if variant == "bare":
        env["KERNELINDEX_GATEWAY_PLUGINS_OFF"] = ",".join(PLUGINS)
    elif variant.startswith("-"):
        if variant[1:] not in PLUGINS:
            raise SystemExit(f"--variants: unknown plugin {variant[1:]!r} (one of {', '.join(PLUGINS)})")
        env["KERNELINDEX_GATEWAY_PLUGINS_OFF"] = variant[1:]
    elif variant.startswith("+"):
        if variant[1:] not in TUNINGS:
            raise SystemExit(f"--variants: unknown tuning {variant[1:]!r} (one of {', '.join(TUNINGS)})")
        env.update(TUNINGS[variant[1:]])
    elif variant not in ("plain", "router"):
        raise SystemExit(f"--variants: unknown variant {variant!r} (router, plain, bare, -PLUGIN or +TUNING)")
    return env


def gateway_variant(stack, supergraph: Path, variant: str) -> tuple[subprocess.Popen, str]:
    """Another Hive Gateway on the stack's subgraphs, configured as `variant` says."""
    from gateway.stack import GATEWAY_DIR, HIVE_GATEWAY
    from store.embedded import free_port

    port = free_port()
    # Pages are not asked for here; the forwarder is given the stack's gateway to point at.
    env = {**variant_env(variant), "KERNELINDEX_WEB_URL": f"http://127.0.0.1:{stack.port}", "NO_COLOR": "1"}
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


def loopback_hop(upstream: str) -> tuple[subprocess.Popen, str]:
    """bench/loopback_proxy.mjs in front of `upstream`: the cost of a Node HTTP hop alone."""
    import httpx

    from store.embedded import free_port

    port = free_port()
    script = Path(__file__).resolve().parent / "loopback_proxy.mjs"
    process = subprocess.Popen(["node", str(script), str(port), upstream], stdout=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}/graphql"
    wait_ready(process, lambda: httpx.post(url, json={"query": TINY}, timeout=1).status_code == 200, "the loopback hop", 30)
    return process, url


async def interleaved(pairs: list[tuple[str, str, str]], n: int) -> dict[tuple[str, str], list[float]]:
    """`n` requests for each (target, url, query) in turn, one at a time, after a warm-up;
    latencies in ms by (target, query name)."""
    import httpx

    names = {query: name for name, query in [*QUERIES.items(), ("tiny", TINY), ("__typename", TYPENAME)]}
    times: dict[tuple[str, str], list[float]] = {(target, names[query]): [] for target, _, query in pairs}
    async with httpx.AsyncClient(timeout=60) as client:
        for target, url, query in pairs:  # connections, caches, each gateway's plan
            for _ in range(20):
                body = (await client.post(url, json={"query": query})).json()
                if "errors" in body:
                    raise SystemExit(f"{target}: {body['errors'][:1]}")
        for _ in range(n):
            for target, url, query in pairs:
                start = time.perf_counter()
                response = await client.post(url, json={"query": query})
                times[(target, names[query])].append((time.perf_counter() - start) * 1000)
                if response.status_code != 200 or "errors" in response.json():
                    raise SystemExit(f"{target}: HTTP {response.status_code} {response.text[:200]}")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--query", choices=sorted(QUERIES), default="dossier")
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help="comma-separated: router, plain, bare, -PLUGIN, +TUNING")
    parser.add_argument("--no-floor", action="store_true", help="leave out the hop, the tiny query and __typename")
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    for variant in variants:
        variant_env(variant)  # an unknown one is refused before anything starts

    from rich.console import Console
    from rich.table import Table

    console = Console()
    # A home of its own: the stack's address files and supergraph never touch a running `serve`'s.
    os.environ["KERNELINDEX_HOME"] = tempfile.mkdtemp(prefix="kernelindex-bench-overhead-home-")
    started, load_before = time.perf_counter(), load_average()
    query = QUERIES[args.query]
    with database_server("kernelindex-bench-overhead-", console.print) as uri:
        stack = start_stack(uri)
        processes: list[subprocess.Popen] = []
        try:
            supergraph = write_supergraph(stack, Path(tempfile.mkdtemp(prefix="kernelindex-bench-overhead-")) / "supergraph.graphql")
            direct = stack.subgraph_urls["registry"]
            pairs = [(DIRECT, direct, query)]
            gateways = {}
            for variant in variants:
                process, gateways[variant] = gateway_variant(stack, supergraph, variant)
                processes.append(process)
                pairs.append((f"gateway {variant}", gateways[variant], query))
            if not args.no_floor:
                process, hop = loopback_hop(direct)
                processes.append(process)
                pairs += [(HOP, hop, query), (DIRECT, direct, TINY), (HOP, hop, TINY)]
                for variant in ("router", "bare"):
                    if variant in gateways:
                        pairs += [(f"gateway {variant}", gateways[variant], TINY), (f"gateway {variant}", gateways[variant], TYPENAME)]
            times = asyncio.run(interleaved(pairs, args.requests))
        finally:
            stop(*processes)
            stack.stop()

    table = Table(title=f"{args.requests} requests per row, one at a time, interleaved")
    for column in ("query", "target", "p50 ms", "p90 ms", "÷ direct (p50)"):
        table.add_column(column, justify="left" if column in ("query", "target") else "right")
    for (target, name), values in times.items():
        p50 = percentile(values, 50)
        baseline = times.get((DIRECT, name))
        ratio = f"{p50 / percentile(baseline, 50):.2f}×" if baseline else ""
        table.add_row(name, target, f"{p50:.2f}", f"{percentile(values, 90):.2f}", ratio)
    console.print(table)
    served = percentile(times.get((SERVED, args.query), [float("nan")]), 50) / percentile(times[(DIRECT, args.query)], 50)
    console.print(f"target: the gateway as served ≤ {TARGET}× the subgraph straight ({args.query}): {served:.2f}×")
    console.print(closing_line(started, load_before))
    return 0 if served <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
