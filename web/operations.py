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
    try:
        context["resolve"] = await _resolve(request, client, definition)
    except GraphQLError as error:
        return api_failed(request, str(error))
    return page(request, "operation.html", context)


async def _resolve(request: Request, client, definition: dict) -> dict | None:
    """The form "fastest for this shape": `?resolve=1&<axis>=<value>...&gpu=...` asks
    resolveKernel; an axis value that is not a whole number is named, not sent."""
    params = request.query_params
    var_axes = [a["name"] for a in definition["axes"] if a["type"] == "var"]
    form = {"values": {name: params.get(name, "") for name in var_axes}, "gpu": params.get("gpu", "")}
    gpus = sorted({g["gpu"]["product"] for g in definition.pop("ownGroups", [])})
    if params.get("resolve") is None:
        return {"form": form, "gpus": gpus, "answer": None, "errors": []}
    errors, axes = [], []
    for name in var_axes:
        text = form["values"][name].strip()
        if not text.isdigit() or int(text) < 1:
            errors.append(f"{name}: give a whole number of at least 1")
        else:
            axes.append({"name": name, "value": int(text)})
    answer = None
    if not errors:
        variables = {"operation": definition["name"], "axes": axes, "gpu": form["gpu"] or None}
        answer = (await client.query(queries.RESOLVE, variables))["resolveKernel"]
        errors = [f"{e['field']}: {e['message']}" for e in answer["userErrors"]]
    return {"form": form, "gpus": gpus, "answer": answer, "errors": errors}
