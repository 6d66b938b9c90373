"""The KernelIndex public catalog export (`catalog-*.jsonl.zst`): discover → fetch → parse →
normalize → publish, like the other loaders (README.md beside this file).

The export is the seed system's own dump (SamMausberg/KernelIndex `apps/web/scripts/export-catalog.ts`):
one `{"table": ..., "row": {...}}` object a line, Zstandard-compressed, with a `latest.json`
pointer beside it (`file`, `url`, `sha256`, `sizeBytes`, `lines`, `generatedAt`).
"""

SOURCE = "kernelindex-catalog"

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
