"""The WebSocket transport of subscriptions (graphql-transport-ws), on every subgraph process.

- At most MAX_SUBSCRIPTIONS_PER_CONNECTION operations run at once on one connection; one more is
  answered with an `error` message, code TOO_MANY_SUBSCRIPTIONS.
- Identical live public subscriptions (same document, variables and caller; no `after`) run as
  one execution per process whose serialized result goes to each subscriber; a shared subscriber
  more than MAX_SHARED_BACKLOG results behind is dropped with code SLOW_CONSUMER (it resumes
  with `after`). Behind Hive Gateway, this is what lets the gateway's upstream subscriptions
  share one execution.
- Subscriptions over HTTP are refused with code WEBSOCKET_REQUIRED.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import weakref
from collections.abc import Callable
from typing import Any

from graphql import FieldNode, GraphQLError, GraphQLSyntaxError, NullValueNode, OperationDefinitionNode, VariableNode, parse
from graphql import OperationType as GraphQLOperationType
from starlette.websockets import WebSocket
from strawberry.extensions import SchemaExtension
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import BaseGraphQLTransportWSHandler, Operation
from strawberry.types.execution import ExecutionResult, PreExecutionError
from strawberry.types.graphql import OperationType
from strawberry.utils.aio import aclosing

from resolvers.dataloaders import Loaders
from resolvers.errors import ClientError
from server.key_revocation import KeyWatch, connection_key, refused_for_revoked_key

log = logging.getLogger("kernelindex.subscriptions")

MAX_SUBSCRIPTIONS_PER_CONNECTION = 20
TOO_MANY_SUBSCRIPTIONS = "TOO_MANY_SUBSCRIPTIONS"


class SubscriptionLimitHandler(BaseGraphQLTransportWSHandler):
    """Strawberry's graphql-transport-ws handler with two additions:

    - a coded error past the per-connection limit (strawberry's own says only "Subscription
      limit reached");
    - shared execution: live subscriptions to public events (runPublished,
      comparisonGroupChanged without `after`) that send the same document and variables with the
      same caller are executed once per event per process and the result is sent to each of them
      (see SharedStream). Without this, 500 subscribers cost 500 executions of every event.
    """

    key_watch: KeyWatch | None = None

    async def handle_connection_init(self, message) -> None:
        await super().handle_connection_init(message)
        if self.connection_acknowledged and connection_key(self.context) is not None and self.key_watch is None:
            self.key_watch = KeyWatch(self)
            self.key_watch.start()

    async def shutdown(self) -> None:
        if self.key_watch is not None:
            await self.key_watch.stop()
        await super().shutdown()

    @staticmethod
    def _get_pre_execution_close_reason(error: GraphQLError) -> str | None:
        # A syntax error is an answer to one operation (an `error` message), not a reason to
        # close the whole connection.
        if isinstance(error, GraphQLSyntaxError):
            return None
        return BaseGraphQLTransportWSHandler._get_pre_execution_close_reason(error)

    async def handle_subscribe(self, message) -> None:
        limit = self.max_subscriptions_per_connection
        if not self.connection_acknowledged or message["id"] in self.operations:
            await super().handle_subscribe(message)  # strawberry closes the socket for these
            return
        if await refused_for_revoked_key(self, message["id"]):
            return
        payload = message.get("payload")
        syntax_error = _syntax_error(payload["query"]) if isinstance(payload, dict) and isinstance(payload.get("query"), str) else None
        if syntax_error is not None:
            # An answer to this operation, with a code (Strawberry would end it with a bare
            # `complete`, or close the whole connection).
            error = GraphQLError(syntax_error.message[:500], extensions={"code": "GRAPHQL_PARSE_FAILED"})
            await self.send_message({"id": message["id"], "type": "error", "payload": [error.formatted]})
            return
        if limit is not None and len(self.operations) >= limit:
            error = GraphQLError(
                f"at most {limit} subscriptions may run at once on one connection; complete one first or open another connection",
                extensions={"code": TOO_MANY_SUBSCRIPTIONS},
            )
            await self.send_message({"id": message["id"], "type": "error", "payload": [error.formatted]})
            return
        payload = message["payload"]
        if not isinstance(payload, dict):
            await super().handle_subscribe(message)
            return
        key = share_key(payload.get("query"), payload.get("variables"), payload.get("operationName"), self.context)
        if key is None:
            await super().handle_subscribe(message)
            return
        operation = Operation(self, message["id"], payload["query"], payload.get("variables"), payload.get("operationName"))
        operation.task = asyncio.create_task(self._run_shared(operation, key))
        operation.task.add_done_callback(self._task_done)
        self.operations[message["id"]] = operation

    async def _run_shared(self, operation: Operation, key: tuple) -> None:
        streams = _shared_streams.setdefault(self.view, {})
        stream = streams.get(key)
        if stream is None or stream.finished:
            stream = streams[key] = SharedStream(
                self.schema, operation, self.context, self.root_value, on_idle=lambda: streams.pop(key, None)
            )
        listener = stream.attach()
        prefix = '{"id":' + json.dumps(operation.id) + ',"type":"next","payload":'
        send_text = getattr(getattr(self.websocket, "ws", None), "send_text", None)
        try:
            while True:
                kind, body = await listener.get()
                if kind == "next":
                    if send_text is not None:
                        await send_text(prefix + body + "}")
                    else:
                        await operation.send_operation_message({"id": operation.id, "type": "next", "payload": json.loads(body)})
                elif kind == "error":
                    await operation.send_operation_message({"id": operation.id, "type": "error", "payload": body})
                    return
                else:
                    await operation.send_operation_message({"id": operation.id, "type": "complete"})
                    return
        except Exception:  # noqa: BLE001 - the socket went away; the connection's shutdown cleans up
            self.operations.pop(operation.id, None)
        finally:
            stream.detach(listener)


SHAREABLE_FIELDS = {"runPublished", "comparisonGroupChanged"}
_shared_streams: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # view -> {key: SharedStream}
MAX_SHARED_BACKLOG = 1000  # results a shared subscriber may fall behind before it is dropped


@functools.lru_cache(maxsize=256)
def _parse(query: str):
    try:
        return parse(query, max_tokens=4000, no_location=True)
    except GraphQLError:
        return None


@functools.lru_cache(maxsize=256)
def _syntax_error(query: str) -> GraphQLError | None:
    try:
        parse(query, max_tokens=4000, no_location=True)
    except GraphQLError as error:
        return error
    return None


def share_key(query: Any, variables: Any, operation_name: Any, context: Any) -> tuple | None:
    """The key under which identical live public subscriptions share one execution; None when
    this one must run on its own (anything but one plain public root field without `after`)."""
    if not isinstance(query, str) or not isinstance(variables, (dict, type(None))) or not isinstance(operation_name, (str, type(None))):
        return None
    document = _parse(query)
    if document is None:
        return None
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is not None:
        operations = [o for o in operations if o.name and o.name.value == operation_name]
    if len(operations) != 1 or operations[0].operation is not GraphQLOperationType.SUBSCRIPTION:
        return None
    selections = operations[0].selection_set.selections
    if len(selections) != 1 or not isinstance(selections[0], FieldNode) or selections[0].name.value not in SHAREABLE_FIELDS:
        return None
    for argument in selections[0].arguments or ():
        if argument.name.value != "after":
            continue
        value = argument.value
        if isinstance(value, NullValueNode):
            continue
        if isinstance(value, VariableNode) and (variables or {}).get(value.name.value) is None:
            continue
        return None  # resuming: replayed on its own
    try:
        variables_text = json.dumps(variables or {}, sort_keys=True)
    except (TypeError, ValueError):
        return None
    principal = getattr(context, "principal", None)
    return (query, variables_text, operation_name, getattr(principal, "id", None), getattr(context, "key_presented", False))


class _Listener:
    __slots__ = ("queue", "dropped")

    def __init__(self) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()
        self.dropped = False

    def offer(self, item: tuple) -> bool:
        if self.dropped:
            return False
        if self.queue.qsize() >= MAX_SHARED_BACKLOG:
            self.dropped = True
            while not self.queue.empty():
                self.queue.get_nowait()
            error = GraphQLError(
                "this subscriber fell too far behind and was dropped; subscribe again with `after` set to the last cursor received",
                extensions={"code": "SLOW_CONSUMER"},
            )
            self.queue.put_nowait(("error", [error.formatted]))
            return False
        self.queue.put_nowait(item)
        return True

    async def get(self) -> tuple:
        return await self.queue.get()


class SharedStream:
    """One execution of a subscription whose results go to every attached listener, each
    serialized once. Stops when its last listener leaves."""

    def __init__(self, schema, first: Operation, context: Any, root_value: Any, on_idle: Callable[[], Any]):
        self.listeners: set[_Listener] = set()
        self.finished = False
        self._on_idle = on_idle
        # Its own context (and DataLoaders), so no subscriber's connection state leaks into it.
        own_context = dataclasses.replace(context, loaders=Loaders(context.db)) if dataclasses.is_dataclass(context) else context
        self.task = asyncio.create_task(self._run(schema, first.query, first.variables, first.operation_name, own_context, root_value))

    def attach(self) -> _Listener:
        listener = _Listener()
        self.listeners.add(listener)
        return listener

    def detach(self, listener: _Listener) -> None:
        self.listeners.discard(listener)
        if not self.listeners and not self.finished:
            self.finished = True
            self._on_idle()
            self.task.cancel()

    def _broadcast(self, item: tuple) -> None:
        for listener in list(self.listeners):
            if not listener.offer(item):
                self.listeners.discard(listener)

    async def _run(self, schema, query, variables, operation_name, context, root_value) -> None:
        try:
            source = await schema.stream(
                query, variable_values=variables, context_value=context, root_value=root_value, operation_name=operation_name
            )
            async with aclosing(source):
                async for result in source:
                    if isinstance(result, PreExecutionError) or not isinstance(result, ExecutionResult):
                        errors = (
                            result.errors
                            if isinstance(result, PreExecutionError)
                            else [GraphQLError("Incremental delivery is not supported over graphql-transport-ws")]
                        )
                        self._finish(("error", [e.formatted for e in errors]))
                        return
                    payload: dict[str, Any] = {"data": result.data}
                    if result.errors:
                        payload["errors"] = [e.formatted for e in result.errors]
                    if result.extensions:
                        payload["extensions"] = result.extensions
                    self._broadcast(("next", json.dumps(payload, separators=(",", ":"))))
            self._finish(("complete", None))
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001
            log.exception("a shared subscription failed")
            self._finish(("error", [GraphQLError("Unexpected error.").formatted]))

    def _finish(self, item: tuple) -> None:
        if not self.finished:
            self.finished = True
            self._on_idle()
        self._broadcast(item)


class SubscriptionsOverWebSocket(SchemaExtension):
    """Refuse a subscription operation sent over HTTP, with a coded error (strawberry would
    otherwise run it as a query and fail with a masked null error)."""

    def on_execute(self):
        context = self.execution_context
        if context.operation_type is OperationType.SUBSCRIPTION and not isinstance(getattr(context.context, "request", None), WebSocket):
            raise ClientError(
                "subscriptions are served over WebSocket (graphql-transport-ws) at /graphql, not over HTTP",
                code="WEBSOCKET_REQUIRED",
            )
        yield
