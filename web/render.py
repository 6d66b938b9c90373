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
    """Browsers ask for text/html; `Accept: application/json` (or no preference) gets the twin."""
    accept = request.headers.get("accept", "")
    return "text/html" in accept and "application/json" not in accept.split(",")[0]


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
