"""What every Subscription root field shares: the process's EventHub, cursors, and the stream of
log events turned into event objects.

Delivery comes from the process's EventHub (one MongoDB change stream per server process), so an
event written by any process reaches subscribers on every process. A subscription given
`after: <cursor>` first replays what it missed, in order, then goes live: no gap, no duplicate.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from resolvers import ids
from resolvers.context import Info
from resolvers.dataloaders import Loaders
from resolvers.errors import ClientError
from resolvers.types.common import decode_cursor, shown
from store.event_stream import EventFilter, EventHub, StreamUnavailable
from store.events import last_seq

Doc = dict[str, Any]
E = TypeVar("E")


def hub_of(info: Info) -> EventHub:
    request = info.context.request
    hub = getattr(getattr(getattr(request, "app", None), "state", None), "event_hub", None)
    if hub is None or not hub.running:
        reason = getattr(hub, "unavailable", None) or "event delivery is not running"
        raise ClientError(f"subscriptions are not available on this server ({reason})", code="SUBSCRIPTIONS_UNAVAILABLE")
    return hub


async def after_seq(info: Info, after: str | None) -> int | None:
    """The event sequence number of an `after` cursor; a cursor past the newest event was never
    issued (a subscriber given one would wait silently for events it can never get)."""
    if after is None:
        return None
    seq = decode_cursor(after, "events", 1)[0]
    if seq > await last_seq(info.context.db):
        raise ClientError(f"after: {shown(after)} was never issued (it is past the newest event)")
    return seq


def key_of(global_id: str, expected: str, field: str) -> str:
    try:
        return ids.decode_as(global_id, expected)
    except ids.BadGlobalId as error:
        raise ClientError(f"{field}: {error}", code="BAD_ID") from None


def fresh_loaders(info: Info, hub: EventHub, seq: int) -> Loaders:
    """A WebSocket context outlives events, so each event gets fresh DataLoaders: made once per
    event and process, shared by that event's deliveries (which then batch their look-ups)."""
    loaders = hub.memo(seq, "loaders", lambda: Loaders(info.context.db))
    info.context.loaders = loaders
    info.context.now = datetime.now(UTC)
    return loaders


async def feed(
    info: Info, hub: EventHub, flt: EventFilter, after: int | None, make: Callable[[Info, EventHub, Doc], Awaitable[E | None]]
) -> AsyncGenerator[E, None]:
    """The log events matching `flt` (after the cursor, then live), each made into an event
    object; an event whose document is gone is skipped."""
    try:
        with hub.subscribe(flt) as subscription:
            async for event in subscription.events(after):
                made = await make(info, hub, event)
                if made is not None:
                    yield made
    except StreamUnavailable as error:
        raise ClientError(str(error), code="SUBSCRIPTIONS_UNAVAILABLE") from None
