"""The KernelIndex catalog export's tables (the seed system's `apps/web/scripts/export-catalog.ts`,
SamMausberg/KernelIndex): one `{"table": ..., "row": {...}}` object a line, Zstandard-compressed,
with a `latest.json` pointer beside it (`file`, `url`, `sha256`, `sizeBytes`, `lines`,
`generatedAt`). Read by loaders/kernelindex_catalog/, written by store/catalog_export.py."""

from __future__ import annotations

# The tables of the export, in the order the seed's exporter writes them (export-catalog.ts).
KERNEL_TABLES = (
    "sources",
    "projects",
    "operations",
    "operation_aliases",
    "workloads",
    "implementations",
    "benchmark_runs",
    "measurements",
    "record_events",
    "artifacts",
)
SERVING_TABLES = (
    "model_revisions",
    "serving_stack_revisions",
    "serving_configurations",
    "serving_workloads",
    "serving_runs",
    "serving_measurements",
)
TABLES = KERNEL_TABLES + SERVING_TABLES

# Serving tables stored one collection each (same name), `_id` = the row's digest field.
SERVING_COLLECTIONS = {
    "model_revisions": "modelDigest",
    "serving_stack_revisions": "stackDigest",
    "serving_configurations": "configurationDigest",
    "serving_workloads": "workloadDigest",
}

POINTER = "latest.json"
