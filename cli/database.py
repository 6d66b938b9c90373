"""Which database a CLI command talks to.

MONGODB_URI if set; else the embedded server that a running `serve` started (its address file in
the home, `store.embedded.home()`). Nothing running: one `error:` line saying how to start it; a
command never starts a database of its own (it would be a second one, or a stray one elsewhere).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from server.settings import Settings
from store.embedded import EmbeddedDatabaseError, no_server_message, running_server_uri


@contextlib.contextmanager
def database_uri(settings: Settings) -> Iterator[str]:
    if settings.mongodb_uri:
        yield settings.mongodb_uri
        return
    uri = running_server_uri()
    if not uri:
        raise EmbeddedDatabaseError(no_server_message())
    yield uri


def with_database(settings: Settings, work):
    """Run `await work(db)` against the command's database, with the schema ensured."""

    async def go(uri: str):
        from store.client import make_client
        from store.schema import ensure_schema

        client = make_client(uri)
        try:
            db = client[settings.database]
            await ensure_schema(db)
            return await work(db)
        finally:
            await client.close()

    with database_uri(settings) as uri:
        return asyncio.run(go(uri))
