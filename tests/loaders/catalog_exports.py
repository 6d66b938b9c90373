"""Catalog exports for tests, cut from the bundled one (real rows; a subset or a deliberate
corruption, each saying what was changed)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import zstandard

BUNDLED_DIR = Path(__file__).resolve().parents[2] / "data" / "kernelindex-catalog"
BUNDLED = BUNDLED_DIR / "catalog-2026-08-16-0022af0b.jsonl.zst"


@cache
def bundled_lines() -> tuple[dict, ...]:
    return tuple(json.loads(line) for line in zstandard.ZstdDecompressor().decompress(BUNDLED.read_bytes()).splitlines())


def subset(operation_slug_contains: str) -> list[dict]:
    """Every row that belongs to the operations whose slug contains the text (their workloads,
    implementations, projects, runs, measurements and record events), and all sources."""
    lines = bundled_lines()
    ops = {item["row"]["id"] for item in lines if item["table"] == "operations" and operation_slug_contains in item["row"]["slug"]}
    impls = {item["row"]["id"]: item["row"] for item in lines if item["table"] == "implementations" and item["row"]["operationId"] in ops}
    runs = {item["row"]["id"] for item in lines if item["table"] == "benchmark_runs" and item["row"]["implementationId"] in impls}
    projects = {row.get("projectId") for row in impls.values()}
    keep = []
    for item in lines:
        table, row = item["table"], item["row"]
        if (
            table == "sources"
            or (table == "projects" and row["id"] in projects)
            or (table in ("operations",) and row["id"] in ops)
            or (table in ("operation_aliases", "workloads", "implementations") and row["operationId"] in ops)
            or (table == "benchmark_runs" and row["id"] in runs)
            or (table in ("measurements", "record_events") and row["runId"] in runs)
        ):
            keep.append(item)
    return keep


def write_export(folder: Path, lines: list[dict], *, pointer: bool = True, mangle: Callable[[bytes], bytes] | None = None) -> Path:
    """Write `lines` as catalog-*.jsonl.zst (and, with `pointer`, its latest.json as the seed's
    exporter writes it, computed before `mangle` touches the compressed bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    body = ("\n".join(json.dumps(item, separators=(",", ":"), ensure_ascii=False) for item in lines) + "\n").encode()
    compressed = zstandard.ZstdCompressor(level=3, write_checksum=True).compress(body)
    digest = hashlib.sha256(compressed).hexdigest()
    name = f"catalog-2026-08-16-{digest[:8]}.jsonl.zst"
    if pointer:
        (folder / "latest.json").write_text(
            json.dumps(
                {"file": name, "url": None, "sha256": digest, "sizeBytes": len(compressed), "lines": len(lines), "generatedAt": None}
            )
        )
    (folder / name).write_bytes(mangle(compressed) if mangle else compressed)
    return folder / name
