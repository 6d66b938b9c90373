"""Delivering the event log to subscribers: one change stream per server process, fanned out.

Every server process runs one `EventHub` (started in the app's lifespan). It watches inserts into
`events` with a single MongoDB change stream, so an event appended by any process (a GraphQL
mutation, `kernelindex load`, an import) reaches the subscribers held by every process. Each
subscriber gets a bounded asyncio queue; the hub never waits for a slow subscriber.

Order and gaps. `seq` numbers are reserved from a counter before the event is inserted, so
inserts can commit out of `seq` order (two writers) and a reserved number can stay unused (a
transaction that aborted). The hub releases events to subscribers in `seq` order: an event that
arrives ahead of a missing number waits for it, for at most `gap_timeout_s`; after that the
missing number is given up (`skipped`) and later events flow on. The hub's `watermark` is the
highest `seq` below which every event has been released (or given up).

No loss, no duplicates (`Subscriber.events`): the subscriber's queue is registered first,
which fixes the watermark W at that instant: every event the hub releases afterwards has
`seq > W` and lands in the queue. Events after the client's cursor up to W are then read from
the `events` collection (the backlog), in order; then the queue is drained. A queue that
overflows is cleared and marked; its subscriber re-registers (a new watermark) and reads the
missed stretch from the collection again, so a slow consumer costs round trips, not events.
A given-up number whose event does commit later ("late") is released on arrival, out of order;
numbers missing just below the newest stored event when the hub starts count as given up.
If the change stream breaks it is resumed from its last token; if that point is gone, the hub
reopens it and reads what followed its watermark from the collection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import OperationFailure, PyMongoError

from store.events import last_seq
from store.read_models import read

log = logging.getLogger("kernelindex.events")

Doc = dict[str, Any]
T = TypeVar("T")

# Events are read from the collection by ranges of `seq`, REPLAY_PAGE numbers at a time, never
# by "after X, sorted, limit": SecantusDB fetches every document of a range before a limit
# applies, so an open-ended read costs every event after X (0.79 s for 200 events at 40,000).
REPLAY_PAGE = 200  # seq numbers per backlog read: at most that many events
DEFAULT_QUEUE_SIZE = 1000  # events a subscriber may fall behind before it re-reads the log
DEFAULT_GAP_TIMEOUT_S = 0.5
MAX_REMEMBERED_SKIPS = 1000
DEFAULT_POLL_PAUSE_S = 0.01  # after an empty change-stream batch


class StreamUnavailable(RuntimeError):
    """The hub is not running (no change streams on this server, or stopped)."""


@dataclass(frozen=True)
class EventFilter:
    """Events of one type whose fields equal the given values."""

    type: str
    equals: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, type_: str, **equals: Any) -> EventFilter:
        return cls(type_, tuple(sorted((k, v) for k, v in equals.items() if v is not None)))

    def matches(self, event: Doc) -> bool:
        return event.get("type") == self.type and all(event.get(k) == v for k, v in self.equals)


@dataclass(eq=False)
class _Delivery:
    event: Doc
    late: bool = False


_OVERFLOW = object()


@dataclass(eq=False)
class Subscriber:
    """One subscriber's registration with the hub. Use `events(after)`; close when done."""

    hub: EventHub
    filter: EventFilter
    queue: asyncio.Queue
    # Fixed when (re-)registered: events with seq <= watermark come from the collection.
    watermark: int = 0
    skipped: frozenset[int] = frozenset()
    overflowed: bool = False
    closed: bool = False

    def _arm(self) -> None:
        # Synchronous: no event can be released between reading the watermark and re-arming.
        self.watermark = self.hub.watermark
        self.skipped = frozenset(self.hub.skipped)
        self.overflowed = False

    def _offer(self, delivery: _Delivery) -> None:
        if self.overflowed or self.closed:
            return
        try:
            self.queue.put_nowait(delivery)
        except asyncio.QueueFull:
            self.overflowed = True
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(_OVERFLOW)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.hub._remove(self)

    async def events(self, after: int | None) -> AsyncIterator[Doc]:
        """The matching events after `after` (None: from now on), in order, then live."""
        last = self.watermark if after is None else after
        origin = after  # a late event is new to this subscriber unless its cursor covers it
        while True:
            async for event in self.hub.backlog(self.filter, after=last, upto=self.watermark, exclude=self.skipped):
                last = event["seq"]
                yield event
            while True:
                item = await self.queue.get()
                if item is _OVERFLOW:
                    self._arm()
                    break  # read what was missed from the collection
                event = item.event
                if event["seq"] > last or (item.late and (origin is None or event["seq"] > origin)):
                    last = max(last, event["seq"])
                    yield event


