"""`Server-Timing: page;dur=…` on every page: the server's own time for it (GraphQL round trips
and rendering), readable in a browser's developer tools and by bench/pages.py."""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class ServerTiming:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                # Pages are rendered whole before the response starts, so this is the page's time.
                ms = (time.perf_counter() - started) * 1000
                message = {**message, "headers": [*message.get("headers", []), (b"server-timing", f"page;dur={ms:.2f}".encode())]}
            await send(message)

        await self.app(scope, receive, timed_send)
