"""GPU MODE KernelBot competition results loader (Hugging Face dataset `GPUMODE/kernelbot-data`,
read through the datasets-server API; licence: Researcher Reciprocity License v1.0, attribution
to GPU MODE and the KernelBot dataset).

Steps, one module each, in the order they run:

- `discover`  — the dataset's configs (GET /splits) and its boards (config `leaderboards`)
- `fetch`     — every page of a config (GET /rows), live (`HttpSource`) or from a snapshot
                directory (`SnapshotDirSource`)
- `parse`     — pydantic models of the rows: boards, per-shape runs (per-case statistics),
                flat submissions (one score)
- `normalize` — board → OperationSpec; the cases' `spec` → WorkloadSuite; GPU →
                ExecutionEnvironment; KernelBot's harness and ranking rule → BenchmarkProtocol;
                each user's best submission per board and GPU → ImplementationRevision + BenchmarkRun
- `catalog_identity` — for the boards the KernelIndex catalog curates (`catalog_problems.json`):
                the same rows as the catalog's v1alpha1 manifests (source `gpumode-kernelbot`, one
                run per case of a per-shape board), so that a submission in both is one record
- `loader`    — the steps as the import pipeline (loaders/pipeline.py) runs them; the pipeline
                looks up unchanged records and publishes (snapshots first, then runs in batches)

`report` prints what happened.
"""

SOURCE = "gpumode"
DATASET = "GPUMODE/kernelbot-data"
ATTRIBUTION = (
    "GPU MODE KernelBot dataset (GPUMODE/kernelbot-data), Researcher Reciprocity License v1.0; "
    "data by GPU MODE and the KernelBot competition participants"
)
