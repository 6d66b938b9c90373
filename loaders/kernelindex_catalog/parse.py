"""Decompress the export and split it into `(line, table, row)` records.

Refused as a whole (nothing is written): a zstd stream that does not decompress or ends before
its frame does (truncated) at once; a line that is not a JSON object `{"table", "row"}`, a table
this loader does not know, and a line count other than the pointer's after the rows are checked
too, so that every problem gets its line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import zstandard

from loaders.kernelindex_catalog import TABLES
from loaders.kernelindex_catalog.fetch import CatalogRefused, Fetched

# The 2026-08-16 export is 49 MB of JSON; a bigger expansion than this is not an export.
MAX_DECOMPRESSED_BYTES = 4 << 30
MAX_PROBLEMS = 50


@dataclass(frozen=True)
class Line:
    number: int  # 1-based line of the decompressed export
    table: str
    row: dict


# Compressed bytes read at a time: the export is streamed, never held whole (nor its expansion).
READ_BYTES = 1 << 20


def decompressed_lines(fetched: Fetched) -> Iterator[bytes]:
    """The export's decompressed lines, each with its newline (a last line may lack it), read
    from `fetched.path` a chunk at a time. Refused at once: bytes other than the ones fetch()
    hashed (the file changed since), a stream that is not zstd, one that ends before its frame
    does (truncated) or has bytes after it, or an expansion past MAX_DECOMPRESSED_BYTES."""
    name = fetched.file_name
    stream = zstandard.ZstdDecompressor().decompressobj()
    digest = hashlib.sha256()
    total = 0
    tail = b""
    with open(fetched.path, "rb") as raw:
        while chunk := raw.read(READ_BYTES):
            digest.update(chunk)
            try:
                data = stream.decompress(chunk)
            except zstandard.ZstdError as error:
                raise CatalogRefused([f"{name}: not a valid zstd stream ({error})"]) from None
            total += len(data)
            if total > MAX_DECOMPRESSED_BYTES:
                raise CatalogRefused([f"{name}: decompresses to more than {MAX_DECOMPRESSED_BYTES} bytes"])
            lines = (tail + data).split(b"\n")
            tail = lines.pop()
            for line in lines:
                yield line + b"\n"
            if stream.eof:
                if stream.unused_data or raw.read(1):
                    raise CatalogRefused([f"{name}: bytes after the end of the zstd frame"])
                break
    if digest.hexdigest() != fetched.sha256:
        raise CatalogRefused([f"{name}: changed while it was read (its sha256 is no longer {fetched.sha256})"])
    if not stream.eof:
        raise CatalogRefused([f"{name}: truncated: the zstd frame ends early (after {total} decompressed bytes)"])
    if tail:
        yield tail


@dataclass
class Parsed:
    lines: list[Line]
    problems: list[str]  # bad lines, unknown tables, a wrong line count: the rows are still checked


def split_lines(fetched: Fetched, raw_lines: Iterable[bytes]) -> Parsed:
    name = fetched.file_name
    problems: list[str] = []
    lines: list[Line] = []
    unknown: dict[str, list[int]] = {}
    number = 0
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.endswith(b"\n"):
            problems.append(f"{name}: the last line has no newline (truncated)")
        try:
            item = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            problems.append(f"{name}: line {number}: not JSON ({error})")
            continue
        if not isinstance(item, dict) or set(item) != {"table", "row"}:
            problems.append(f"{name}: line {number}: must be an object with exactly the keys table and row")
            continue
        table, row = item["table"], item["row"]
        if not isinstance(table, str) or table not in TABLES:
            unknown.setdefault(str(table), []).append(number)
            continue
        if not isinstance(row, dict):
            problems.append(f"{name}: line {number}: row: must be an object")
            continue
        lines.append(Line(number, table, row))
    for table, numbers in unknown.items():
        where = f"line {numbers[0]}" + (f" and {len(numbers) - 1} more" if len(numbers) > 1 else "")
        problems.append(f"{name}: {where}: unknown table {table!r} (known: {', '.join(TABLES)})")
    pointer = fetched.pointer
    if pointer is not None and number != pointer.lines:
        problems.append(f"{name}: {number} lines, latest.json says {pointer.lines}")
    return Parsed(lines, problems)


def capped(problems: list[str]) -> list[str]:
    if len(problems) <= MAX_PROBLEMS:
        return problems
    return [*problems[:MAX_PROBLEMS], f"… and {len(problems) - MAX_PROBLEMS} more problems of the same export"]


def parse(fetched: Fetched) -> Parsed:
    """The lines that are rows of known tables, and the problems of the others (normalize.py
    reports them with its own, all at once). Streamed: the file is read and decompressed a chunk
    at a time and each line parsed as it comes; only the rows are kept."""
    return split_lines(fetched, decompressed_lines(fetched))
