"""/: the operations (a page at a time) with their comparison groups and each group's #1; the
newest runs (updated live by static/live.js)."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response

from gateway.web import queries
from gateway.web.graphql import GraphQLError
from gateway.web.render import api_failed, page

NEWEST = 10
OPERATIONS_PER_PAGE = 20


def matches(definition: dict, words: list[str]) -> bool:
    text = f"{definition['name']} {definition.get('title') or ''}".lower()
    return all(word in text for word in words)


async def home_page(request: Request) -> Response:
    query = request.query_params.get("q", "").strip()
    after = request.query_params.get("after", "")
    client = request.app.state.graphql

    async def operations_page() -> tuple[list[dict], list[dict], list[dict]]:
        # Search and paging over the names happen here: the API lists definitions, whole, by name.
        words = query.lower().split()
        found = [d for d in (await client.query(queries.OPERATION_NAMES))["definitions"] if matches(d, words)]
        shown = [d for d in found if d["name"] > after][:OPERATIONS_PER_PAGE]
        groups = (await client.query(queries.HOME_GROUPS, {"ids": [d["id"] for d in shown]}))["nodes"] if shown else []
        return found, shown, groups

    try:
        (found, shown, groups), newest = await asyncio.gather(operations_page(), client.query(queries.NEWEST_RUNS, {"first": NEWEST}))
    except GraphQLError as error:
        return api_failed(request, str(error))
    operations = [{"name": d["name"], "title": d["title"], "groups": g["comparisonGroups"]} for d, g in zip(shown, groups)]
    more = bool(shown) and found[-1]["name"] > shown[-1]["name"]
    context = {
        "query": query,
        "operations": operations,
        "page": {"after": after or None, "matching": len(found), "next": shown[-1]["name"] if more else None},
        "newest": [edge["node"] for edge in newest["runs"]["edges"]],
    }
    return page(request, "home.html", context)