@dataclass(eq=False)
class EventHub:
    """The process-wide fan-out of the `events` change stream."""

    db: AsyncDatabase
    queue_size: int = DEFAULT_QUEUE_SIZE
    gap_timeout_s: float = DEFAULT_GAP_TIMEOUT_S
    poll_pause_s: float = DEFAULT_POLL_PAUSE_S
    watermark: int = 0
    skipped: OrderedDict = field(default_factory=OrderedDict)  # seq -> None, oldest first
    _pending: dict[int, Doc] = field(default_factory=dict)
    _gap_timer: asyncio.TimerHandle | None = None
    _by_type: dict[str, set[Subscriber]] = field(default_factory=dict)
    _task: asyncio.Task | None = None
    _running: bool = False
    _per_event: OrderedDict = field(default_factory=OrderedDict)  # (seq, name) -> value; see memo()
    released: int = 0  # events released to subscribers since start (for tests and metrics)
    unavailable: str | None = None  # why the hub is off, when it could not start

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open the change stream (so nothing inserted after this returns is missed). A server
        without change streams (a standalone mongod) leaves the hub off: subscriptions then answer
        SUBSCRIPTIONS_UNAVAILABLE, and everything else works."""
        try:
            stream = await self._open(None)
        except OperationFailure as error:
            self.unavailable = f"change streams are not available on this database server: {error}"
            log.warning("event delivery is off: %s", self.unavailable)
            return
        # The watermark starts at the newest stored event. Numbers missing just below it may be
        # reserved by a writer that has not committed yet: they count as given up, so that they
        # are still released if they arrive.
        seqs = await self._newest_seqs()
        if seqs:
            self.watermark = max(seqs)
            for seq in range(min(seqs) + 1, self.watermark):
                if seq not in seqs:
                    self.skipped[seq] = None
        self._running = True
        self._task = asyncio.create_task(self._run(stream), name="kernelindex-event-hub")

    async def _newest_seqs(self) -> set[int]:
        """The stored events' numbers among the last MAX_REMEMBERED_SKIPS handed out (or further
        back, window by window, when none of those was used): a range, read at any store size in
        the same time (a sorted read of the newest thousand walked every event: 21 s at a million)."""
        upper = await last_seq(self.db)
        while upper > 0:
            lower = max(0, upper - MAX_REMEMBERED_SKIPS)
            found = await self.db.events.find({"seq": {"$gt": lower, "$lte": upper}}, {"seq": 1, "_id": 0}).to_list()
            if found:
                return {doc["seq"] for doc in found}
            upper = lower
        return set()

    async def stop(self) -> None:
        self._running = False
        if self._gap_timer:
            self._gap_timer.cancel()
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        for subs in self._by_type.values():
            for sub in list(subs):
                sub.closed = True
        self._by_type.clear()

    @property
    def running(self) -> bool:
        return self._running

    async def _open(self, resume_token: Any):
        pipeline = [{"$match": {"operationType": "insert"}}]
        return await self.db.events.watch(pipeline, resume_after=resume_token)

    async def _run(self, stream) -> None:
        token = stream.resume_token
        while self._running:
            try:
                async with stream:
                    while stream.alive:
                        change = await stream.try_next()
                        if change is None:
                            # An empty batch. Some servers (SecantusDB) end a waiting getMore on
                            # a write to any collection; pausing briefly before the next one
                            # turns a burst of writes into a few wake-ups instead of one each.
                            await asyncio.sleep(self.poll_pause_s)
                            continue
                        token = change["_id"]
                        self._receive(change["fullDocument"])
            except asyncio.CancelledError:
                raise
            except PyMongoError as error:
                log.warning("event change stream interrupted (%s); resuming", error)
            if not self._running:
                return
            stream = None
            while self._running and stream is None:
                try:
                    stream = await self._open(token)
                except OperationFailure as error:
                    # The resume point is gone (e.g. history rolled over): start afresh and read
                    # what came after the watermark from the collection instead.
                    log.warning("cannot resume the event change stream (%s); catching up from the log", error)
                    try:
                        stream = await self._open(None)
                        await self._catch_up()
                    except PyMongoError as again:
                        log.warning("cannot reopen the event change stream (%s); retrying", again)
                        stream = None
                        await asyncio.sleep(1.0)
                except PyMongoError as error:
                    log.warning("cannot reopen the event change stream (%s); retrying", error)
                    await asyncio.sleep(1.0)
            if stream is not None:
                token = stream.resume_token

    async def _catch_up(self) -> None:
        """Everything stored after the watermark, up to the newest number handed out now (what
        commits later comes through the stream, opened before this is called)."""
        async for event in self._stored(after=self.watermark, upto=await last_seq(self.db)):
            self._receive(event)

    # ------------------------------------------------------------ ordering

    def _receive(self, event: Doc) -> None:
        seq = event.get("seq")
        if not isinstance(seq, int):
            return
        if seq <= self.watermark:
            # Behind the watermark: a number given up earlier whose insert committed late is
            # released now; anything else was released already (a resumed stream repeating it).
            if seq in self.skipped:
                del self.skipped[seq]
                self._release(event, late=True)
            return
        self._pending[seq] = event
        self._drain()

    def _drain(self) -> None:
        while self.watermark + 1 in self._pending:
            self.watermark += 1
            self._release(self._pending.pop(self.watermark))
        if self._gap_timer:
            self._gap_timer.cancel()
            self._gap_timer = None
        if self._pending:
            self._gap_timer = asyncio.get_running_loop().call_later(self.gap_timeout_s, self._give_up_gap)

    def _give_up_gap(self) -> None:
        self._gap_timer = None
        if not self._pending:
            return
        first = min(self._pending)
        for seq in range(self.watermark + 1, first):
            self.skipped[seq] = None
        while len(self.skipped) > MAX_REMEMBERED_SKIPS:
            self.skipped.popitem(last=False)
        log.info("event seq %d..%d never arrived; releasing later events", self.watermark + 1, first - 1)
        self.watermark = first - 1
        self._drain()

    def _release(self, event: Doc, late: bool = False) -> None:
        self.released += 1
        delivery = _Delivery(event, late)
        for sub in list(self._by_type.get(event.get("type"), ())):
            if sub.filter.matches(event):
                sub._offer(delivery)

    # ------------------------------------------------------------ subscribers

    @contextlib.contextmanager
    def subscribe(self, flt: EventFilter):
        if not self._running:
            raise StreamUnavailable(self.unavailable or "event delivery is not running on this server")
        sub = Subscriber(self, flt, asyncio.Queue(maxsize=self.queue_size))
        sub._arm()
        self._by_type.setdefault(flt.type, set()).add(sub)
        try:
            yield sub
        finally:
            sub.close()

    def _remove(self, sub: Subscriber) -> None:
        subs = self._by_type.get(sub.filter.type)
        if subs is not None:
            subs.discard(sub)

    @property
    def subscriber_count(self) -> int:
        return sum(len(s) for s in self._by_type.values())

    async def backlog(self, flt: EventFilter, *, after: int, upto: int, exclude: frozenset[int] = frozenset()) -> AsyncIterator[Doc]:
        """Stored events matching `flt` with after < seq <= upto, in order, a page at a time."""
        async for event in self._stored(after=after, upto=upto):
            if flt.matches(event) and event["seq"] not in exclude:
                yield event

    async def _stored(self, *, after: int, upto: int) -> AsyncIterator[Doc]:
        """Every stored event with after < seq <= upto, in order, REPLAY_PAGE numbers a read. The
        range alone is sent (callers filter): SecantusDB walks the `seq` index for a filter of
        `seq` alone, while other fields beside it may turn the read into a scan of every event."""
        while after < upto:
            top = min(upto, after + REPLAY_PAGE)
            for event in await self.db.events.find({"seq": {"$gt": after, "$lte": top}}).sort("seq", 1).to_list():
                yield event
            after = top

    # ------------------------------------------------------------ shared look-ups

    def memo(self, seq: int, name: Any, factory: Callable[[], T]) -> T:
        """A value made once per event and shared by every subscriber of this process (e.g. the
        documents an event refers to, or the DataLoaders its deliveries use)."""
        cache_key = (seq, name)
        try:
            return self._per_event[cache_key]
        except KeyError:
            value = self._per_event[cache_key] = factory()
            while len(self._per_event) > 1024:
                self._per_event.popitem(last=False)
            return value

    async def document(self, seq: int, collection: str, key: str) -> Any:
        """`collection[key]` as of event `seq` (its read model where it has one, store/read_models.py):
        fetched once per event for all subscribers."""

        async def fetch() -> Any:
            return read(collection, await self.db[collection].find_one({"_id": key}))

        future = self.memo(seq, (collection, key), lambda: asyncio.ensure_future(fetch()))
        if future.done():
            if future.exception() is not None:
                self._per_event.pop((seq, (collection, key)), None)
            return future.result()
        return await asyncio.shield(future)
