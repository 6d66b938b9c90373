"""/groups/{id}: one comparison group's leaderboard, keyset-paged with the API's cursors."""

from __future__ import annotations

from datetime import datetime

from starlette.requests import Request
from starlette.responses import Response

from web import queries
from web.charts import staircase
from web.graphql import GraphQLError
from web.render import api_failed, distinct_titles, not_found, page, source_metrics

PAGE_SIZE = 50
# Columns the page can order by. The API orders a group best first only, so any other order is
# applied to the rows of the current page; the page says so.
SORTS = {
    "rank": None,
    "latency": lambda r: r["primaryMeasurement"]["valueNs"],
    "observed": lambda r: datetime.fromisoformat(r["observedAt"]),
    "title": lambda r: (r["title"] or r["name"]).lower(),
    "evidence": lambda r: ["REPORTED", "REPRODUCIBLE", "KERNELINDEX_VERIFIED", "INDEPENDENTLY_REPLICATED"].index(r["evidenceLevel"]),
}


# What a tie means under each of the API's tie tests (RankRule.tieTest).
TIE_TESTS = {
    "exact": "equal values",
    "noise_band": "difference inside the larger half-IQR",
    "ci95_overlap": "overlapping 95% confidence intervals of the rank metric, from the per-case means, std and runs",
}


def mark_ties(rows: list[dict]) -> None:
    """A rank shared with a neighbour is a tie (the API gives tied runs the same rank)."""
    for i, row in enumerate(rows):
        rank = row["rank"]
        near = [rows[j]["rank"] for j in (i - 1, i + 1) if 0 <= j < len(rows)]
        row["tie"] = rank is not None and rank in near


async def group_page(request: Request) -> Response:
    group_id = request.path_params["id"]
    after = request.query_params.get("after") or None
    sort = request.query_params.get("sort", "rank")
    descending = request.query_params.get("order") == "desc"
    if sort not in SORTS:
        return page(request, "error.html", {"error": f"sort: unknown column {sort!r}; one of {', '.join(SORTS)}"}, status=400)
    try:
        data = await request.app.state.graphql.query(queries.GROUP, {"id": group_id, "first": PAGE_SIZE, "after": after})
    except GraphQLError as error:
        if "BAD_ID" in error.codes:
            return not_found(request, "comparison group", f"No comparison group with ID {group_id}.")
        if "BAD_USER_INPUT" in error.codes:  # e.g. "after: … is not a valid cursor"
            return page(request, "error.html", {"error": str(error)}, status=400)
        return api_failed(request, str(error))
    group = data["comparisonGroup"]
    if group is None:
        return not_found(request, "comparison group", f"No comparison group with ID {group_id}.")
    connection = group.pop("runs")
    steps = [
        (
            r["at"][:16].replace("T", " "),
            r["run"]["primaryMeasurement"]["valueNs"],
            f"{r['cause'].lower().replace('_', ' ')}: {r['run']['title'] or r['run']['name']}",
        )
        for r in group["records"]
        if r["run"] and r["run"]["primaryMeasurement"]  # a #1 without a primary measurement has no height
    ]
    rows = [edge["node"] for edge in connection["edges"]]
    mark_ties(rows)
    distinct_titles(rows)
    if SORTS[sort] is not None:
        rows.sort(key=SORTS[sort], reverse=descending)
    elif descending:
        rows.reverse()
    context = {
        "group": group,
        "runs": rows,
        # The column is shown only when some run has the source's own metrics (controlled runs have none).
        "hasSourceMetrics": any(source_metrics(r.get("sourceNative")) for r in rows),
        "sort": {"column": sort, "order": "desc" if descending else "asc", "scope": "group" if sort == "rank" else "page"},
        "page": {
            "after": after,
            "size": PAGE_SIZE,
            "hasNextPage": connection["pageInfo"]["hasNextPage"],
            "endCursor": connection["pageInfo"]["endCursor"],
        },
    }
    chart = staircase(steps, f"#1 of {group['title']} over time")
    return page(request, "group.html", {**context, "tie_tests": TIE_TESTS, "staircase": chart}, json_body=context)
