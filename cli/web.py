"""`kernelindex web`: the web pages as their own process, built from a GraphQL endpoint's answers
(the federation gateway's /graphql, which forwards every other path here)."""

from __future__ import annotations

import argparse
import signal
import socket
from urllib.parse import urlsplit

from cli.common import fail
from cli.serve import _raise_stop, _Stop  # the same orderly stop as `serve`
from server.settings import Settings
from store.embedded import _port_taken


def register(sub) -> None:
    web = sub.add_parser("web", help="serve the web pages from a GraphQL endpoint's answers")
    web.add_argument(
        "--graphql", required=True, metavar="URL", help="the GraphQL endpoint the pages query, e.g. http://127.0.0.1:8000/graphql"
    )
    web.add_argument("--host", default="127.0.0.1")
    web.add_argument("--port", type=int, default=8001)
    web.add_argument("--fd", type=int, default=None, help=argparse.SUPPRESS)  # a listening socket the stack bound for us
    web.set_defaults(handler=cmd_web)


def cmd_web(args: argparse.Namespace, settings: Settings) -> int:
    from web.serve import serve_web

    url = urlsplit(args.graphql)
    if url.scheme not in ("http", "https") or not url.netloc:
        return fail(f"--graphql: {args.graphql!r} is not an http(s) URL")
    if args.fd is None and _port_taken(args.host, args.port):
        return fail(f"port {args.port} on {args.host} is already in use; choose another with --port")
    try:
        sock = socket.socket(fileno=args.fd) if args.fd is not None else None
    except OSError as error:
        return fail(f"--fd {args.fd}: not a socket ({error.strerror})")
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _raise_stop)
    try:
        serve_web(args.graphql, host=args.host, port=args.port, sock=sock)
    except _Stop:
        pass
    return 0
