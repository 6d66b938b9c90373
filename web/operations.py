"""/operations/{name}: an operation's definition, workload suites, comparison groups and jobs."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from web import queries
from web.graphql import GraphQLError
from web.render import api_failed, not_found, page

# Where a definition states its cost model (not every source publishes one).
COST_KEYS = ("flops", "bytes", "cost", "roofline")


async def operation_page(request: Request) -> Response:
    name = request.path_params["name"]
    client = request.app.state.graphql
    try:
        definition = (await client.query(queries.OPERATION, {"name": name}))["definition"]
        if definition is None:
            return not_found(request, "operation", f"No operation named {name}.")
        jobs = (await client.query(queries.JOBS, {"definition": definition["id"]}))["benchmarkJobs"]
    except GraphQLError as error:
        return api_failed(request, str(error))
    spec = (definition.pop("manifest") or {}).get("spec") or {}
    definition["cost"] = {key: spec[key] for key in COST_KEYS if key in spec}
    context = {"definition": definition, "jobs": [edge["node"] for edge in jobs["edges"]]}
    return page(request, "operation.html", context)
