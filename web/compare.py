"""/compare?runs=A,B[,C]: two or three runs of the same workload, case by case."""

from __future__ import annotations

import math
import re

from starlette.requests import Request
from starlette.responses import Response

from resolvers import ids
from web import queries
from web.charts import case_chart, case_latency_ns
from web.graphql import GraphQLError
from web.render import api_failed, distinct_titles, page
from web.runs import axes_label

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def refuse(request: Request, message: str, status: int = 400) -> Response:
    return page(request, "error.html", {"error": message, "title": "Cannot compare these runs"}, status=status)


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def case_table(runs: list[dict]) -> tuple[list[dict], list[float | None]]:
    """Rows of (case, latency per run, ratio of each run to the first); geomean ratio per run
    over the cases every run measured."""
    per_run = [{c["index"]: case_latency_ns(c, r["protocol"]["primaryStatistic"]) for c in r["cases"]} for r in runs]
    axes = {c["index"]: axes_label(c["axes"]) for r in runs for c in r["cases"]}
    rows, logs = [], [[] for _ in runs]
    for index in sorted(axes):
        latencies = [points.get(index) for points in per_run]
        base = latencies[0]
        ratios = [lat / base if base and lat else None for lat in latencies]
        if all(latencies):
            for k, ratio in enumerate(ratios):
                logs[k].append(ratio)
        rows.append({"index": index, "axes": axes[index], "latencyNs": latencies, "ratio": ratios})
    return rows, [geomean(values) for values in logs]


async def compare_page(request: Request) -> Response:
    raw = request.query_params.get("runs", "")
    digests = [d.strip() for d in raw.split(",") if d.strip()]
    if not 2 <= len(digests) <= 3:
        return refuse(request, f"runs: give two or three run digests separated by commas (got {len(digests)})")
    bad = [d for d in digests if not DIGEST.match(d)]
    if bad:
        return refuse(request, f"runs: {bad[0]!r} is not a run digest (sha256:<64 hex digits>)")
    if len(set(digests)) != len(digests):
        return refuse(request, "runs: the same run is named twice")
    try:
        nodes = (await request.app.state.graphql.query(queries.COMPARE, {"ids": [ids.encode("Run", d) for d in digests]}))["nodes"]
    except GraphQLError as error:
        return api_failed(request, str(error))
    missing = [d for d, node in zip(digests, nodes) if not node]
    if missing:
        return refuse(request, f"runs: no run with digest {missing[0]}", status=404)
    workloads = {node["workload"]["digest"] for node in nodes}
    if len(workloads) > 1:
        named = "; ".join(f"{(n['title'] or n['name'])} ran {n['workload']['name']} ({n['workload']['caseCount']} cases)" for n in nodes)
        return refuse(request, f"runs: these runs measured different workloads, so their cases do not correspond: {named}", status=422)
    distinct_titles(nodes)
    rows, geomeans = case_table(nodes)
    labels = {row["index"]: f"case {row['index']}" for row in rows}
    series = [
        (f"{k + 1}: {n['label']}", {row["index"]: row["latencyNs"][k] for row in rows if row["latencyNs"][k]}) for k, n in enumerate(nodes)
    ]
    primary = nodes[0]["primaryMeasurement"]["valueNs"]
    context = {
        "runs": nodes,
        "cases": rows,
        "geomeanRatio": geomeans,
        "primaryRatio": [n["primaryMeasurement"]["valueNs"] / primary for n in nodes],
    }
    chart = case_chart(series, labels, "Per-case latency of the compared runs")
    return page(request, "compare.html", {**context, "chart": chart}, json_body=context)
