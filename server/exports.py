"""Versioned bulk exports: the registry as a KernelIndex catalog export (`catalog-*.jsonl.zst`,
rows from store/catalog_export.py) with its `latest.json` pointer, as the seed system publishes
them, so that `kernelindex import kernelindex-catalog URL` reads ours.

- `write_export` streams the rows through a Zstandard compressor into a temporary file in the
  export folder, hashing the compressed bytes as they are written (an export of any size is never
  held in memory), fsyncs it, and only then renames it to its name (`catalog-DATE-SHA8.jsonl.zst`,
  or the one `kernelindex export --catalog` was given), then replaces `latest.json` the same way:
  a reader sees the previous export or the new one, never a half-written file.
- It is built from one consistent state: the data's fingerprint is read before and after the
  rows; when a write landed in between, the file is dropped and the export made again.
- `Exports` (the registry subgraph's `/exports/latest.json` and `/exports/{file}`, which the
  gateway forwards like the pages) serves the newest export while the data's fingerprint is still
  the one it was built from, and makes a new one when it is not: on demand, one at a time (a lock
  file serialises the replicas that share the folder), the last `KEEP` files kept so that a
  client that read the previous pointer can still fetch its file.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import zstandard
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from registry.catalog_format import POINTER
from store.catalog_export import catalog_rows, fingerprint, line
from store.client import Database, StoreError, unavailable

EXPORT_NAME = re.compile(r"catalog-\d{4}-\d{2}-\d{2}-[0-9a-f]{8}\.jsonl\.zst")
LEVEL = 12  # zstd: 3.2 MB for the bundled catalog's 40,795 lines (the seed's level-19 file: 3.1 MB)
CHUNK_BYTES = 1 << 20  # lines are compressed a chunk at a time, off the event loop
ATTEMPTS = 3  # an export that a concurrent write overlapped is made again, at most this often
KEEP = 3  # export files kept in the folder (the newest, and the ones older pointers name)


class ExportError(Exception):
    """No consistent export could be made (one line for the client)."""


class _HashingFile:
    """The export file as the compressor writes it: hashed and counted on the way."""

    def __init__(self, raw) -> None:
        self.raw, self.sha256, self.size = raw, hashlib.sha256(), 0

    def write(self, data: bytes) -> int:
        self.raw.write(data)
        self.sha256.update(data)
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        self.raw.flush()


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _replace_atomically(path: Path, data: bytes, mode: int) -> None:
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            os.fchmod(out.fileno(), mode)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _fsync_dir(path.parent)


async def _write_once(db: Database, folder: Path, now: datetime) -> tuple[Path, dict[str, Any], str | None]:
    """Rows → a temporary file; (that file, its pointer without a name, the fingerprint if the
    data did not change while it was read, else None)."""
    before = await fingerprint(db)
    fd, temporary = tempfile.mkstemp(prefix=".catalog-", suffix=".tmp", dir=folder)
    path = Path(temporary)
    counts: dict[str, int] = {}
    left_out: dict[str, int] = {}
    lines = 0
    try:
        with os.fdopen(fd, "wb") as raw:
            hashed = _HashingFile(raw)
            compressor = zstandard.ZstdCompressor(level=LEVEL, write_checksum=True).stream_writer(hashed, closefd=False)
            chunk: list[bytes] = []
            pending = 0
            async for table, row in catalog_rows(db, now, left_out):
                data = line(table, row)
                chunk.append(data)
                pending += len(data)
                counts[table] = counts.get(table, 0) + 1
                lines += 1
                if pending >= CHUNK_BYTES:
                    await asyncio.to_thread(compressor.write, b"".join(chunk))  # zstd lets go of the GIL
                    chunk, pending = [], 0
            if chunk:
                await asyncio.to_thread(compressor.write, b"".join(chunk))
            await asyncio.to_thread(compressor.close)
            raw.flush()
            os.fchmod(raw.fileno(), 0o644)  # mkstemp's 0600: an export is public
            os.fsync(raw.fileno())
        after = await fingerprint(db)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    pointer = {"sha256": hashed.sha256.hexdigest(), "sizeBytes": hashed.size, "lines": lines, "generatedAt": _iso(now)}
    return path, {**pointer, "counts": counts, "leftOut": left_out}, before if before == after else None


async def write_export(db: Database, folder: Path, *, name: str | None = None, base_url: str | None = None) -> dict[str, Any]:
    """Make an export of `db` in `folder` (named `name`, else `catalog-DATE-SHA8.jsonl.zst`) and
    point `folder/latest.json` at it; return the pointer (with `dataVersion`, the fingerprint it
    was built from, and `leftOut`, rows not in the v1alpha1 format per table:
    store/catalog_export.py), plus `counts` (rows per table). `base_url`: where the folder is served
    (the pointer's `url` is the file there)."""
    folder.mkdir(parents=True, exist_ok=True)
    for _ in range(ATTEMPTS):
        now = datetime.now(UTC)
        temporary, pointer, version = await _write_once(db, folder, now)
        if version is None:
            temporary.unlink(missing_ok=True)
            continue
        file_name = name or f"catalog-{now:%Y-%m-%d}-{pointer['sha256'][:8]}.jsonl.zst"
        os.replace(temporary, folder / file_name)
        _fsync_dir(folder)
        counts = pointer.pop("counts")
        url = f"{base_url.rstrip('/')}/{file_name}" if base_url else None
        # The seed's six fields, then ours (the importer reads only its six): what it was built
        # from, and the rows not in the v1alpha1 format that were left out (per table).
        pointer = {"file": file_name, "url": url, **pointer, "dataVersion": version, "leftOut": pointer.pop("leftOut")}
        _replace_atomically(folder / POINTER, (json.dumps(pointer, indent=2) + "\n").encode(), mode=0o644)
        return {**pointer, "counts": counts}
    raise ExportError(f"the data changed while each of {ATTEMPTS} exports was read; try again")


def _prune(folder: Path, keep_file: str) -> None:
    exports = sorted((p for p in folder.iterdir() if EXPORT_NAME.fullmatch(p.name)), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in [p for p in exports if p.name != keep_file][KEEP - 1 :]:
        old.unlink(missing_ok=True)


class Exports:
    """The export folder of one stack (HOME/exports), shared by the registry subgraph's replicas."""

    def __init__(self, folder: Path, base_url: str) -> None:
        self.folder, self.base_url = folder, base_url.rstrip("/") + "/exports"
        self._lock = asyncio.Lock()  # one export at a time in this process

    def _current(self) -> dict[str, Any] | None:
        try:
            pointer = json.loads((self.folder / POINTER).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(pointer, dict) or not EXPORT_NAME.fullmatch(str(pointer.get("file"))):
            return None
        return pointer if (self.folder / pointer["file"]).is_file() else None

    async def latest(self, db: Database) -> dict[str, Any]:
        """The pointer of an export of the data as it is now (made if there is none)."""
        version = await fingerprint(db)
        current = self._current()
        if current is not None and current.get("dataVersion") == version:
            return current
        async with self._lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(self.folder / ".lock", "w") as lock:
                await asyncio.to_thread(fcntl.flock, lock.fileno(), fcntl.LOCK_EX)  # another replica's export first
                current = self._current()
                if current is not None and current.get("dataVersion") == await fingerprint(db):
                    return current
                pointer = await write_export(db, self.folder, base_url=self.base_url)
                pointer.pop("counts")
                _prune(self.folder, pointer["file"])
                return pointer

    async def latest_json(self, request: Request) -> Response:
        try:
            pointer = await self.latest(request.app.state.db)
        except ExportError as error:
            return JSONResponse({"error": str(error)}, status_code=503, headers={"retry-after": "5"})
        except StoreError as error:
            _, message = unavailable(error) or ("", f"the database failed: {type(error).__name__}")
            return JSONResponse({"error": message}, status_code=503, headers={"retry-after": "5"})
        return JSONResponse(pointer, headers={"cache-control": "no-cache"})

    async def export_file(self, request: Request) -> Response:
        name = request.path_params["name"]
        path = self.folder / name
        if not EXPORT_NAME.fullmatch(name) or not path.is_file():
            return JSONResponse({"error": f"no export named {name!r}; /exports/latest.json names the newest"}, status_code=404)
        # Named by its content (the date and its sha256's first 8 hex digits): never changes.
        return FileResponse(path, media_type="application/zstd", headers={"cache-control": "public, max-age=31536000, immutable"})

    def routes(self) -> list[Route]:
        return [
            Route(f"/exports/{POINTER}", self.latest_json, methods=["GET", "HEAD"]),
            Route("/exports/{name}", self.export_file, methods=["GET", "HEAD"]),
        ]
