"""NVIDIA SOL-ExecBench leaderboard loader.

Steps, one module each, in the order they run:

- `discover`  — which kernels to import (GET /kernels, filtered by --kernel / --limit)
- `fetch`     — the raw responses, from the live API (`HttpSource`) or a snapshot directory
                (`SnapshotDirSource`); kernel detail and every page of submissions
- `parse`     — pydantic models of the fields we use; strict about those, blind to the rest
- `normalize` — kernel → OperationSpec + WorkloadSuite; submission → ImplementationRevision +
                BenchmarkRun, plus the shared BenchmarkProtocol and ExecutionEnvironment
- `loader`    — the steps as the import pipeline (loaders/pipeline.py) runs them; the pipeline
                looks up unchanged records and publishes (snapshots first, then runs in batches)

`report` prints what happened.
"""

SOURCE = "sol-execbench"
