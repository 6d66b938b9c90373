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

import asyncio
import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import httpx

from loaders.sol_execbench.parse import Page, ParseError, parse_page

DEFAULT_BASE_URL = "https://research.nvidia.com/benchmarks/sol-execbench/api"
PAGE_SIZE = 20  # what the leaderboard itself asks for


@dataclass(frozen=True)
class Response:
    url: str
    fetched_at: datetime
    status: int
    body: bytes


class FetchError(Exception):
    """One request failed for good; `response` is the last answer, when there was one."""

    def __init__(self, url: str, reason: str, response: Response | None = None):
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason
        self.response = response


class SourceUnreachable(FetchError):
    """No connection to the host on any attempt (DNS, refused, connect timeout)."""


def request_url(base_url: str, path: str, params: dict[str, int] | None = None) -> str:
    url = base_url.rstrip("/") + path
    return f"{url}?{urlencode(params)}" if params else url


# ---------------------------------------------------------------- live API


class HttpSource:
    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        timeout: float = 30.0,
        attempts: int = 5,
        backoff: float = 1.0,
        max_wait: float = 60.0,
        page_size: int = PAGE_SIZE,
    ):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.attempts = attempts
        self.backoff = backoff
        self.max_wait = max_wait
        self.page_size = page_size
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout),
            headers={"Accept": "application/json", "User-Agent": "kernelindex-loader/0.1"},
            follow_redirects=True,
        )

    def describe(self) -> str:
        return self.base_url

    async def aclose(self) -> None:
        await self._client.aclose()

    async def get(self, path: str, params: dict[str, int] | None = None) -> Response:
        url = request_url(self.base_url, path, params)
        reason = "no attempt made"
        connected = False  # a timeout while reading still means the host is there
        last: Response | None = None
        for attempt in range(1, self.attempts + 1):
            wait = min(self.max_wait, self.backoff * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
            try:
                reply = await self._client.get(url)
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                reason = f"cannot connect to {urlsplit(url).netloc}: {error or type(error).__name__}"
            except httpx.TimeoutException:
                connected = True
                reason = f"timed out after {self.timeout:g}s"
            except httpx.TransportError as error:
                connected = True
                reason = f"{type(error).__name__}: {error}"
            else:
                connected = True
                last = Response(url, datetime.now(UTC), reply.status_code, reply.content)
                if reply.is_success:
                    return last
                reason = f"HTTP {reply.status_code}"
                if reply.status_code != 429 and reply.status_code < 500:
                    raise FetchError(url, reason, last)
                asked = retry_after_seconds(reply.headers.get("Retry-After"))
                if asked is not None:
                    wait = min(self.max_wait, asked)
            if attempt < self.attempts:
                await asyncio.sleep(wait)
        reason = f"{reason} (gave up after {self.attempts} attempts)"
        if not connected:
            raise SourceUnreachable(url, reason)
        raise FetchError(url, reason, last)


def retry_after_seconds(header: str | None) -> float | None:
    """`Retry-After` as seconds: either delta-seconds or an HTTP date."""
    if not header:
        return None
    header = header.strip()
    if header.isdigit():
        return float(header)
    try:
        when = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


# ---------------------------------------------------------------- snapshot directory


class SnapshotDirSource:
    """Saved responses in a directory (layout in README.md). A missing file is a FetchError."""

    def __init__(self, root: Path):
        self.root = Path(root)
        if not self.root.is_dir():
            raise SourceUnreachable(str(self.root), "snapshot directory does not exist")
        meta_path = self.root / "meta.json"
        meta = json.loads(meta_path.read_bytes()) if meta_path.is_file() else {}
        self.base_url = str(meta.get("base_url") or DEFAULT_BASE_URL).rstrip("/")
        self.fetched_at = None
        if meta.get("fetched_at"):
            self.fetched_at = datetime.fromisoformat(meta["fetched_at"]).astimezone(UTC)
        self.page_size = PAGE_SIZE

    def describe(self) -> str:
        return f"snapshot {self.root}"

    async def aclose(self) -> None:
        pass

    def file_for(self, path: str, params: dict[str, int] | None = None) -> Path:
        if path == "/kernels":
            return self.root / "kernels.json"
        if path.startswith("/kernels/"):
            return self.root / "kernels" / f"{int(path.removeprefix('/kernels/'))}.json"
        if path == "/submissions" and params:
            return self.root / "submissions" / str(params["kernel_id"]) / f"offset-{params['offset']}.json"
        raise ValueError(f"no snapshot file for {path}")

    async def get(self, path: str, params: dict[str, int] | None = None) -> Response:
        url = request_url(self.base_url, path, params)
        file = self.file_for(path, params)
        try:
            body = file.read_bytes()
        except FileNotFoundError:
            raise FetchError(url, f"no file {file.relative_to(self.root)} in {self.root}") from None
        fetched_at = self.fetched_at or datetime.now(UTC)
        return Response(url, fetched_at, 200, body)


Source = HttpSource | SnapshotDirSource


def open_source(*, snapshot_dir: Path | None, base_url: str | None) -> Source:
    if snapshot_dir is not None and base_url is not None:
        raise ValueError("give a snapshot directory or a base URL, not both")
    if snapshot_dir is not None:
        return SnapshotDirSource(snapshot_dir)
    return HttpSource(base_url or DEFAULT_BASE_URL)


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
