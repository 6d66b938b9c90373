"""Read the export's bytes (a file or a URL) and check them against `latest.json`.

The pointer (the seed's exporter writes it: `{file, url, sha256, sizeBytes, lines, generatedAt}`)
is checked when it names the export read: its sha256 and size here, its line count after
decompression (parse.py). A pointer that names another export (an older file beside a newer
pointer) is noted and not applied; no pointer at all is noted too (the zstd frame's checksum and
content size, and every row's digests, are still checked).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from loaders.common.http import FetchError, HttpClient
from loaders.kernelindex_catalog.discover import Location, beside, is_url

# A `catalog-*.jsonl.zst` export is 3-5 MB today; refuse anything absurd before reading it.
MAX_EXPORT_BYTES = 1 << 30
MAX_POINTER_BYTES = 1 << 16  # latest.json is a few hundred bytes


class CatalogRefused(Exception):
    """The export cannot be imported; `problems` holds one line each (printed as `error:` lines)."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class Pointer:
    file: str
    sha256: str
    size_bytes: int
    lines: int
    url: str | None = None
    generated_at: str | None = None

    def to_json(self) -> dict:
        return {
            "file": self.file,
            "url": self.url,
            "sha256": self.sha256,
            "sizeBytes": self.size_bytes,
            "lines": self.lines,
            "generatedAt": self.generated_at,
        }


@dataclass
class Fetched:
    """The export's bytes are never held whole: `path` is the local file, or a temporary file a
    URL was downloaded into (`downloaded`: removed by `discard()`); parse.py streams it."""

    location: str  # the path or URL read
    file_name: str
    path: Path
    size: int
    sha256: str
    fetched_at: datetime
    pointer: Pointer | None  # applied to this export (it names it)
    notes: list[str] = field(default_factory=list)
    downloaded: bool = False

    def discard(self) -> None:
        if self.downloaded:
            self.path.unlink(missing_ok=True)


def parse_pointer(raw: bytes, where: str) -> Pointer:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CatalogRefused([f"{where}: not JSON ({error})"]) from None
    if not isinstance(data, dict):
        raise CatalogRefused([f"{where}: must be a JSON object"])
    problems = []
    if not isinstance(data.get("file"), str) or not re.fullmatch(r"[A-Za-z0-9._-]+\.jsonl\.zst", data.get("file", "")):
        problems.append(f"{where}: file: must name a .jsonl.zst file")
    if not isinstance(data.get("sha256"), str) or not re.fullmatch(r"[0-9a-f]{64}", data.get("sha256", "")):
        problems.append(f"{where}: sha256: must be 64 lowercase hex digits")
    for name in ("sizeBytes", "lines"):
        value = data.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.append(f"{where}: {name}: must be a non-negative integer")
    if problems:
        raise CatalogRefused(problems)
    return Pointer(
        file=data["file"],
        sha256=data["sha256"],
        size_bytes=data["sizeBytes"],
        lines=data["lines"],
        url=data.get("url") if isinstance(data.get("url"), str) else None,
        generated_at=data.get("generatedAt") if isinstance(data.get("generatedAt"), str) else None,
    )


async def _read(target: str, *, required: bool) -> bytes | None:
    """The bytes of a small file (latest.json) at a path or URL; None when it is not there and
    not `required`."""
    if is_url(target):
        parts = urlsplit(target)
        client = HttpClient(f"{parts.scheme}://{parts.netloc}", attempts=3)
        try:
            response = await client.get(parts.path + (f"?{parts.query}" if parts.query else ""))
        except FetchError as error:
            if not required and error.response is not None and error.response.status == 404:
                return None
            raise CatalogRefused([f"{target}: {error.reason}"]) from None
        finally:
            await client.aclose()
        return response.body
    path = Path(target)
    if not path.is_file():
        if required:
            raise CatalogRefused([f"{target}: no such file"])
        return None
    if path.stat().st_size > MAX_POINTER_BYTES:
        raise CatalogRefused([f"{target}: larger than {MAX_POINTER_BYTES} bytes"])
    return path.read_bytes()


