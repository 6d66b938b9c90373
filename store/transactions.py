"""Running a multi-document transaction that retries what the server says may be retried.

Like the driver's `with_transaction`: the whole callback runs again on a
`TransientTransactionError` (a write conflict with a concurrent writer, a dropped connection) and
the commit is retried on `UnknownTransactionCommitResult`; so every callback must read what it
depends on inside the transaction and build its writes afresh on each attempt. Unlike it, a server
that cannot be reached at all (server selection timed out) is not retried for two minutes: the
caller gets the error at once and reports it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError, ServerSelectionTimeoutError

T = TypeVar("T")

RETRY_FOR_S = 30.0


def _label(error: BaseException, label: str) -> bool:
    return isinstance(error, PyMongoError) and not isinstance(error, ServerSelectionTimeoutError) and error.has_error_label(label)


async def in_transaction(db: AsyncDatabase, work: Callable[[AsyncClientSession], Awaitable[T]]) -> T:
    started = time.monotonic()
    attempt = 0
    async with db.client.start_session() as session:
        while True:
            attempt += 1
            await session.start_transaction()
            try:
                result = await work(session)
            except BaseException as error:
                if session.in_transaction:
                    await session.abort_transaction()
                if _label(error, "TransientTransactionError") and time.monotonic() - started < RETRY_FOR_S:
                    # Back off a little, with jitter, so conflicting writers stop colliding.
                    await asyncio.sleep(random.uniform(0, min(0.005 * 2**attempt, 0.5)))
                    continue
                raise
            try:
                while True:
                    try:
                        await session.commit_transaction()
                        return result
                    except PyMongoError as error:
                        if _label(error, "UnknownTransactionCommitResult") and time.monotonic() - started < RETRY_FOR_S:
                            continue  # the driver makes a retried commit idempotent
                        raise
            except PyMongoError as error:
                if _label(error, "TransientTransactionError") and time.monotonic() - started < RETRY_FOR_S:
                    continue
                raise
