"""`loaders/gpumode/catalog_problems.json`: the GPU MODE boards the KernelIndex catalog curates,
cut from the bundled export (data/kernelindex-catalog/, real rows, Apache-2.0; NOTICE there).

For each board name KernelBot uses (a flat row's `problem_name`, a per-shape board's name in the
`leaderboards` config) the export holds what no GPU MODE row says: the OperationSpec the catalog
transcribed from the board's task.yml, whether its runs are per-shape (one WorkloadCase per
benchmark) or one aggregate score (the board's WorkloadSuite), and that suite. The board of a
catalog run is its `sourceNative.benchmark` (`{board}/{case}` for per-shape runs).

`write()` writes the file; tests/loaders/test_gpumode_catalog_identity.py checks that the file is
its output."""

from __future__ import annotations

import json
from pathlib import Path

from tests.loaders.catalog_exports import bundled_lines

TARGET = Path(__file__).resolve().parents[2] / "loaders" / "gpumode" / "catalog_problems.json"
SOURCE = "gpumode-kernelbot"


def _manifest(manifest: dict) -> dict:
    return {key: manifest[key] for key in ("apiVersion", "kind", "metadata", "spec")}


def extract() -> dict:
    tables: dict[str, dict[str, dict]] = {}
    for item in bundled_lines():
        row = item["row"]
        tables.setdefault(item["table"], {})[row.get("id") or str(len(tables.get(item["table"], {})))] = row
    source_id = next(row["id"] for row in tables["sources"].values() if row["slug"] == SOURCE)
    boards: dict[str, dict] = {}
    for run in tables["benchmark_runs"].values():
        if run["sourceId"] != source_id:
            continue
        workload = tables["workloads"][run["workloadId"]]
        operation = tables["operations"][workload["operationId"]]
        benchmark = run["manifest"]["run"]["spec"]["sourceNative"]["benchmark"]
        per_shape = workload["manifest"]["kind"] == "WorkloadCase"
        board = benchmark.rsplit("/", 1)[0] if per_shape else benchmark
        entry = {
            "scoring": "per-shape" if per_shape else "aggregate",
            "operation": _manifest(operation["manifest"]),
            "suite": None if per_shape else _manifest(workload["manifest"]),
        }
        if boards.setdefault(board, entry) != entry:
            raise ValueError(f"board {board}: the export's runs disagree on its operation or suite")
    return {
        "about": (
            "The GPU MODE boards the KernelIndex catalog export curates, by KernelBot's board name: "
            "the catalog's OperationSpec (transcribed by the catalog from gpu-mode/reference-kernels task.yml), "
            "per-shape or aggregate, and an aggregate board's WorkloadSuite. Cut from "
            "data/kernelindex-catalog/catalog-2026-08-16-0022af0b.jsonl.zst (SamMausberg/KernelIndex, "
            "Apache-2.0; NOTICE there) by tests/loaders/gpumode_catalog_problems.py. Do not edit by hand."
        ),
        "export": "catalog-2026-08-16-0022af0b.jsonl.zst",
        "boards": dict(sorted(boards.items())),
    }


def write() -> None:
    TARGET.write_text(json.dumps(extract(), indent=1, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write()
