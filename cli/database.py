"""Which database a CLI command talks to.

MONGODB_URI if set; else the embedded server that a running `serve` started; else an embedded
server started for the length of the command (on the same files `serve` uses).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from server.settings import Settings
from store.embedded import EmbeddedServer, home, running_server_uri


def embedded_storage():
    return home() / "db"


@contextlib.contextmanager
def database_uri(settings: Settings) -> Iterator[str]:
    if settings.mongodb_uri:
        yield settings.mongodb_uri
        return
    uri = running_server_uri()
    if uri:
        yield uri
        return
    with EmbeddedServer(embedded_storage(), log_path=home() / "secantusd.log") as server:
        yield server.uri


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
