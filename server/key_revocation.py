"""API keys on a WebSocket: checked for every operation, and watched while the connection lives.

HTTP authenticates every request; a WebSocket authenticates once, at `connection_init`, and may
stay open for days. So on a connection that presented a key:

- every `subscribe` looks the key up again: once revoked, the operation is refused with an
  `error` message, code KEY_REVOKED;
- while operations run, the key is looked up every WATCH_INTERVAL_S; once it is revoked, each
  running operation gets a `next` carrying a KEY_REVOKED error and then `complete`, so a revoked
  key's subscriptions end within a second of `kernelindex keys revoke`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from graphql import GraphQLError

from store.keys import is_active

log = logging.getLogger("kernelindex.subscriptions")

KEY_REVOKED = "KEY_REVOKED"
WATCH_INTERVAL_S = 0.5


def revoked_error(key_id: str) -> GraphQLError:
    return GraphQLError(
        f"the API key {key_id} of this connection was revoked; open a new connection with a valid key",
        extensions={"code": KEY_REVOKED},
    )


def connection_key(context: Any):
    """The API key the connection authenticated with, if any."""
    return getattr(context, "principal", None)


async def refused_for_revoked_key(handler: Any, operation_id: str) -> bool:
    """Before an operation starts: refuse it (True) when the connection's key is revoked."""
    key = connection_key(handler.context)
    if key is None or await is_active(handler.context.db, key.id):
        return False
    await handler.send_message({"id": operation_id, "type": "error", "payload": [revoked_error(key.id).formatted]})
    return True


class KeyWatch:
    """One per connection with a key: ends every operation once the key is revoked."""

    def __init__(self, handler: Any):
        self.handler = handler
        self.task: asyncio.Task | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task

    async def _run(self) -> None:
        key = connection_key(self.handler.context)
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            if not self.handler.operations:
                continue  # nothing to end; a new operation is checked when it arrives
            try:
                active = await is_active(self.handler.context.db, key.id)
            except Exception:  # noqa: BLE001 - the database is away: look again next time
                log.warning("could not check API key %s", key.id, exc_info=True)
                continue
            if not active:
                await self._end_all(key.id)
                return

    async def _end_all(self, key_id: str) -> None:
        error = revoked_error(key_id).formatted
        for operation in list(self.handler.operations.values()):
            if operation.task is not None:
                operation.task.cancel()
            with contextlib.suppress(Exception):  # the socket may be gone already
                await operation.send_operation_message({"id": operation.id, "type": "next", "payload": {"data": None, "errors": [error]}})
                await operation.send_operation_message({"id": operation.id, "type": "complete"})
