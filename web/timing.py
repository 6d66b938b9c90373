"""`Server-Timing` on every page: the server's whole time for it (`page`) and the part spent
waiting for GraphQL answers (`graphql`), readable in a browser's developer tools and by
bench/pages.py. The rest is the web layer's own work (shaping and rendering)."""

from __future__ import annotations

import contextvars
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Seconds spent in GraphQL round trips by the current request (GraphQLClient adds to it).
graphql_seconds: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar("graphql_seconds", default=None)


def record_graphql(seconds: float) -> None:
    spent = graphql_seconds.get()
    if spent is not None:
        spent.append(seconds)


class ServerTiming:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        spent: list[float] = []
        token = graphql_seconds.set(spent)

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                # Pages are rendered whole before the response starts, so this is the page's time.
                page_ms = (time.perf_counter() - started) * 1000
                value = f'page;dur={page_ms:.2f}, graphql;dur={sum(spent) * 1000:.2f};desc="{len(spent)} queries"'
                message = {**message, "headers": [*message.get("headers", []), (b"server-timing", value.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, timed_send)
        finally:
            graphql_seconds.reset(token)
