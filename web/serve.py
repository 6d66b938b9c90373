"""Run the web pages as their own process (behind the federation gateway, which forwards every
path but /graphql here): `serve_web("http://127.0.0.1:8000/graphql", port=...)`."""

from __future__ import annotations

import socket

import uvicorn

from web.app import create_web_app


def serve_web(graphql_url: str, *, host: str = "127.0.0.1", port: int = 8001, sock: socket.socket | None = None) -> None:
    """Blocks until SIGINT/SIGTERM. Binds loopback by default: the gateway is the public face.
    `sock`: a socket already listening (the stack's), served instead of binding host:port."""
    config = uvicorn.Config(create_web_app(graphql_url), host=host, port=port, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock] if sock is not None else None)
