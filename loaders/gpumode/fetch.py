"""Fetch raw datasets-server responses for `GPUMODE/kernelbot-data`, live or from a snapshot.

Requests (each answer is a `loaders.common.http.Response`, kept as a source snapshot):

- `GET /splits?dataset=…` — the configs
- `GET /rows?dataset=…&config=…&split=train&offset=n&length=100` — every page of one config;
  the answer is `{"rows": [{"row_idx": n, "row": {…}, "truncated_cells": […]}], "num_rows_total": N}`

The datasets-server answers 500 for a while when it is (re)building a config's index: a host
that answers 5xx or 429 gets 8 attempts (about two minutes of backoff); one that cannot be
reached at all gets the common 5.
`--leaderboard` is applied to the parsed rows rather than through `/filter` (a new filter
answers 500 for minutes while the server indexes it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from loaders.common.http import FetchError, HttpClient, Params, Response, SourceUnreachable, request_url
from loaders.common.snapshot import SnapshotDir
from loaders.common.snapshot import open_source as common_open_source
from loaders.gpumode import DATASET
from loaders.gpumode.parse import ParseError, RowsPage, parse_rows_page

DEFAULT_BASE_URL = "https://datasets-server.huggingface.co"
PAGE_LENGTH = 100  # the most the datasets-server gives per page
SPLIT = "train"


class HttpSource(HttpClient):
    def __init__(self, base_url: str = DEFAULT_BASE_URL, *, page_length: int = PAGE_LENGTH, busy_attempts: int = 8, **retries):
        super().__init__(base_url, busy_attempts=busy_attempts, **retries)
        self.page_length = page_length


class SnapshotDirSource(SnapshotDir):
    """Saved answers in a directory (layout in README.md): `splits.json` and
    `{config}/offset-{n}.json`. A missing file is a FetchError for that request."""

    def __init__(self, root: Path):
        super().__init__(root, DEFAULT_BASE_URL)
        self.page_length = PAGE_LENGTH

    def file_for(self, path: str, params: Params) -> Path:
        if path == "/splits":
            return self.root / "splits.json"
        if path == "/rows":
            return self.root / str(params["config"]) / f"offset-{params['offset']}.json"
        raise ValueError(f"no snapshot file for {path}")

    async def get(self, path: str, params: Params) -> Response:
        return self.read(self.file_for(path, params), request_url(self.base_url, path, params))


Source = HttpSource | SnapshotDirSource


def open_source(*, snapshot_dir: Path | None, base_url: str | None) -> Source:
    return common_open_source(snapshot_dir, base_url, snapshot=SnapshotDirSource, http=HttpSource)


async def fetch_splits(source: Source) -> Response:
    return await source.get("/splits", {"dataset": DATASET})


@dataclass(frozen=True)
class PageFetch:
    """One page: its rows, or why it could not be had (`response` may still hold the bad
    answer, which is kept as a snapshot too)."""

    offset: int
    response: Response | None
    page: RowsPage | None = None
    error: str | None = None


async def fetch_pages(source: Source, config: str) -> AsyncIterator[PageFetch]:
    """Every page of one config, in order: the next offset is this one plus its row count until
    `num_rows_total`. A failed page is reported and stepped over by the page length once the
    total is known; when the first page fails the rest cannot be located. `SourceUnreachable`
    propagates."""
    offset, total = 0, None
    while total is None or offset < total:
        params = {"dataset": DATASET, "config": config, "split": SPLIT, "offset": offset, "length": source.page_length}
        try:
            response = await source.get("/rows", params)
        except SourceUnreachable:
            raise
        except FetchError as error:
            yield PageFetch(offset, error.response, error=error.reason)
            if total is None:
                return
            offset += source.page_length
            continue
        try:
            page = parse_rows_page(response.body)
        except ParseError as error:
            yield PageFetch(offset, response, error=str(error))
            if total is None:
                return
            offset += source.page_length
            continue
        yield PageFetch(offset, response, page)
        total = page.total
        if not page.rows:
            return  # more promised but nothing given: stop rather than spin
        offset += len(page.rows)
