"""One response per page, two forms: HTML for browsers, the same data as JSON otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

TEMPLATES = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"), autoescape=select_autoescape(["html"]))

EVIDENCE = {
    "REPORTED": "Reported",
    "REPRODUCIBLE": "Reproducible",
    "KERNELINDEX_VERIFIED": "KernelIndex Verified",
    "INDEPENDENTLY_REPLICATED": "Independently Replicated",
}


def wants_html(request: Request) -> bool:
    """HTML unless JSON is asked for: `?format=json` (a link can ask), or an Accept header whose
    first preference between the two is JSON (`application/json`, `…+json`). No Accept header,
    `*/*` (curl, scripts) or text/html get the page; `?format=html` forces it."""
    chosen = request.query_params.get("format")
    if chosen in ("json", "html"):
        return chosen == "html"
    for part in request.headers.get("accept", "").split(","):
        media = part.split(";")[0].strip().lower()
        if media in ("text/html", "application/xhtml+xml"):
            return True
        if media == "application/json" or media.endswith("+json"):
            return False
    return True


def page(request: Request, template: str, data: dict[str, Any], *, status: int = 200, json_body: Any = None) -> Response:
    """The page's data is the JSON twin: both forms come from the same dict."""
    if not wants_html(request):
        return JSONResponse(data if json_body is None else json_body, status_code=status)
    return HTMLResponse(TEMPLATES.get_template(template).render(**data), status_code=status)


def not_found(request: Request, what: str, detail: str) -> Response:
    return page(request, "not_found.html", {"error": f"no {what}", "what": what, "detail": detail}, status=404)


def api_failed(request: Request, message: str) -> Response:
    # The API's message names what went wrong; no stack trace reaches the client.
    return page(request, "error.html", {"error": message}, status=502)


def distinct_titles(runs: list[dict]) -> None:
    """Sets each run's `label`: its title, and where several runs on the page share one title
    (revisions of one implementation), what tells them apart: the revision, else the digest."""
    by_title: dict[str, list[dict]] = {}
    for run in runs:
        by_title.setdefault(run.get("title") or run.get("name") or "", []).append(run)
    for title, same in by_title.items():
        revisions = [((r.get("implementation") or {}).get("revision")) for r in same]
        for run, revision in zip(same, revisions):
            if len(same) == 1:
                run["label"] = title
            elif revision and revisions.count(revision) == 1:
                run["label"] = f"{title} · {revision}"
            else:
                run["label"] = f"{title} · {run['digest'][7:15]}"


def short(digest: str | None, length: int = 16) -> str:
    return f"{digest[: 7 + length]}…" if digest else "—"


def evidence(level: str | None) -> str:
    return EVIDENCE.get(level or "", level or "—")


def source_metrics(native: dict | None) -> str:
    """The source's own metrics in one line (SOL-ExecBench's summary when it has one)."""
    if not native:
        return ""
    if native.get("solExecBench"):
        return native["solExecBench"]["summary"]
    parts = []
    for metric in native.get("metrics") or []:
        value = metric.get("text") if metric.get("value") is None else f"{metric['value']:.4g}"
        parts.append(f"{metric['name']} {value}")
    return " · ".join(parts)


TEMPLATES.filters.update(short=short, evidence=evidence, source_metrics=source_metrics)
