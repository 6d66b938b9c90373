"""/runs/{digest}: the run dossier. Browsers get the page; other clients the canonical manifest
(the permalink's contract: citations point here). POST /runs/{digest}/report: the page's "Report
an issue with this run" form, sent on as the runReportIssue mutation (no key: the API's
rate limits for anonymous reports apply)."""

from __future__ import annotations

import json
import statistics
from urllib.parse import parse_qs, quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from resolvers import ids  # the API's own ID codec: a run's ID is derived from its digest
from web import queries
from web.charts import case_chart, case_latency_ns
from web.graphql import GraphQLError
from web.render import api_failed, not_found, page

# The categories of runReportIssue (the mutation refuses any other with BAD_USER_INPUT).
REPORT_CATEGORIES = {
    "wrong_value": "A measurement or rank is wrong",
    "wrong_identity": "The implementation, workload, GPU or source is misattributed",
    "not_reproducible": "It could not be reproduced",
    "duplicate": "It duplicates another run",
    "other": "Something else",
}
MAX_FORM_BYTES = 16_384


def axes_label(axes: list[dict]) -> str:
    return " ".join(f"{a.get('key', a.get('name'))}={a['value']}" for a in axes) or "—"


def case_rows(cases: list[dict]) -> list[dict]:
    """One row per case for the dossier's table. Sources name their statistics differently: best /
    worst are GPU MODE's best and worst, or our harness's min and max; std is the source's, or the
    sample standard deviation of the raw samples our harness publishes."""
    rows = []
    for c in cases:
        stat = {m["statistic"]: m for m in c["latency"]}
        std = stat.get("std", {}).get("display")
        samples = c.get("samplesNs") or []
        if std is None and len(samples) >= 2:
            std = format_ns(round(statistics.stdev(samples)))
        best, worst = stat.get("best") or stat.get("min"), stat.get("worst") or stat.get("max")
        rows.append(
            {
                "index": c["index"],
                "axes": axes_label(c["axes"]),
                "status": c["status"],
                "median": (stat.get("median") or {}).get("display", ""),
                "mean": (stat.get("mean") or {}).get("display", ""),
                "std": std,
                "best": best["display"] if best else None,
                "worst": worst["display"] if worst else None,
                "runs": c.get("sampleCount"),
                "solScore": c.get("solScore"),
            }
        )
    return rows


def format_ns(value_ns: int) -> str:
    """The API's display of a duration (resolvers/types/common.py), for a value the page computes
    (web may not import it: it pulls in the store)."""
    if value_ns >= 1_000_000_000:
        return f"{value_ns / 1e9:.3g} s"
    if value_ns >= 1_000_000:
        return f"{value_ns / 1e6:.1f} ms"
    if value_ns >= 1_000:
        return f"{value_ns / 1e3:.1f} µs"
    return f"{value_ns} ns"


def add_note_query(run_id: str) -> str:
    """The runAddNote mutation for this run, as GraphiQL opens it from the page's link."""
    return (
        "# Add a note to this run (a partner or maintainer key: set the Authorization header below).\n"
        f'mutation {{ runAddNote(input: {{run: "{run_id}", text: "Your note (at most 2,000 characters)"}}) '
        "{ note { id createdAt } userErrors { field message code } } }\n"
    )


async def run_page(request: Request) -> Response:
    return await _render(request, request.path_params["digest"])


async def _render(request: Request, digest: str, report: dict | None = None, status: int = 200) -> Response:
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
    # The seed's canonical manifest: the run with the protocol and environment it names.
    canonical = {"run": run["manifest"], "protocol": run["protocol"]["manifest"], "environment": run["environment"]["manifest"]}
    reported = request.query_params.get("reported")
    context = {
        "run": run,
        "manifest_json": json.dumps(canonical, indent=2, ensure_ascii=False),
        "chart": case_chart([(run["title"] or run["name"], points)], labels, f"Per-case latency ({statistic})"),
        "compare_url": f"/compare?runs={digest},{leader['digest']}" if leader and leader["digest"] != digest else None,
        "case_rows": case_rows(run["cases"]),
        "categories": REPORT_CATEGORIES,
        "report": report or ({"stored": reported} if reported else None),
        "note_url": "/graphiql?query=" + quote(add_note_query(run["id"]), safe=""),
    }
    for c in run["cases"]:
        c.pop("samplesNs", None)  # read for the std only; the twin is the manifest, which holds them
    return page(request, "run.html", context, status=status, json_body=run["manifest"])


async def report_issue(request: Request) -> Response:
    digest = request.path_params["digest"]
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return await _render(request, digest, {"error": f"the report is over {MAX_FORM_BYTES:,} bytes", "code": "REPORT_TOO_LONG"}, 413)
    form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
    variables = {"input": {"run": ids.encode("Run", digest), "category": form.get("category", ""), "text": form.get("text", "")}}
    try:
        data = await request.app.state.graphql.query(queries.REPORT_ISSUE, variables)
    except GraphQLError as error:
        return api_failed(request, str(error))
    answer = data["runReportIssue"]
    if answer["userErrors"]:
        error = answer["userErrors"][0]
        code = error["code"]
        status = 429 if code == "RATE_LIMITED" else 404 if code == "NOT_FOUND" else 400
        if code == "NOT_FOUND":
            return not_found(request, "run", f"No run with digest {digest}.")
        return await _render(
            request, digest, {"error": error["message"], "code": code, "category": form.get("category"), "text": form.get("text")}, status
        )
    # Post/redirect/get: a reload does not send the report again.
    return RedirectResponse(f"/runs/{digest}?reported={answer['report']['id']}#report", status_code=303)
