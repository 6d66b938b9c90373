"""GraphiQL with local assets: the pinned npm packages of web/assets (installed beside its lock
file by `make setup`, or by `kernelindex serve` into the user cache: web/node_packages.py), never
a CDN."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.staticfiles import StaticFiles

from web import node_packages
from web.render import TEMPLATES, wants_html

ASSETS_PROJECT = Path(__file__).parent / "assets"  # package.json and package-lock.json
# The only files served from node_modules (URL name -> package file).
FILES = {
    "react.production.min.js": "react/umd/react.production.min.js",
    "react-dom.production.min.js": "react-dom/umd/react-dom.production.min.js",
    "graphiql.min.js": "graphiql/graphiql.min.js",
    "graphiql.min.css": "graphiql/graphiql.min.css",
}


class _Assets(StaticFiles):
    """StaticFiles over node_modules, limited to FILES."""

    def get_path(self, scope) -> str:
        name = super().get_path(scope)
        return FILES.get(name, "not-served")


def modules() -> Path:
    """The installed node_modules of web/assets (where it would be in a checkout if none is)."""
    tree = node_packages.find("web-assets", ASSETS_PROJECT)
    return tree.modules if tree else ASSETS_PROJECT / "node_modules"


def graphiql_assets() -> StaticFiles:
    return _Assets(directory=modules(), check_dir=False)


async def graphiql_page(request: Request) -> Response:
    if not wants_html(request):
        # The twin: what the page is a client of.
        return JSONResponse(
            {
                "graphql": str(request.url.replace(path="/graphql", query="")),
                "transports": ["POST application/json", "WebSocket graphql-transport-ws"],
                "schema": "query { _service { sdl } } on a subgraph; the exported SDL is schema.graphql in the repository",
                "assets": {name: f"/static/graphiql/{name}" for name in FILES},
            }
        )
    if not all((modules() / path).is_file() for path in FILES.values()):
        return PlainTextResponse(
            "GraphiQL's assets are not installed: `kernelindex serve` installs them on first start, or run `make setup` in a checkout.",
            status_code=503,
        )
    return HTMLResponse(TEMPLATES.get_template("graphiql.html").render())
