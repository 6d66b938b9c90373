"""The live-API path against a real HTTP server on 127.0.0.1 with injected faults."""

from __future__ import annotations

import functools
import io
from pathlib import Path

import pytest
from rich.console import Console

from loaders import pipeline
from loaders.sol_execbench.fetch import HttpSource, SourceUnreachable
from store.embedded import free_port
from tests.loaders import synthetic
from tests.loaders.http_server import SnapshotServer

# the pipeline runs the registered source (loaders/sources.py)
run_import = functools.partial(pipeline.run_import, "sol-execbench")
import_command = functools.partial(pipeline.import_command, "sol-execbench")

KERNEL = 901
FIRST = 500_000


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def fast_source(base_url: str, attempts: int = 4) -> HttpSource:
    return HttpSource(base_url, timeout=0.3, attempts=attempts, backoff=0.01, max_wait=5)


@pytest.fixture
def snapshot(tmp_path) -> Path:
    board = synthetic.leaderboard_kernel(KERNEL, FIRST)  # 64 records, pages at 0, 20, 40, 60
    others = [synthetic.submission(902, 600_000 + n, sol_score=0.5 + n / 100) for n in range(5)]
    return synthetic.write_snapshot(tmp_path / "synthetic-snapshot", {KERNEL: board, 902: others})


async def test_transient_faults_are_retried(db, snapshot):
    faults = {
        "/kernels": ["503"],
        f"/kernels/{KERNEL}": ["500", "502"],
        f"/submissions/{KERNEL}/20": ["429:1"],
        f"/submissions/{KERNEL}/40": ["timeout:1"],
    }
    with SnapshotServer(snapshot, faults) as server:
        report = await run_import(db, source=fast_source(server.base_url), console=quiet())
        retry_after = server.hits(f"/submissions/{KERNEL}/20")
    assert report.rejected == []
    assert (report.discovered, report.parsed, report.new) == (69, 60, 60)  # 9 of 69 did not pass: no run in the format
    # Retry-After: 1 was honoured (the backoff alone would have waited ~10 ms).
    assert len(retry_after) == 2 and retry_after[1] - retry_after[0] >= 0.95
    # Only the answers acted on are kept: no snapshot of the 5xx that a retry replaced.
    assert await db.source_snapshots.count_documents({"status": {"$ne": 200}}) == 0
    assert await db.source_snapshots.count_documents({}) == 1 + 2 + 4 + 1
    run = await db.runs.find_one({"externalId": str(FIRST)})
    snap = await db.source_snapshots.find_one({"_id": run["sourceSnapshot"]})
    assert snap["url"] == f"{server.base_url}/submissions?kernel_id={KERNEL}&offset=0&limit=20"


async def test_the_same_responses_over_http_and_from_files_are_the_same_runs(db, snapshot):
    first = await run_import(db, snapshot_dir=snapshot, console=quiet())
    with SnapshotServer(snapshot) as server:
        again = await run_import(db, source=fast_source(server.base_url), console=quiet())
    assert first.new == again.unchanged == 60 and again.new == again.superseded == 0


async def test_persistent_failures_reject_that_page_or_kernel_only(db, snapshot):
    faults = {
        f"/submissions/{KERNEL}/20": ["500"] * 3,
        f"/submissions/{KERNEL}/40": ["timeout:1"] * 3,
        f"/submissions/{KERNEL}/60": ["malformed"],
        "/kernels/902": ["404"],
    }
    with SnapshotServer(snapshot, faults) as server:
        report = await run_import(db, source=fast_source(server.base_url, attempts=3), console=quiet())
        not_found_hits = server.hits("/kernels/902")
    reasons = {p.subject: p.reason for p in report.rejected}
    assert reasons == {
        f"kernel {KERNEL} submissions offset 20": "HTTP 500 (gave up after 3 attempts)",
        f"kernel {KERNEL} submissions offset 40": "timed out after 0.3s (gave up after 3 attempts)",
        f"kernel {KERNEL} submissions offset 60": reasons[f"kernel {KERNEL} submissions offset 60"],
        "kernel 902": "HTTP 404",
    }
    assert reasons[f"kernel {KERNEL} submissions offset 60"].startswith("malformed JSON")
    assert len(not_found_hits) == 1  # a 404 is not retried
    # Page 0 of kernel 901 is imported, nothing else, and nothing half written.
    assert report.new == 20 and await db.runs.count_documents({}) == 20
    assert await db.definitions.count_documents({}) == 1
    assert await db.implementations.count_documents({}) == 20
    # The failed answers that came back are kept with their status.
    assert {d["status"] async for d in db.source_snapshots.find({}, {"status": 1})} == {200, 404, 500}

    # Upstream recovers: the next import adds the rest and leaves page 0 alone.
    with SnapshotServer(snapshot) as server:
        report = await run_import(db, source=fast_source(server.base_url), console=quiet())
    assert (report.new, report.unchanged, report.rejected) == (40, 20, [])


async def test_unreachable_host_is_a_clear_error(db):
    base_url = f"http://127.0.0.1:{free_port()}/api"  # nothing listens there
    with pytest.raises(SourceUnreachable, match=r"cannot connect to 127\.0\.0\.1:\d+"):
        await run_import(db, source=fast_source(base_url, attempts=2), console=quiet())
    console = quiet()
    code = await import_command(db, source=fast_source(base_url, attempts=2), console=console)
    assert code == 2
    assert "SOL-ExecBench import failed" in console.file.getvalue()
    assert await db.runs.count_documents({}) == 0


class StopsServingAt(HttpSource):
    """A client of `server` that shuts the server down when it is about to ask for `path`."""

    def __init__(self, server: SnapshotServer, path: str):
        super().__init__(server.base_url, timeout=0.3, attempts=3, backoff=0.01)
        self.server, self.path = server, path

    async def get(self, path, params=None):
        if path == self.path:
            self.server.__exit__()
        return await super().get(path, params)


async def test_a_host_that_goes_away_ends_the_import_keeping_whole_runs(db, snapshot):
    with SnapshotServer(snapshot) as server:
        report = await run_import(db, source=StopsServingAt(server, "/kernels/902"), console=quiet())
    ((subject, reason),) = [(p.subject, p.reason) for p in report.rejected]
    assert subject == "kernel 902"
    assert reason.startswith("source unreachable: ") and "cannot connect to 127.0.0.1" in reason
    assert report.new == 55 and await db.runs.count_documents({}) == 55
