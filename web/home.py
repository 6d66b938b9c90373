"""/: the operations (a page at a time, searchable) with their comparison groups and each group's
#1; the newest runs (updated live by static/live.js)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from web import queries
from web.graphql import GraphQLError
from web.render import api_failed, distinct_titles, page

NEWEST = 10
OPERATIONS_PER_PAGE = 20
MAX_SEARCH = 200  # the API's limit on searchDefinitions(text:), said here in the page's own terms


async def home_page(request: Request) -> Response:
    query = request.query_params.get("q", "").strip()
    after = request.query_params.get("after") or None
    client = request.app.state.graphql
    if len(query) > MAX_SEARCH:
        return page(request, "error.html", {"error": f"q: {len(query):,} characters; at most {MAX_SEARCH}"}, status=400)
    try:
        found = await client.query(queries.HOME, {"text": query, "first": OPERATIONS_PER_PAGE, "after": after, "newest": NEWEST})
    except GraphQLError as error:
        if "BAD_USER_INPUT" in error.codes:  # a malformed `after`, a search text too long
            return page(request, "error.html", {"error": str(error)}, status=400)
        return api_failed(request, str(error))
    search = found["searchDefinitions"]
    newest_runs = [edge["node"] for edge in found["runs"]["edges"]]
    distinct_titles(newest_runs)
    context = {
        "query": query,
        "operations": [{"name": d["name"], "title": d["title"], "groups": d["comparisonGroups"]} for d in search["nodes"]],
        "page": {
            "after": after,
            "matching": search["totalCount"],
            "next": search["pageInfo"]["endCursor"] if search["pageInfo"]["hasNextPage"] else None,
        },
        "newest": newest_runs,
    }
    return page(request, "home.html", context)
