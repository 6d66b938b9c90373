"""Run the web pages as their own process (behind the federation gateway, which forwards every
path but /graphql here): `serve_web("http://127.0.0.1:8000/graphql", port=...)`."""

from __future__ import annotations

import uvicorn

from gateway.web.app import create_web_app


def serve_web(graphql_url: str, *, host: str = "127.0.0.1", port: int = 8001) -> None:
    """Blocks until SIGINT/SIGTERM. Binds loopback by default: the gateway is the public face."""
    uvicorn.run(create_web_app(graphql_url), host=host, port=port, log_level="warning", access_log=False)
