"""The catalog importer streams its export: a URL is downloaded into a temporary file while it is
hashed (removed once read), the file is decompressed and parsed a chunk at a time, and bytes that
change between the hash and the read are refused with nothing written. A real HTTP server
(http.server in a thread) serves the export."""

from __future__ import annotations

import asyncio
import functools
import http.server
import io
import tempfile
import threading
from pathlib import Path

import pytest
from rich.console import Console

from loaders import pipeline
from loaders.kernelindex_catalog import parse as parse_module
from loaders.kernelindex_catalog.discover import locate
from loaders.kernelindex_catalog.fetch import CatalogRefused, fetch
from loaders.kernelindex_catalog.parse import parse
from tests.loaders.catalog_exports import subset, write_export

run_import = functools.partial(pipeline.run_import, "kernelindex-catalog")


@pytest.fixture
def served(tmp_path):
    """A folder served over HTTP on 127.0.0.1: (folder, base URL)."""
    folder = tmp_path / "www"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _leftover_downloads() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("kernelindex-catalog-*.jsonl.zst")}


async def test_an_export_from_a_url_is_downloaded_to_a_file_and_removed(db, served):
    folder, base = served
    export = write_export(folder, subset("051"))
    before = _leftover_downloads()
    report = await run_import(db, target=f"{base}/{export.name}", console=Console(file=io.StringIO()))
    assert report.outcome.runs_new == await db.runs.count_documents({}) > 0
    record = await db.catalog_imports.find_one({"_id": report.sha256})
    assert record["export"]["sizeBytes"] == export.stat().st_size  # the size comes from the stream
    assert _leftover_downloads() == before


async def test_the_export_is_read_a_chunk_at_a_time(tmp_path, monkeypatch):
    """With a 1 KiB read size, the same rows as the whole file at once (lines cut across chunks)."""
    export = write_export(tmp_path, subset("051"))
    whole = parse(await fetch(locate(str(export))))
    monkeypatch.setattr(parse_module, "READ_BYTES", 1024)
    chunked = parse(await fetch(locate(str(export))))
    assert [(line.number, line.row) for line in chunked.lines] == [(line.number, line.row) for line in whole.lines]
    assert chunked.problems == whole.problems == [] and len(chunked.lines) > 10


async def test_bytes_changed_after_the_hash_are_refused_with_nothing_written(db, tmp_path):
    export = write_export(tmp_path, subset("051"), pointer=False)
    fetched = await fetch(locate(str(export)))
    other = write_export(tmp_path / "other", subset("flash"), pointer=False)
    export.write_bytes(other.read_bytes())  # replaced between fetch() and the read
    with pytest.raises(CatalogRefused) as refused:
        await asyncio.to_thread(parse, fetched)
    assert refused.value.problems == [f"{export.name}: changed while it was read (its sha256 is no longer {fetched.sha256})"]
    assert await db.runs.count_documents({}) == 0
