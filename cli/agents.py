"""`kernelindex mcp`: the MCP server for coding agents, over stdio, or streamable HTTP with
`--http` (mcp_server/, mcp_server/http.py)."""

from __future__ import annotations

import argparse
import os
import sys

from cli.common import add_api_options
from server.settings import Settings


def register(sub) -> None:
    mcp = sub.add_parser(
        "mcp",
        help="the MCP server for coding agents: read-only tools over the GraphQL API, on stdio",
        description="Speaks MCP on stdin/stdout (the official SDK); every tool is one GraphQL call to --api.",
    )
    add_api_options(mcp, "optional (reads are public)")
    mcp.add_argument(
        "--public-url",
        default=None,
        metavar="URL",
        help="base of the permalinks in answers (default: KERNELINDEX_PUBLIC_URL, else the API's origin)",
    )
    mcp.add_argument(
        "--http",
        action="store_true",
        help="serve MCP's streamable HTTP transport at http://HOST:PORT/mcp instead of stdio; every request needs "
        "Authorization: Bearer <API key> (any scope), checked by the API",
    )
    mcp.add_argument("--host", default="127.0.0.1", help="with --http: the address to listen on (default 127.0.0.1)")
    mcp.add_argument("--port", type=int, default=8765, help="with --http: the port (default 8765)")
    mcp.set_defaults(handler=cmd_mcp)


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    from client.api import ApiClient, api_url
    from mcp_server.server import build_server

    url = api_url(args.api)
    public = args.public_url or os.environ.get("KERNELINDEX_PUBLIC_URL") or url.removesuffix("/graphql")
    with ApiClient(url, args.api_key or os.environ.get("KERNELINDEX_API_KEY"), timeout_s=args.timeout) as api:
        if args.http:
            return _serve_http(api, url, public, args)
        server = build_server(api, public)
        try:
            server.run("stdio")
        except KeyboardInterrupt:
            return 130
    sys.stdout.flush()
    return 0


def _serve_http(api, url: str, public: str, args: argparse.Namespace) -> int:
    import anyio

    from mcp_server.http import ApiKeyVerifier, auth_settings
    from mcp_server.server import build_server

    server = build_server(api, public, token_verifier=ApiKeyVerifier(url), auth=auth_settings(public))
    print(f"kernelindex mcp: streamable HTTP on http://{args.host}:{args.port}/mcp (API {url})", file=sys.stderr, flush=True)
    try:
        anyio.run(lambda: server.run_streamable_http_async(host=args.host, port=args.port))
    except KeyboardInterrupt:
        return 0
    return 0
