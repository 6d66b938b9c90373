"""/records/feed.xml: an Atom feed (RFC 4287) of changes of #1, built from GraphQL's recordChanges.

No key needed. `?group=<ComparisonGroup ID>` narrows it to one cohort, `?operation=<name>` to one
operation. Each entry is one change of #1: its cause, the new #1 and the one before, with links
to their pages; the feed's and entries' ids are tag URIs that do not change with the host.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response

from web.graphql import GraphQLError
from web.render import api_failed

ATOM = "http://www.w3.org/2005/Atom"
FEED_SIZE = 50

CHANGES = """query Feed($first: Int!, $operation: String, $group: ID) {
  recordChanges(first: $first, operation: $operation, group: $group) {
    seq at cause runDigest previousDigest
    run { title name primaryMeasurement { display statistic } implementation { name } }
    previous { title name primaryMeasurement { display } }
    group { id key title gpu { display } definition { name } }
  }
}"""

CAUSES = {
    "NEW_RUN": "new run",
    "CORRECTION": "correction",
    "SUPERSESSION": "supersession",
    "RETRACTION": "retraction",
}


def _text(parent: ET.Element, tag: str, text: str, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, f"{{{ATOM}}}{tag}", attrs)
    element.text = text
    return element


def _link(parent: ET.Element, href: str, rel: str = "alternate", type_: str = "text/html") -> None:
    ET.SubElement(parent, f"{{{ATOM}}}link", {"rel": rel, "href": href, "type": type_})


def _name(run: dict | None) -> str:
    return (run.get("title") or run.get("name")) if run else "no ranked run"


async def records_feed(request: Request) -> Response:
    params = request.query_params
    operation, group = params.get("operation") or None, params.get("group") or None
    if operation and group:
        return Response("give at most one of operation or group\n", status_code=400, media_type="text/plain")
    try:
        data = await request.app.state.graphql.query(CHANGES, {"first": FEED_SIZE, "operation": operation, "group": group})
    except GraphQLError as error:
        if {"NOT_FOUND", "BAD_ID"} & set(error.codes):
            return Response(f"{error}\n", status_code=404, media_type="text/plain")
        return api_failed(request, str(error))
    changes = data["recordChanges"]
    base = str(request.base_url).rstrip("/")
    scope = f"operation {operation}" if operation else (f"group {group}" if group else "every comparison group")
    ET.register_namespace("", ATOM)
    feed = ET.Element(f"{{{ATOM}}}feed")
    _text(feed, "id", f"tag:kernelindex.dev,2026:records:{'operation:' + operation if operation else 'group:' + group if group else 'all'}")
    title = "KernelIndex records"
    if changes and (operation or group):
        title += f" · {changes[0]['group']['definition']['name'] if operation else changes[0]['group']['title']}"
    _text(feed, "title", title)
    _text(feed, "subtitle", f"Changes of #1 in {scope}, newest first.")
    newest = changes[0]["at"] if changes else datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    _text(feed, "updated", newest)
    author = ET.SubElement(feed, f"{{{ATOM}}}author")
    _text(author, "name", "KernelIndex")
    _link(feed, str(request.url), rel="self", type_="application/atom+xml")
    _link(feed, base + "/")
    _text(feed, "generator", "KernelIndex")
    for change in changes:
        entry = ET.SubElement(feed, f"{{{ATOM}}}entry")
        g = change["group"]
        _text(entry, "id", f"tag:kernelindex.dev,2026:record:{g['key']}:{change['seq']}")
        cause = CAUSES[change["cause"]]
        run, previous = change["run"], change["previous"]
        _text(entry, "title", f"{g['title']}: {_name(run)} is #1 ({cause})")
        _text(entry, "updated", change["at"])
        _text(entry, "published", change["at"])
        _link(entry, f"{base}/runs/{change['runDigest']}" if change["runDigest"] else f"{base}/groups/{g['id']}")
        _link(entry, f"{base}/groups/{g['id']}", rel="related")
        ET.SubElement(entry, f"{{{ATOM}}}category", {"term": change["cause"].lower(), "label": cause})
        measured = f" at {run['primaryMeasurement']['display']} ({run['primaryMeasurement']['statistic']})" if run else ""
        before = (
            f"; before: {_name(previous)}" + (f" at {previous['primaryMeasurement']['display']}" if previous else "") if previous else ""
        )
        _text(
            entry,
            "summary",
            f"{cause.capitalize()}: {_name(run)}{measured} is #1 of {g['title']} ({g['definition']['name']}, {g['gpu']['display']}){before}.",
        )
    body = ET.tostring(feed, encoding="utf-8", xml_declaration=True)
    return Response(body, media_type="application/atom+xml; charset=utf-8")
