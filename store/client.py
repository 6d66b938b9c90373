"""Connecting to the server chosen by MONGODB_URI (or the embedded one)."""

from __future__ import annotations

import os
from urllib.parse import parse_qsl

import pymongo
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import ConnectionFailure, ExecutionTimeout, OperationFailure, PyMongoError

DEFAULT_DATABASE = "kernelindex"

# What the layers above the store hold and catch, without importing the driver themselves.
Database = AsyncDatabase
StoreError = PyMongoError  # any failure of the database or the driver
StoreUnreachable = ConnectionFailure  # the server could not be reached


def database_timeout(seconds: float):
    """A context in which every database call fails once `seconds` have passed since it was
    entered (the driver's client-side operation timeout, pymongo.timeout)."""
    return pymongo.timeout(seconds)


# What a database says when it cannot write to its storage (SecantusDB passes the OS error on).
_STORAGE_FAILURES = ("no space left", "read-only file system", "errno 28", "errno 30", "enospc", "erofs", "disk full", "permission denied")


# Where the embedded database keeps its data, for telling a failed write's cause (`serve` sets it
# for itself and its children); SecantusDB answers a write its disk refuses with a bare
# "internal server error".
STORAGE_PATH_ENV = "KERNELINDEX_STORAGE_PATH"
MIN_FREE_BYTES = 1 << 20


def storage_problem(path: str | os.PathLike | None) -> str | None:
    """Why a database cannot write its data at `path` ("PATH: read-only file system", "PATH: no
    space left on device (N bytes free)"), or None if it looks writable."""
    if not path:
        return None
    try:
        stat = os.statvfs(path)
    except OSError as error:
        return f"{path}: {error.strerror}"
    if stat.f_flag & os.ST_RDONLY:
        return f"{path}: read-only file system"
    free = stat.f_bavail * stat.f_frsize
    if free < MIN_FREE_BYTES:
        return f"{path}: no space left on device ({free:,} bytes free)"
    return None


def unavailable(error: BaseException | None, storage_path: str | os.PathLike | None = None) -> tuple[str, str] | None:
    """(code, message) when `error` says the database is unavailable rather than that the
    request is wrong: STORAGE_UNAVAILABLE (it cannot write its data: a full or read-only disk,
    told from the message or from the state of `storage_path`, default $KERNELINDEX_STORAGE_PATH)
    or DATABASE_UNAVAILABLE (it did not answer in time, or cannot be reached); else None."""
    if not isinstance(error, PyMongoError):
        return None
    text = str(error).lower()
    if isinstance(error, OperationFailure):
        if any(s in text for s in _STORAGE_FAILURES):
            return "STORAGE_UNAVAILABLE", f"the database cannot write to its storage ({str(error)[:200]})"
        if error.code == 1 and (problem := storage_problem(storage_path or os.environ.get(STORAGE_PATH_ENV))):
            return "STORAGE_UNAVAILABLE", f"the database cannot write to its storage: {problem}"
    if isinstance(error, (ConnectionFailure, ExecutionTimeout)) or "timed out" in text:
        return "DATABASE_UNAVAILABLE", "the database did not answer in time; try again later"
    return None


# A write is acknowledged only once it is in the journal of a majority of the replica set (on a
# single server: in its journal), so an acknowledged run survives a crash.
DURABLE_WRITES = {"w": "majority", "journal": True}


def make_client(uri: str, **options) -> AsyncMongoClient:
    # A URI that names its own write concern keeps it.
    named = {key.lower() for key, _ in parse_qsl(uri.partition("?")[2])}
    durable = {key: value for key, value in DURABLE_WRITES.items() if key.lower() not in named}
    # tz_aware: times come back as aware UTC datetimes, as they went in.
    return AsyncMongoClient(uri, tz_aware=True, serverSelectionTimeoutMS=5000, **{**durable, **options})
