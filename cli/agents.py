"""`kernelindex mcp`: the MCP server for coding agents, over stdio (mcp_server/)."""

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
    mcp.set_defaults(handler=cmd_mcp)


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    from client.api import ApiClient, api_url
    from mcp_server.server import build_server

    url = api_url(args.api)
    public = args.public_url or os.environ.get("KERNELINDEX_PUBLIC_URL") or url.removesuffix("/graphql")
    with ApiClient(url, args.api_key or os.environ.get("KERNELINDEX_API_KEY"), timeout_s=args.timeout) as api:
        server = build_server(api, public)
        try:
            server.run("stdio")
        except KeyboardInterrupt:
            return 130
    sys.stdout.flush()
    return 0
