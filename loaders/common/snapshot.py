"""Snapshot directories: saved response bodies, byte for byte, read back as `Response`s.

`meta.json` (optional): `base_url` — the API root the files stand for (each file's URL is
`base_url` + its request); `fetched_at` (ISO 8601) — recorded as every file's fetch time, else
the time the file is read. Anything else in it (a `note`, a `licence`) is for people.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from loaders.common.http import FetchError, Response, SourceUnreachable


class SnapshotDir:
    def __init__(self, root: Path, default_base_url: str):
        self.root = Path(root)
        if not self.root.is_dir():
            raise SourceUnreachable(str(self.root), "snapshot directory does not exist")
        meta_path = self.root / "meta.json"
        self.meta = json.loads(meta_path.read_bytes()) if meta_path.is_file() else {}
        self.base_url = str(self.meta.get("base_url") or default_base_url).rstrip("/")
        self.fetched_at = None
        if self.meta.get("fetched_at"):
            self.fetched_at = datetime.fromisoformat(self.meta["fetched_at"]).astimezone(UTC)

    def describe(self) -> str:
        return f"snapshot {self.root}"

    async def aclose(self) -> None:
        pass

    def read(self, file: Path, url: str) -> Response:
        """The saved body of `url`; a missing file is a FetchError for that request."""
        try:
            body = file.read_bytes()
        except FileNotFoundError:
            raise FetchError(url, f"no file {file.relative_to(self.root)} in {self.root}") from None
        return Response(url, self.fetched_at or datetime.now(UTC), 200, body)


def open_source(snapshot_dir: Path | None, base_url: str | None, *, snapshot: type, http: type):
    """The loader's snapshot source for a directory, else its HTTP source (default base URL)."""
    if snapshot_dir is not None and base_url is not None:
        raise ValueError("give a snapshot directory or a base URL, not both")
    if snapshot_dir is not None:
        return snapshot(snapshot_dir)
    return http(base_url) if base_url else http()
