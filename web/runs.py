"""/runs/{digest}: the run dossier. Browsers get the page; other clients the canonical manifest
(the permalink's contract: citations point here)."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import Response

from resolvers import ids  # the API's own ID codec: a run's ID is derived from its digest
from web import queries
from web.charts import case_chart, case_latency_ns
from web.graphql import GraphQLError
from web.render import api_failed, not_found, page


def axes_label(axes: list[dict]) -> str:
    return " ".join(f"{a.get('key', a.get('name'))}={a['value']}" for a in axes) or "—"


async def run_page(request: Request) -> Response:
    digest = request.path_params["digest"]
    try:
        data = await request.app.state.graphql.query(queries.DOSSIER, {"id": ids.encode("Run", digest)})
    except GraphQLError as error:
        return api_failed(request, str(error))
    run = data["run"]
    if run is None:
        return not_found(request, "run", f"No run with digest {digest}.")
    statistic = run["protocol"]["primaryStatistic"]
    labels = {c["index"]: f"case {c['index']}" for c in run["cases"]}
    points = {c["index"]: v for c in run["cases"] if (v := case_latency_ns(c, statistic)) is not None}
    leader = (run.get("group") or {}).get("leader")
    context = {
        "run": run,
        "manifest_json": json.dumps(run["manifest"], indent=2, ensure_ascii=False),
        "chart": case_chart([(run["title"] or run["name"], points)], labels, f"Per-case latency ({statistic})"),
        "compare_url": f"/compare?runs={digest},{leader['digest']}" if leader and leader["digest"] != digest else None,
        "axes_label": axes_label,
    }
    return page(request, "run.html", context, json_body=run["manifest"])
