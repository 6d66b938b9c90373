"""Plumbing every source loader shares, written once:

- `http`     — `Response`, `HttpClient` (retries with backoff, `Retry-After`), `FetchError`,
               `SourceUnreachable`
- `snapshot` — a snapshot directory's `meta.json` and reading saved bodies as `Response`s
- `report`   — the counts and problems of an import, and how they are printed
- `source`   — what a source implements to plug into the pipeline (`SourceLoader`)
- `source_records` — fingerprints of source records (pure; the pipeline looks them up)
- `progress` — the progress bar

A loader (e.g. `loaders/sol_execbench/`, `loaders/gpumode/`) keeps only what is its source's:
which requests, how to parse and normalize them. loaders/pipeline.py runs them and alone holds
the database; loaders/sources.py registers them.
"""
