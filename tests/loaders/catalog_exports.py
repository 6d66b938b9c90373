"""Catalog exports for tests, cut from the bundled one (real rows; a subset or a deliberate
corruption, each saying what was changed)."""

from __future__ import annotations

import copy
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


def one_submission_with_code(external_id: str, code: str | None) -> list[dict]:
    """The rows of one GPU MODE submission (`externalId`, e.g. "submission/30771"): its runs with
    their measurements, workloads, operation, implementation and project, and all sources — and,
    unless `code` is None, ONE DELIBERATE CHANGE: the implementation's `source` facts are those of `code` (a SYNTHETIC
    text: the export holds the real code's sha256 and length, not its text), so the implementation
    digest and each run's `implementationDigest` and `runDigest` are made again for it (RFC 8785,
    registry/digest.py). Everything else is the export's own (cohort keys do not name the
    implementation). Record events are left out (they name the submission's neighbours)."""
    from registry.digest import digest_of
    from registry.digest_check import identity

    lines = bundled_lines()

    def native(row: dict) -> dict:
        return row["manifest"]["run"]["spec"]["sourceNative"]

    runs = [item["row"] for item in lines if item["table"] == "benchmark_runs" and native(item["row"]).get("externalId") == external_id]
    if not runs:
        raise ValueError(f"no run of {external_id} in the bundled export")
    implementations = {run["implementationId"] for run in runs}
    workloads = {run["workloadId"] for run in runs}
    run_ids = {run["id"] for run in runs}
    implementation = next(item["row"] for item in lines if item["table"] == "implementations" and item["row"]["id"] in implementations)
    operations = {implementation["operationId"]}
    keep = [
        copy.deepcopy(item)
        for item in lines
        if item["table"] == "sources"
        or (item["table"] == "projects" and item["row"]["id"] == implementation.get("projectId"))
        or (item["table"] == "operations" and item["row"]["id"] in operations)
        or (item["table"] == "operation_aliases" and item["row"]["operationId"] in operations)
        or (item["table"] == "workloads" and item["row"]["id"] in workloads)
        or (item["table"] == "implementations" and item["row"]["id"] in implementations)
        or (item["table"] == "benchmark_runs" and item["row"]["id"] in run_ids)
        or (item["table"] == "measurements" and item["row"]["runId"] in run_ids)
    ]
    if code is None:
        return keep
    data = code.encode("utf-8")
    for item in keep:
        row = item["row"]
        if item["table"] == "implementations":
            row["manifest"]["spec"]["source"].update(contentDigest="sha256:" + hashlib.sha256(data).hexdigest(), sizeBytes=len(data))
            row["implementationDigest"] = digest = digest_of(identity(row["manifest"]))
    for item in keep:
        row = item["row"]
        if item["table"] == "benchmark_runs":
            row["manifest"]["run"]["spec"]["implementationDigest"] = digest
            row["runDigest"] = digest_of(identity(row["manifest"]["run"]))
    return keep
