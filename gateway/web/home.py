"""/: every operation with its comparison groups and each group's #1; the newest runs (live)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.web import queries
from gateway.web.graphql import GraphQLError
from gateway.web.render import api_failed, page

NEWEST = 10


def matches(definition: dict, words: list[str]) -> bool:
    text = f"{definition['name']} {definition.get('title') or ''}".lower()
    return all(word in text for word in words)


async def home_page(request: Request) -> Response:
    query = request.query_params.get("q", "").strip()
    try:
        data = await request.app.state.graphql.query(queries.HOME, {"newest": NEWEST})
    except GraphQLError as error:
        return api_failed(request, str(error))
    # The API lists every definition (a short list); the search narrows it by name here.
    words = query.lower().split()
    operations = [
        {"name": d["name"], "title": d["title"], "groups": d["comparisonGroups"]}
        for d in data["definitions"]
        if matches(d, words)
    ]
    newest = [edge["node"] for edge in data["runs"]["edges"]]
    return page(request, "home.html", {"query": query, "operations": operations, "newest": newest})
