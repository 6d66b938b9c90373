"""Connecting to the server chosen by MONGODB_URI (or the embedded one)."""

from __future__ import annotations

from urllib.parse import parse_qsl

from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import ConnectionFailure, PyMongoError

DEFAULT_DATABASE = "kernelindex"

# What the layers above the store hold and catch, without importing the driver themselves.
Database = AsyncDatabase
StoreError = PyMongoError  # any failure of the database or the driver
StoreUnreachable = ConnectionFailure  # the server could not be reached

# A write is acknowledged only once it is in the journal of a majority of the replica set (on a
# single server: in its journal), so an acknowledged run survives a crash.
DURABLE_WRITES = {"w": "majority", "journal": True}


def make_client(uri: str, **options) -> AsyncMongoClient:
    # A URI that names its own write concern keeps it.
    named = {key.lower() for key, _ in parse_qsl(uri.partition("?")[2])}
    durable = {key: value for key, value in DURABLE_WRITES.items() if key.lower() not in named}
    # tz_aware: times come back as aware UTC datetimes, as they went in.
    return AsyncMongoClient(uri, tz_aware=True, serverSelectionTimeoutMS=5000, **{**durable, **options})
