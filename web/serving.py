"""/serving: the serving runs (MLPerf Inference results from the KernelIndex catalog), filtered by
model, scenario, accelerator, system and round, a page at a time. Listed, never ranked: the order
is newest observation first, and no run is called better than another."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from web import queries
from web.graphql import GraphQLError
from web.render import api_failed, page

RUNS_PER_PAGE = 25
# Query parameter -> ServingRunFilter field (and servingRunFacets list).
FILTERS = {"model": "models", "scenario": "scenarios", "accelerator": "accelerators", "system": "systems", "round": "rounds"}
MAX_FILTER = 200  # the API's limit on a filter value, said here in the page's own terms


async def serving_page(request: Request) -> Response:
    params = request.query_params
    chosen = {name: params.get(name, "").strip() for name in FILTERS}
    for name, value in chosen.items():
        if len(value) > MAX_FILTER:
            return page(request, "error.html", {"error": f"{name}: {len(value):,} characters; at most {MAX_FILTER}"}, status=400)
    after = params.get("after") or None
    where = {name: value for name, value in chosen.items() if value}
    try:
        data = await request.app.state.graphql.query(queries.SERVING_RUNS, {"filter": where, "first": RUNS_PER_PAGE, "after": after})
    except GraphQLError as error:
        if "BAD_USER_INPUT" in error.codes:  # a malformed `after`
            return page(request, "error.html", {"error": str(error)}, status=400)
        return api_failed(request, str(error))
    found, facets = data["servingRuns"], data["servingRunFacets"]
    runs = found["nodes"]
    # Every record on the page names where it comes from; the page says each distinct source once.
    sources = {p["text"]: p for run in runs for p in run["provenance"]}
    context = {
        "filter": chosen,
        "facets": {name: facets[FILTERS[name]] for name in FILTERS},
        "total": facets["totalCount"],
        "matching": found["totalCount"],
        "runs": runs,
        "provenance": list(sources.values()),
        "page": {"after": after, "next": found["pageInfo"]["endCursor"] if found["pageInfo"]["hasNextPage"] else None},
        "query": "",
    }
    return page(request, "serving.html", context)
