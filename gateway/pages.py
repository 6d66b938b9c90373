"""Web pages: the run dossier (what the seed record page shows), rendered from the same GraphQL
query any frontend would send, so the page and the API cannot disagree."""

from __future__ import annotations

import json
from pathlib import Path
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from resolvers.context import Context
from resolvers.dataloaders import Loaders

TEMPLATES = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"), autoescape=select_autoescape(["html"]))

DOSSIER_QUERY = """query($digest: ID!) { run(id: $digest) {
  id digest title name status current observedAt evidenceLevel rank
  labels { key value }
  primaryMeasurement { statistic valueNs display }
  measurements { statistic display }
  group { title size rankedSize leader { digest title } sourceNative rankRule { metric order } }
  sourceNative { sourceTitle benchmark externalReference solExecBench { summary } metrics { name value text } }
  identity { comparisonKey externalReference sourceTitle protocolDigest workloadDigest environmentDigest implementationDigest }
  implementation { name project revision code { repository path digest } }
  correctness { statement policy }
  workload { description caseCount comparator aggregation definition { name } }
  protocol { harness { name version } timer primaryStatistic correctnessReference comparabilityFamily notes }
  environment { gpu { display } driver cuda libraries { key value } }
  artifacts { name uri mediaType }
  cases { index axes { key value } status latency { statistic display } solScore }
  attestations(first: 100) { edges { node { author verified attestedAt predicateType } } }
  supersededBy { digest }
  manifest
  citation { permalink digest accessedAt text }
} }"""


def wants_html(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "text/html" in accept and "application/json" not in accept.split(",")[0]


async def run_page(request: Request) -> Response:
    """/runs/{digest}: the dossier page for browsers, the canonical manifest as JSON otherwise."""
    from resolvers import ids

    app = request.app
    digest = request.path_params["digest"]
    context = Context(db=app.state.db, loaders=Loaders(app.state.db), public_url=app.state.settings.public_url, request=request)
    result = await app.state.schema.execute(DOSSIER_QUERY, variable_values={"digest": ids.encode("Run", digest)}, context_value=context)
    run = (result.data or {}).get("run") if not result.errors else None
    if run is None:
        if wants_html(request):
            return HTMLResponse(TEMPLATES.get_template("not_found.html").render(digest=digest), status_code=404)
        return JSONResponse({"error": "no run with this digest"}, status_code=404)
    if not wants_html(request):
        return JSONResponse(run["manifest"])
    html = TEMPLATES.get_template("run.html").render(run=run, manifest_json=json.dumps(run["manifest"], indent=2, ensure_ascii=False))
    return HTMLResponse(html)


def short(digest: str | None, length: int = 16) -> str:
    return f"{digest[: 7 + length]}…" if digest else "—"


TEMPLATES.filters["short"] = short