def _hash_file(path: Path) -> tuple[int, str]:
    """(size, sha256) of a file, read a chunk at a time."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as raw:
        while chunk := raw.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


async def _export(target: str) -> tuple[Path, int, str, bool]:
    """(path, size, sha256, downloaded) of the export: a local file hashed where it lies, a URL
    downloaded into a temporary file while hashed, never held in memory whole."""
    if is_url(target):
        parts = urlsplit(target)
        client = HttpClient(f"{parts.scheme}://{parts.netloc}", attempts=3)
        handle, name = tempfile.mkstemp(prefix="kernelindex-catalog-", suffix=".jsonl.zst")
        os.close(handle)
        try:
            size, sha256 = await client.download(parts.path + (f"?{parts.query}" if parts.query else ""), Path(name), MAX_EXPORT_BYTES)
        except FetchError as error:
            Path(name).unlink(missing_ok=True)
            raise CatalogRefused([f"{target}: {error.reason}"]) from None
        finally:
            await client.aclose()
        return Path(name), size, sha256, True
    path = Path(target)
    if not path.is_file():
        raise CatalogRefused([f"{target}: no such file"])
    if path.stat().st_size > MAX_EXPORT_BYTES:
        raise CatalogRefused([f"{target}: larger than {MAX_EXPORT_BYTES} bytes"])
    size, sha256 = _hash_file(path)
    return path, size, sha256, False


async def fetch(location: Location) -> Fetched:
    notes: list[str] = []
    raw_pointer = await _read(location.pointer, required=location.named_by_pointer)
    pointer = parse_pointer(raw_pointer, location.pointer) if raw_pointer is not None else None
    export = location.export
    if location.named_by_pointer:
        export = beside(location.pointer, pointer.file)
    path, size, sha256, downloaded = await _export(export)
    fetched = Fetched(export, "", path, size, sha256, datetime.now(UTC), pointer, notes, downloaded)
    fetched.file_name = file_name = Path(urlsplit(export).path).name if is_url(export) else Path(export).name
    if pointer is None:
        notes.append(f"no {Path(location.pointer).name} beside {file_name}: its sha256, size and line count were not checked")
    elif pointer.file != file_name:
        notes.append(f"{location.pointer} names {pointer.file}, not {file_name}: not applied")
        fetched.pointer = None
    else:
        problems = []
        if size != pointer.size_bytes:
            problems.append(f"{file_name}: {size} bytes, {Path(location.pointer).name} says {pointer.size_bytes} (truncated or replaced)")
        if sha256 != pointer.sha256:
            problems.append(f"{file_name}: sha256 {sha256}, {Path(location.pointer).name} says {pointer.sha256}")
        if problems:
            fetched.discard()
            raise CatalogRefused(problems)
    return fetched


def file_stat(location: Location) -> dict[str, Any] | None:
    """What identifies a local export file without reading it: its absolute path, size and
    modification time (ns), and the sha256 its latest.json states (None for a URL, or a file that
    is not there: the fetch says why). An import record holding the same (store.catalog
    `imported_file`) was made from this file, hashed then; a replaced file changes its mtime (or
    its latest.json its sha256), so it is hashed again."""
    if location.is_url or is_url(location.pointer):
        return None
    pointer_sha256 = None
    export = location.export
    pointer_path = Path(location.pointer)
    if pointer_path.is_file() and pointer_path.stat().st_size < 1 << 16:
        try:
            data = json.loads(pointer_path.read_bytes())
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None  # the fetch reports it
        if not isinstance(data, dict) or not isinstance(data.get("file"), str):
            return None
        if location.named_by_pointer:
            export = beside(location.pointer, data["file"])
        if Path(export).name == data["file"]:
            pointer_sha256 = data.get("sha256") if isinstance(data.get("sha256"), str) else None
    path = Path(export)
    if not export or not path.is_file():
        return None
    info = path.stat()
    return {"path": str(path.resolve()), "sizeBytes": info.st_size, "mtimeNs": info.st_mtime_ns, "pointerSha256": pointer_sha256}
