"""Run the web pages as their own process (behind the federation gateway, which forwards every
path but /graphql here): `serve_web("http://127.0.0.1:8000/graphql", port=...)`."""

from __future__ import annotations

import socket

import uvicorn

from web.app import create_web_app


def serve_web(graphql_url: str, *, host: str = "127.0.0.1", port: int = 8001, sock: socket.socket | None = None) -> None:
    """Blocks until SIGINT/SIGTERM. Binds loopback by default: the gateway is the public face.
    `sock`: a socket already listening (the stack's), served instead of binding host:port."""
    config = uvicorn.Config(
        create_web_app(graphql_url),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        # longer than Hive Gateway keeps an idle socket to us (5 s): it closes first, never racing
        # a request onto a socket we just closed ("socket hang up"); see cli/serve.py
        timeout_keep_alive=75,
    )
    uvicorn.Server(config).run(sockets=[sock] if sock is not None else None)
