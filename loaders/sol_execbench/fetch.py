"""Fetch raw SOL-ExecBench responses, from the live API or from a snapshot directory.

Both sources answer the same three requests with a `Response` (URL, fetched-at, status, the
exact bytes) that `publish.keep_snapshots` stores as an immutable source snapshot:

- `GET /kernels`
- `GET /kernels/{id}`
- `GET /submissions?kernel_id={id}&offset={n}&limit={page_size}`, every page

`HttpSource` retries timeouts, connection errors, 429 and 5xx with exponential backoff (a
`Retry-After` header wins, up to `max_wait`). Anything else non-2xx, or a retry budget spent,
is a `FetchError` for that one request; `SourceUnreachable` when no attempt could even connect
(the import then stops: the kernel list is fatal, later kernels are reported, not tried).

`SnapshotDirSource` reads the same responses from files laid out as described in README.md.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from loaders.common.http import (  # noqa: F401 (re-exported: the SOL loader's public names)
    FetchError,
    HttpClient,
    Response,
    SourceUnreachable,
    request_url,
    retry_after_seconds,
)
from loaders.common.snapshot import SnapshotDir
from loaders.common.snapshot import open_source as common_open_source
from loaders.sol_execbench.parse import Page, ParseError, parse_page

DEFAULT_BASE_URL = "https://research.nvidia.com/benchmarks/sol-execbench/api"
PAGE_SIZE = 20  # what the leaderboard itself asks for


# ---------------------------------------------------------------- live API


class HttpSource(HttpClient):
    def __init__(self, base_url: str = DEFAULT_BASE_URL, *, page_size: int = PAGE_SIZE, **retries):
        super().__init__(base_url, **retries)
        self.page_size = page_size


# ---------------------------------------------------------------- snapshot directory


class SnapshotDirSource(SnapshotDir):
    """Saved responses in a directory (layout in README.md). A missing file is a FetchError."""

    def __init__(self, root: Path):
        super().__init__(root, DEFAULT_BASE_URL)
        self.page_size = PAGE_SIZE

    def file_for(self, path: str, params: dict[str, int] | None = None) -> Path:
        if path == "/kernels":
            return self.root / "kernels.json"
        if path.startswith("/kernels/"):
            return self.root / "kernels" / f"{int(path.removeprefix('/kernels/'))}.json"
        if path == "/submissions" and params:
            return self.root / "submissions" / str(params["kernel_id"]) / f"offset-{params['offset']}.json"
        raise ValueError(f"no snapshot file for {path}")

    async def get(self, path: str, params: dict[str, int] | None = None) -> Response:
        return self.read(self.file_for(path, params), request_url(self.base_url, path, params))


Source = HttpSource | SnapshotDirSource


def open_source(*, snapshot_dir: Path | None, base_url: str | None) -> Source:
    return common_open_source(snapshot_dir, base_url, snapshot=SnapshotDirSource, http=HttpSource)


# ---------------------------------------------------------------- the three requests


async def fetch_kernel_list(source: Source) -> Response:
    return await source.get("/kernels")


async def fetch_kernel(source: Source, kernel_id: int) -> Response:
    return await source.get(f"/kernels/{kernel_id}")


@dataclass(frozen=True)
class PageFetch:
    """One page: its response, or why it could not be had (then `response` may still hold the
    bad answer, which is kept as a snapshot too)."""

    offset: int
    response: Response | None
    page: Page | None = None
    error: str | None = None


async def fetch_submission_pages(source: Source, kernel_id: int) -> AsyncIterator[PageFetch]:
    """Every page of a kernel's submissions, in order.

    The next offset is this page's offset plus its record count, until `total` is reached. A
    page that fails is reported and skipped by `page_size` records when the total is already
    known; when the first page fails the rest cannot be located and iteration stops.
    `SourceUnreachable` (no answer at all) propagates.
    """
    offset, total, step = 0, None, source.page_size
    while total is None or offset < total:
        params = {"kernel_id": kernel_id, "offset": offset, "limit": source.page_size}
        try:
            response = await source.get("/submissions", params)
        except SourceUnreachable:
            raise  # the host is gone: no point in asking for the next page
        except FetchError as error:
            yield PageFetch(offset, error.response, error=error.reason)
            if total is None:
                return
            offset += step
            continue
        try:
            page = parse_page(response.body)
        except ParseError as error:
            yield PageFetch(offset, response, error=str(error))
            if total is None:
                return
            offset += step
            continue
        yield PageFetch(offset, response, page)
        total = page.total
        if page.limit:
            step = page.limit
        if not page.records:
            return  # the source says there is more but gives nothing: stop rather than spin
        offset += len(page.records)
