"""The web app factory. It serves pages built from GraphQL answers of `graphql_url`; run alone
(its own process behind the federation gateway) or mounted in the single-process server."""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from web.compare import compare_page
from web.feeds import records_feed
from web.graphiql import graphiql_assets, graphiql_page
from web.graphql import GraphQLClient
from web.groups import group_page
from web.home import home_page
from web.operations import operation_page
from web.render import not_found, page
from web.runs import report_issue, run_page
from web.security_headers import SecurityHeaders
from web.serving import serving_page
from web.timing import ServerTiming

STATIC = Path(__file__).parent / "static"


def create_web_app(graphql_url: str, *, transport: httpx.AsyncBaseTransport | None = None) -> Starlette:
    """`graphql_url`: where pages POST their queries. `transport`: how to reach it (default:
    the network; the single-process server passes an in-process transport to its own API)."""
    client = GraphQLClient(graphql_url, transport=transport)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        try:
            yield
        finally:
            await client.aclose()

    async def no_such_page(request, exc) -> Response:
        # An unknown path (or a method a route does not take) gets a page with the site's
        # navigation and a way on, and the JSON twin, not a bare "Not Found".
        if getattr(exc, "status_code", 404) == 405:
            return page(request, "error.html", {"error": f"{request.method} is not answered at {request.url.path}"}, status=405)
        detail = f"Nothing is published at {request.url.path}. Start from the operations, or search for one."
        return not_found(request, "page", detail)

    app = Starlette(
        lifespan=lifespan,
        exception_handlers={404: no_such_page, 405: no_such_page},
        middleware=[Middleware(SecurityHeaders), Middleware(ServerTiming)],
        routes=[
            Route("/", home_page),
            Route("/groups/{id}", group_page),
            Route("/operations/{name}", operation_page),
            Route("/runs/{digest}", run_page),
            Route("/runs/{digest}/report", report_issue, methods=["POST"]),
            Route("/compare", compare_page),
            Route("/serving", serving_page),
            Route("/records/feed.xml", records_feed),
            Route("/graphiql", graphiql_page),
            Mount("/static/graphiql", graphiql_assets()),
            Mount("/static", StaticFiles(directory=STATIC)),
        ],
    )
    app.state.graphql = client
    return app
