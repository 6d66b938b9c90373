"""Fetch raw datasets-server responses for `GPUMODE/kernelbot-data`, live or from a snapshot.

Requests (each answer is a `loaders.common.http.Response`, kept as a source snapshot; the API is
huggingface/dataset-viewer's, docs/source/{splits,rows,filter}.md and openapi.json):

- `GET /splits?dataset=…` — the configs
- `GET /rows?dataset=…&config=…&split=train&offset=n&length=100` — every page of one config;
  the answer is `{"rows": [{"row_idx": n, "row": {…}, "truncated_cells": […]}], "num_rows_total": N}`
- `GET /filter?dataset=…&config=…&split=train&offset=n&length=100` (no `where`: every row, by row
  index) — the same answer plus `partial`, for a config whose `/rows` the server refuses: for
  the largest configs `/rows` answers 500 with `X-Error-Code: TooBigContentError` ("Scan size
  limit exceeded", services/rows/routes/rows.py), which no retry changes.

Busy answers: `/rows` and `/splits` get 8 attempts for 5xx/429 (about two minutes of backoff);
one that cannot be reached at all gets the common 5. `/filter` answers 500 `ResponseNotReady`
while the server builds the config's index ("the dataset index is loading", libapi/duckdb.py),
for minutes: its requests are retried for `index_wait` seconds (default 10 minutes), each wait
reported through `on_wait`, and then given up with a line that says so.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from loaders.common.http import FetchError, HttpClient, Params, Response, SourceUnreachable, request_url
from loaders.common.snapshot import SnapshotDir
from loaders.gpumode import DATASET
from loaders.gpumode.parse import ParseError, RowsPage, parse_rows_page

DEFAULT_BASE_URL = "https://datasets-server.huggingface.co"
PAGE_LENGTH = 100  # the most the datasets-server gives per page (rows.md, filter.md)
SPLIT = "train"
INDEX_WAIT = 600.0  # seconds /filter may answer "not ready" before a config is given up
ROWS, FILTER = "/rows", "/filter"
# The datasets-server's X-Error-Code for a /rows slice too big to scan (libapi/exceptions.py).
TOO_BIG = "TooBigContentError"

# (config, seconds waited so far, seconds until the next try, why) — told before each wait.
OnWait = Callable[[str, float, float, str], None]


def refused(response: Response | None) -> bool:
    """The datasets-server will not page this config through `/rows` (too big to scan)."""
    if response is None or response.status < 500:
        return False
    return response.error_code == TOO_BIG or b"Scan size limit exceeded" in response.body


class HttpSource(HttpClient):
    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        page_length: int = PAGE_LENGTH,
        busy_attempts: int = 8,
        index_wait: float = INDEX_WAIT,
        **retries,
    ):
        super().__init__(base_url, busy_attempts=busy_attempts, **retries)
        self.page_length = page_length
        self.index_wait = index_wait

    def is_permanent(self, response: Response) -> bool:
        return refused(response)

    def filter_only(self, config: str) -> bool:
        return False  # asked /rows first; /filter when refused

    async def get_page(self, path: str, params: Params, config: str, on_wait: OnWait | None) -> Response:
        if path != FILTER:
            return await self.get(path, params)

        def told(attempt: int, elapsed: float, wait: float, reason: str) -> None:
            if on_wait is not None:
                on_wait(config, elapsed, wait, f"{reason}, attempt {attempt}")

        try:
            return await self.get(path, params, busy_for=self.index_wait, on_busy=told)
        except SourceUnreachable:
            raise
        except FetchError as error:
            if error.response is not None and (error.response.status >= 500 or error.response.status == 429):
                raise FetchError(
                    error.url,
                    f"the datasets-server was still not serving /filter for config {config}: {error.reason}; "
                    "nothing of the config was imported: run the import again later (or with a larger --index-wait)",
                    error.response,
                ) from None
            raise


class SnapshotDirSource(SnapshotDir):
    """Saved answers in a directory (layout in README.md): `splits.json`, `{config}/offset-{n}.json`
    for `/rows`, and `{config}/filter-offset-{n}.json` for a config read through `/filter`. A
    missing file is a FetchError for that request."""

    def __init__(self, root: Path):
        super().__init__(root, DEFAULT_BASE_URL)
        self.page_length = PAGE_LENGTH

    def file_for(self, path: str, params: Params) -> Path:
        if path == "/splits":
            return self.root / "splits.json"
        if path == ROWS:
            return self.root / str(params["config"]) / f"offset-{params['offset']}.json"
        if path == FILTER:
            return self.root / str(params["config"]) / f"filter-offset-{params['offset']}.json"
        raise ValueError(f"no snapshot file for {path}")

    def filter_only(self, config: str) -> bool:
        return not (self.root / config / "offset-0.json").is_file() and (self.root / config / "filter-offset-0.json").is_file()

    async def get(self, path: str, params: Params) -> Response:
        return self.read(self.file_for(path, params), request_url(self.base_url, path, params))

    async def get_page(self, path: str, params: Params, config: str, on_wait: OnWait | None) -> Response:
        return await self.get(path, params)


Source = HttpSource | SnapshotDirSource


def open_source(*, snapshot_dir: Path | None, base_url: str | None, index_wait: float | None = None) -> Source:
    if snapshot_dir is not None and base_url is not None:
        raise ValueError("give a snapshot directory or a base URL, not both")
    if snapshot_dir is not None:
        return SnapshotDirSource(snapshot_dir)
    options = {} if index_wait is None else {"index_wait": index_wait}
    return HttpSource(base_url or DEFAULT_BASE_URL, **options)


async def fetch_splits(source: Source) -> Response:
    return await source.get("/splits", {"dataset": DATASET})


@dataclass(frozen=True)
class PageFetch:
    """One page: its rows, or why it could not be had (`response` may still hold the bad
    answer, which is kept as a snapshot too). `endpoint`: /rows or /filter."""

    offset: int
    response: Response | None
    page: RowsPage | None = None
    error: str | None = None
    endpoint: str = ROWS


async def fetch_pages(source: Source, config: str, *, on_wait: OnWait | None = None) -> AsyncIterator[PageFetch]:
    """Every page of one config, in order: the next offset is this one plus its row count until
    `num_rows_total`. When the server refuses the config's `/rows` (too big), the config is read
    from offset 0 through `/filter` instead (the refusal is yielded first, with no error: it is
    kept as a snapshot). A failed page is reported and stepped over by the page length once the
    total is known; when the first page fails the rest cannot be located. `SourceUnreachable`
    propagates."""
    endpoint = FILTER if source.filter_only(config) else ROWS
    offset, total = 0, None
    while total is None or offset < total:
        params = {"dataset": DATASET, "config": config, "split": SPLIT, "offset": offset, "length": source.page_length}
        try:
            response = await source.get_page(endpoint, params, config, on_wait)
        except SourceUnreachable:
            raise
        except FetchError as error:
            if endpoint == ROWS and offset == 0 and refused(error.response):
                yield PageFetch(offset, error.response, endpoint=ROWS)  # kept; the config goes on through /filter
                endpoint = FILTER
                continue
            yield PageFetch(offset, error.response, error=error.reason, endpoint=endpoint)
            if total is None:
                return
            offset += source.page_length
            continue
        try:
            page = parse_rows_page(response.body)
        except ParseError as error:
            yield PageFetch(offset, response, error=str(error), endpoint=endpoint)
            if total is None:
                return
            offset += source.page_length
            continue
        yield PageFetch(offset, response, page, endpoint=endpoint)
        total = page.total
        if not page.rows:
            return  # more promised but nothing given: stop rather than spin
        offset += len(page.rows)
