"""HTTP with retries, for every loader.

`HttpClient.get(path, params)` answers a `Response` (URL, fetched-at, status, the exact bytes)
that the loader keeps as an immutable source snapshot. Timeouts, connection errors, 429 and
5xx are retried with exponential backoff and jitter (a `Retry-After` header wins, up to
`max_wait`); any other non-2xx, an answer the client's `is_permanent` says retrying cannot
change, or a spent retry budget, is a `FetchError` for that one request, and `SourceUnreachable`
when no attempt could even connect (the loader then stops asking instead of trying every
remaining request). `get(..., busy_for=S)` retries 429/5xx answers for up to S seconds instead
of a number of attempts (a server that builds an index for minutes), telling `on_busy` before
each wait.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import httpx

Params = dict[str, int | str]


@dataclass(frozen=True)
class Response:
    url: str
    fetched_at: datetime
    status: int
    body: bytes
    error_code: str | None = None  # the `X-Error-Code` header of an error answer, when sent


class FetchError(Exception):
    """One request failed for good; `response` is the last answer, when there was one."""

    def __init__(self, url: str, reason: str, response: Response | None = None):
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason
        self.response = response


class SourceUnreachable(FetchError):
    """No connection to the host on any attempt (DNS, refused, connect timeout)."""


def request_url(base_url: str, path: str, params: Params | None = None) -> str:
    url = base_url.rstrip("/") + path
    return f"{url}?{urlencode(params)}" if params else url


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


class HttpClient:
    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 30.0,
        attempts: int = 5,
        backoff: float = 1.0,
        max_wait: float = 60.0,
        busy_attempts: int | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        # A host that answers 429/5xx is there but busy (e.g. building an index): it may get
        # more attempts than one that cannot be reached at all.
        self.busy_attempts = max(busy_attempts or attempts, attempts)
        self.timeout = timeout
        self.attempts = attempts
        self.backoff = backoff
        self.max_wait = max_wait
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout),
            headers={"Accept": "application/json", "User-Agent": "kernelindex-loader/0.1"},
            follow_redirects=True,
        )

    def describe(self) -> str:
        return self.base_url

    async def aclose(self) -> None:
        await self._client.aclose()

    def is_permanent(self, response: Response) -> bool:
        """A 429/5xx answer that retrying cannot change (a loader names its source's)."""
        return False

    async def get(
        self,
        path: str,
        params: Params | None = None,
        *,
        busy_for: float | None = None,
        on_busy: Callable[[int, float, float, str], None] | None = None,
    ) -> Response:
        """`busy_for`: retry 429/5xx answers while this many seconds have not passed (instead of
        `busy_attempts`); `on_busy(attempt, elapsed_s, wait_s, reason)` is told before each wait."""
        url = request_url(self.base_url, path, params)
        started = time.monotonic()
        reason = "no attempt made"
        connected = False  # a timeout while reading still means the host is there
        last: Response | None = None
        attempt, budget = 0, self.attempts
        while attempt < budget:
            attempt += 1
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
                code = reply.headers.get("X-Error-Code") if not reply.is_success else None
                last = Response(url, datetime.now(UTC), reply.status_code, reply.content, code)
                if reply.is_success:
                    return last
                reason = f"HTTP {reply.status_code}" + (f" {code}" if code else "")
                if (reply.status_code != 429 and reply.status_code < 500) or self.is_permanent(last):
                    raise FetchError(url, reason, last)
                budget = self.busy_attempts
                asked = retry_after_seconds(reply.headers.get("Retry-After"))
                if asked is not None:
                    wait = min(self.max_wait, asked)
                if busy_for is not None:
                    elapsed = time.monotonic() - started
                    if elapsed >= busy_for:
                        reason = f"{reason}, still after {elapsed:.0f} s (the wait budget is {busy_for:g} s)"
                        raise FetchError(url, f"{reason} (gave up after {attempt} attempts)", last)
                    wait = min(wait, busy_for - elapsed)
                    budget = attempt + 1  # another attempt while the time lasts
                    if on_busy is not None:
                        on_busy(attempt, elapsed, wait, reason)
            if attempt < budget:
                await asyncio.sleep(wait)
        reason = f"{reason} (gave up after {attempt} attempts)"
        if not connected:
            raise SourceUnreachable(url, reason)
        raise FetchError(url, reason, last)

    async def download(self, path: str, into: Path, max_bytes: int) -> tuple[int, str]:
        """Stream the body of a 2xx answer into the file `into` (replaced), hashing it as it comes:
        (size, sha256 hex). A large export is never held in memory. Retried as `get` is, from the
        start, on a connection error, a timeout, 429 or 5xx; a body past `max_bytes` is a FetchError."""
        url = request_url(self.base_url, path)
        reason = "no attempt made"
        connected = False
        for attempt in range(1, self.attempts + 1):
            digest, size = hashlib.sha256(), 0
            try:
                async with self._client.stream("GET", url) as reply:
                    connected = True
                    if not reply.is_success:
                        reason = f"HTTP {reply.status_code}"
                        if reply.status_code != 429 and reply.status_code < 500:
                            raise FetchError(url, reason, Response(url, datetime.now(UTC), reply.status_code, await reply.aread()))
                    else:
                        with open(into, "wb") as out:
                            async for chunk in reply.aiter_bytes(1 << 20):
                                size += len(chunk)
                                if size > max_bytes:
                                    raise FetchError(url, f"larger than {max_bytes} bytes")
                                digest.update(chunk)
                                out.write(chunk)
                        return size, digest.hexdigest()
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                reason = f"cannot connect to {urlsplit(url).netloc}: {error or type(error).__name__}"
            except httpx.TimeoutException:
                connected, reason = True, f"timed out after {self.timeout:g}s"
            except httpx.TransportError as error:
                connected, reason = True, f"{type(error).__name__}: {error}"
            if attempt < self.attempts:
                await asyncio.sleep(min(self.max_wait, self.backoff * 2 ** (attempt - 1)) * (0.5 + random.random() / 2))
        reason = f"{reason} (gave up after {self.attempts} attempts)"
        raise (FetchError if connected else SourceUnreachable)(url, reason)
