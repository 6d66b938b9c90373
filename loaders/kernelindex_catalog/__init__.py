"""The KernelIndex public catalog export (`catalog-*.jsonl.zst`): discover → fetch → parse →
normalize → publish, like the other loaders (README.md beside this file).

The export is the seed system's own dump (SamMausberg/KernelIndex `apps/web/scripts/export-catalog.ts`):
one `{"table": ..., "row": {...}}` object a line, Zstandard-compressed, with a `latest.json`
pointer beside it (`file`, `url`, `sha256`, `sizeBytes`, `lines`, `generatedAt`).
"""

from registry.catalog_format import KERNEL_TABLES, SERVING_TABLES, TABLES  # noqa: F401 (the format, one place)

SOURCE = "kernelindex-catalog"
