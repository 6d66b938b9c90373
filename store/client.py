"""Connecting to the server chosen by MONGODB_URI (or the embedded one)."""

from __future__ import annotations

from pymongo import AsyncMongoClient

DEFAULT_DATABASE = "kernelindex"


def make_client(uri: str, **options) -> AsyncMongoClient:
    # tz_aware: times come back as aware UTC datetimes, as they went in.
    return AsyncMongoClient(uri, tz_aware=True, serverSelectionTimeoutMS=5000, **options)
