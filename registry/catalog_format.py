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

# Each table that holds manifests -> the row's column with the manifest's digest (None: the export
# names the row by id only). `benchmark_runs` holds three manifests a row (run, protocol,
# environment): see `manifests_of`.
DIGEST_COLUMNS = {
    "projects": None,
    "operations": "semanticDigest",
    "workloads": "workloadDigest",
    "implementations": "implementationDigest",
    "model_revisions": "modelDigest",
    "serving_stack_revisions": "stackDigest",
    "serving_configurations": "configurationDigest",
    "serving_workloads": "workloadDigest",
    "serving_runs": "runDigest",
}


def manifests_of(table: str, row: dict) -> list[tuple[dict, str | None]]:
    """The manifests one export row holds, each with the digest the export records for it (None
    where it records none): what a check of the export against the format walks."""
    if table in DIGEST_COLUMNS:
        column = DIGEST_COLUMNS[table]
        return [(row["manifest"], row[column] if column else None)]
    if table == "benchmark_runs":
        bundle = row["manifest"]
        run = bundle["run"]
        return [
            (run, row["runDigest"]),
            (bundle["protocol"], run["spec"]["protocolDigest"]),
            (bundle["environment"], run["spec"]["environmentDigest"]),
        ]
    return []
