"""The Starlette application: GraphQL (HTTP and WebSocket) at /graphql, plus a few plain routes
(/healthz; the registry's bulk exports at /exports/, server/exports.py)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from typing import Any

import httpx
from graphql import GraphQLError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp
from strawberry.asgi import GraphQL
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types import ExecutionResult

from resolvers.context import Context
from resolvers.dataloaders import Loaders
from server.auth import bearer_from_connection_params, bearer_from_headers, principal_for
from server.exports import Exports
from server.request_body import RequestBodyGuard
from server.schema import build_schema
from server.settings import Settings
from server.websocket import MAX_SUBSCRIPTIONS_PER_CONNECTION, SubscriptionLimitHandler
from store.client import database_timeout, make_client
from store.embedded import home
from store.event_stream import EventHub
from store.schema import ensure_schema
from web import create_web_app

HEALTH_TIMEOUT_S = 1.5  # under the gateway's readiness wait (2 s)
DB_SHARE_OF_DEADLINE = 0.8


class KernelIndexGraphQL(GraphQL):
    """Strawberry's ASGI app with our per-request context."""

    graphql_transport_ws_handler_class = SubscriptionLimitHandler  # a coded error past the limit

    def __init__(self, schema, app_state: Any, settings: Settings, max_subscriptions: int | None = MAX_SUBSCRIPTIONS_PER_CONNECTION):
        super().__init__(
            schema,
            graphql_ide=None,  # GraphiQL is the web app's /graphiql, with local assets
            # graphql-transport-ws only: the legacy protocol had an auth bypass.
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            max_subscriptions_per_connection=max_subscriptions,
        )
        self.app_state = app_state
        self.settings = settings

    async def get_context(self, request: Any, response: Any = None) -> Context:
        db = self.app_state.db
        principal, presented = await principal_for(db, bearer_from_headers(request.headers))
        return Context(
            db=db,
            loaders=Loaders(db),
            public_url=self.settings.public_url,
            source_url=self.settings.source_url,
            request=request,
            response=response,
            principal=principal,
            key_presented=presented,
        )

    async def execute_operation(self, request, request_adapter, request_data, context, root_value, sub_response):
        # A hard bound on one HTTP operation (Settings.request_deadline_s, as at the gateway);
        # the database calls under it have their own timeouts (store.client.make_client).
        deadline = self.settings.request_deadline_s
        try:
            # The operation's database calls are bounded too, by 80 % of the deadline: a stalled
            # database fails it with DATABASE_UNAVAILABLE (resolvers/errors.py) before the
            # deadline (the gateway's, the same) runs out, and a slow but legitimate query (20 s
            # for every workload manifest on a loaded 2-core machine) still finishes.
            with database_timeout(deadline * DB_SHARE_OF_DEADLINE):
                async with asyncio.timeout(deadline):
                    return await super().execute_operation(request, request_adapter, request_data, context, root_value, sub_response)
        except TimeoutError:
            error = GraphQLError(f"the request took longer than the deadline of {deadline:g} s", extensions={"code": "DEADLINE_EXCEEDED"})
            return ExecutionResult(data=None, errors=[error])

    async def on_ws_connect(self, context: Context):
        # A WebSocket may authenticate in connection_init instead of a header.
        token = bearer_from_connection_params(context.connection_params)
        if token is not None:
            context.principal, context.key_presented = await principal_for(context.db, token)
        return await super().on_ws_connect(context)


YOUNG_COLLECTION_AFTER = 50_000  # container allocations between young-generation collections


def create_app(
    mongodb_uri: str, settings: Settings | None = None, *, client_options: dict | None = None, subgraph: str | None = None
) -> ASGIApp:
    """`subgraph`: serve only the "registry" or "benchmarks" subgraph (what `kernelindex serve`
    runs behind Hive Gateway); None: both in one schema (in-process tests, local tools).
    `client_options` go to the driver (tests pass command listeners through it)."""
    settings = settings or Settings()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        # The client is made here, on the serving event loop.
        client = make_client(mongodb_uri, **(client_options or {}))
        app.state.client = client
        app.state.db = client[settings.database]
        await ensure_schema(app.state.db)
        # One change stream per process delivers every process's events to this one's subscribers.
        app.state.event_hub = EventHub(app.state.db)
        await app.state.event_hub.start()
        # Everything built at start-up lives as long as the process: keep it out of the cyclic
        # collector's full passes, which otherwise rescan it every few requests (the p99).
        gc.collect()
        gc.freeze()
        # A request allocates tens of thousands of short-lived objects: at the default 700 a
        # runs(100) page triggered 5 collections, 14.5 of its 211 ms (bench/api.py, load 8).
        # Cycles among them wait for the next collection: a few MB at most.
        gc.set_threshold(YOUNG_COLLECTION_AFTER, *gc.get_threshold()[1:])
        try:
            yield
        finally:
            if web is not None:
                await web.state.graphql.aclose()
            await app.state.event_hub.stop()
            await client.close()

    async def healthz(request: Request) -> Any:
        # What the gateway's /readiness asks: 503 (not a hang, not a traceback) while the
        # database does not answer a ping within HEALTH_TIMEOUT_S.
        try:
            async with asyncio.timeout(HEALTH_TIMEOUT_S):
                await request.app.state.db.command("ping")
        except Exception as error:  # noqa: BLE001 (any failure of the ping: not ready)
            reason = "no answer" if isinstance(error, TimeoutError) else type(error).__name__
            return PlainTextResponse(f"the database is unavailable: {reason}", status_code=503)
        return PlainTextResponse("ok")

    app = Starlette(lifespan=lifespan)
    schema = build_schema(settings, subgraph)
    app.state.schema = schema
    app.state.settings = settings
    # Behind the gateway a subgraph's WebSocket client is the gateway, which carries many users'
    # subscriptions on one connection: the per-connection limit is the gateway's, per client
    # (gateway/gateway.config.mjs), not the subgraph's.
    graphql = KernelIndexGraphQL(schema, app.state, settings, MAX_SUBSCRIPTIONS_PER_CONNECTION if subgraph is None else None)
    app.router.routes.extend(
        [
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
            Route("/healthz", healthz),
        ]
    )
    if subgraph in (None, "registry"):
        # Bulk exports (server/exports.py), in HOME/exports: the gateway forwards /exports/ here.
        app.router.routes.extend(Exports(home() / "exports", settings.public_url).routes())
    web = None
    if subgraph is None:
        # The pages query this server's own /graphql over HTTP semantics, in process (no socket).
        # Behind the gateway, a subgraph serves GraphQL only; the web process serves the pages.
        web = create_web_app("http://kernelindex.internal/graphql", transport=httpx.ASGITransport(app=graphql))
        app.router.mount("/", web)  # every other path: the web pages
    return RequestBodyGuard(app, settings.max_body_bytes)
