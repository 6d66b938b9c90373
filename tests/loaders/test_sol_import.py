"""The whole import against a real database, from synthetic snapshot directories."""

from __future__ import annotations

import functools
import io
import json
from pathlib import Path

import pytest
from pymongo import monitoring
from rich.console import Console

from loaders import pipeline
from store.client import make_client
from tests.loaders import synthetic

# the pipeline runs the registered source (loaders/sources.py)
run_import = functools.partial(pipeline.run_import, "sol-execbench")
import_command = functools.partial(pipeline.import_command, "sol-execbench")

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "data" / "snapshots" / "sol-execbench"
KERNEL = 901
FIRST = 500_000


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


class WriteCounter(monitoring.CommandListener):
    """Every command that could change the database, as sent on the wire."""

    WRITES = {
        "insert",
        "update",
        "delete",
        "findAndModify",
        "bulkWrite",
        "create",
        "createIndexes",
        "collMod",
        "drop",
        "dropIndexes",
        "commitTransaction",
    }

    def __init__(self):
        self.writes: list[tuple[str, object]] = []

    def started(self, event):
        if event.command_name in self.WRITES:
            self.writes.append((event.command_name, event.command.get(event.command_name)))

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


@pytest.fixture
async def watched(db, mongo_uri):
    """The test's database through a client that records every write command."""
    counter = WriteCounter()
    client = make_client(mongo_uri, event_listeners=[counter])
    yield client[db.name], counter
    await client.close()


@pytest.fixture
def snapshot(tmp_path) -> Path:
    """Three kernels: 901 with 64 submissions over 4 pages (ties, disqualified, incorrect, failed,
    pending, unknown extra fields), 902 with 5 on two stack versions, 903 with 3 on H100."""
    board = synthetic.leaderboard_kernel(KERNEL, FIRST)
    board[7]["review_status"] = "approved"  # fields the loader does not know
    board[7]["profiling_results"] = {"ncu": "synthetic"}
    others = [synthetic.submission(902, 600_000 + n, sol_score=0.5 + n / 100) for n in range(3)]
    others += [synthetic.submission(902, 600_010 + n, sol_score=0.6 + n / 100, stack="v1.0") for n in range(2)]
    h100 = [synthetic.submission(903, 700_000 + n, sol_score=0.3 + n / 10, gpu_type="H100") for n in range(3)]
    return synthetic.write_snapshot(tmp_path / "synthetic-snapshot", {KERNEL: board, 902: others, 903: h100})


async def runs_by_external_id(db) -> dict[str, dict]:
    return {doc["externalId"]: doc async for doc in db.runs.find({"current": True})}


async def test_first_import(db, snapshot):
    report = await run_import(db, snapshot_dir=snapshot, base_url=None, kernels=None, limit=None, dry_run=False, console=quiet())
    # 64 + 5 + 3 records. Only passed submissions make a run in the v1alpha1 format (as the seed
    # system imports SOL-ExecBench): kernel 901's 3 without latency (2 FAILED, 1 pending), 3
    # disqualified (55-57), 2 incorrect (58, 59) and 1 failed with a latency (62) are skipped.
    assert report.counts() == {
        "kernels": 3,
        "discovered": 72,
        "parsed": 63,
        "new": 63,
        "unchanged": 0,
        "superseded": 0,
        "rejected": 0,
        "skipped": 9,
    }
    assert sorted(p.subject for p in report.skipped) == [f"submission {FIRST + n}" for n in (55, 56, 57, 58, 59, 60, 61, 62, 63)]
    reasons = {p.subject: p.reason for p in report.skipped}
    assert reasons[f"submission {FIRST + 62}"].startswith("status failed")
    assert reasons[f"submission {FIRST + 55}"].startswith("status disqualified")
    assert await db.runs.count_documents({}) == 63
    assert await db.definitions.count_documents({}) == 3
    # One WorkloadSuite per kernel, and each of its cases as a WorkloadCase.
    assert await db.workloads.count_documents({"kind": "WorkloadSuite"}) == 3
    assert await db.workloads.count_documents({"kind": "WorkloadCase"}) >= 3
    assert await db.implementations.count_documents({}) == 63
    assert await db.protocols.count_documents({}) == 2  # v1.1, v1.0
    assert await db.environments.count_documents({}) == 3  # B200 v1.1, B200 v1.0, H100 v1.1
    # kernels.json, 3 details, 4 + 1 + 1 pages
    assert await db.source_snapshots.count_documents({}) == 10
    assert report.snapshots_saved == 10
    assert await db.events.count_documents({"type": "run.published"}) == 63

    run = await db.runs.find_one({"externalId": str(FIRST)})
    assert run["apiVersion"] == "kernelindex.dev/v1alpha1" and "annotations" not in run["metadata"]
    page = (snapshot / "submissions" / str(KERNEL) / "offset-0.json").read_bytes()
    # The page the run was read from, beside the manifest (never in it: the digest is the seed's).
    kept = await db.source_snapshots.find_one({"_id": run["sourceSnapshot"]})
    assert bytes(kept["body"]) == page
    assert kept["url"] == f"http://synthetic.invalid/api/submissions?kernel_id={KERNEL}&offset=0&limit=20"

    # The unknown fields are kept in the snapshot, not in the run.
    first_page = json.loads(page)
    assert first_page["data"]["submissions"][7]["review_status"] == "approved"
    assert "review_status" not in json.dumps((await db.runs.find_one({"externalId": str(FIRST + 7)}))["spec"])


async def test_ranks_per_comparison_group(db, snapshot):
    await run_import(db, snapshot_dir=snapshot, base_url=None, kernels=None, limit=None, dry_run=False, console=quiet())
    runs = await runs_by_external_id(db)
    board = {n: runs[str(FIRST + n)] for n in range(64) if str(FIRST + n) in runs}
    rank = {n: doc["rank"] for n, doc in board.items()}

    # Scores fall with n; 2 ties 3; 19, 20, 21 tie. Competition ranking: 1 2 3 3 5 … 20 20 20 23 …
    assert [rank[n] for n in range(6)] == [1, 2, 3, 3, 5, 6]
    assert [rank[n] for n in (18, 19, 20, 21, 22)] == [19, 20, 20, 20, 23]
    assert rank[54] == 55
    # Disqualified (55-57), incorrect (58, 59) and failed-with-latency (62) make no run, although
    # their scores are higher than the leader's.
    assert not {55, 56, 57, 58, 59, 62} & set(board)

    group_key = board[0]["groupKey"]
    assert {doc["groupKey"] for doc in board.values()} == {group_key}
    group = await db.comparison_groups.find_one({"_id": group_key})
    assert group["size"] == 55 and group["rankedSize"] == 55
    assert group["leaderDigest"] == board[0]["_id"]

    # Kernel 902: stack v1.0 and v1.1 are two groups; kernel 903 (H100) is its own.
    assert await db.comparison_groups.count_documents({}) == 4
    v11 = [runs[str(600_000 + n)] for n in range(3)]
    v10 = [runs[str(600_010 + n)] for n in range(2)]
    assert len({d["groupKey"] for d in v11}) == 1 and len({d["groupKey"] for d in v10}) == 1
    assert v11[0]["groupKey"] != v10[0]["groupKey"]
    assert [d["rank"] for d in v11] == [3, 2, 1] and [d["rank"] for d in v10] == [2, 1]
    h100 = [runs[str(700_000 + n)] for n in range(3)]
    assert [d["rank"] for d in h100] == [3, 2, 1]
    assert (await db.comparison_groups.find_one({"_id": h100[0]["groupKey"]}))["gpu"] == {
        "product": "NVIDIA H100",
        "architecture": "sm_90",
    }


async def test_unchanged_reimport_writes_nothing(db, snapshot, watched):
    first = await run_import(db, snapshot_dir=snapshot, base_url=None, kernels=None, limit=None, dry_run=False, console=quiet())
    counts = {name: await db[name].count_documents({}) for name in await db.list_collection_names()}

    watched_db, counter = watched
    again = await run_import(watched_db, snapshot_dir=snapshot, base_url=None, kernels=None, limit=None, dry_run=False, console=quiet())
    assert counter.writes == []
    assert again.new == again.superseded == 0
    assert again.unchanged == first.new == 63
    assert again.snapshots_saved == 0
    assert {name: await db[name].count_documents({}) for name in await db.list_collection_names()} == counts


async def test_records_are_rebuilt_once_when_their_fingerprint_differs(db, snapshot, watched):
    """Each run's document keeps its record's fingerprint beside the manifest (not in it). A run
    whose fingerprint differs (as after a change to the loader) is built again: the same digest,
    so unchanged and not superseded; it then keeps the new fingerprint, and the next re-import
    writes nothing."""
    await run_import(db, snapshot_dir=snapshot, console=quiet())
    runs = await db.runs.find({"source": "sol-execbench"}).to_list()
    assert len(runs) == 63 and all(run["sourceRecord"].startswith("sha256:") for run in runs)
    assert all("sourceRecord" not in run["metadata"].get("annotations", {}) for run in runs)
    fingerprints = {run["_id"]: run["sourceRecord"] for run in runs}

    await db.runs.update_many({"_id": {"$in": list(fingerprints)[:10]}}, {"$set": {"sourceRecord": "sha256:older-loader"}})
    rebuilt = await run_import(db, snapshot_dir=snapshot, console=quiet())
    assert (rebuilt.new, rebuilt.unchanged, rebuilt.superseded) == (0, 63, 0)
    assert {run["_id"]: run["sourceRecord"] for run in await db.runs.find({"source": "sol-execbench"}).to_list()} == fingerprints

    watched_db, counter = watched
    again = await run_import(watched_db, snapshot_dir=snapshot, console=quiet())
    assert (again.new, again.unchanged, again.superseded, counter.writes) == (0, 63, 0, [])


async def test_changed_record_supersedes_the_old_run(db, snapshot, watched):
    await run_import(db, snapshot_dir=snapshot, base_url=None, kernels=None, limit=None, dry_run=False, console=quiet())
    before = await runs_by_external_id(db)
    events_before = await db.events.count_documents({})

    # Upstream re-scores submission FIRST+10 above everyone (page offset 0, record 10).
    path = snapshot / "submissions" / str(KERNEL) / "offset-0.json"
    page = json.loads(path.read_bytes())
    page["data"]["submissions"][10]["sol_score"] = 0.95
    synthetic.write_json(path, page)

    watched_db, counter = watched
    report = await run_import(watched_db, snapshot_dir=snapshot, base_url=None, kernels=None, limit=None, dry_run=False, console=quiet())
    assert (report.new, report.unchanged, report.superseded) == (0, 62, 1)
    assert report.snapshots_saved == 1  # only the changed page
    assert {name for name, _ in counter.writes} >= {"insert"}

    old = await db.runs.find_one({"_id": before[str(FIRST + 10)]["_id"]})
    assert old["current"] is False and old["rank"] is None
    after = await runs_by_external_id(db)
    new = after[str(FIRST + 10)]
    assert new["supersedes"] == old["_id"] and old["supersededBy"] == new["_id"]
    assert new["sourceRecord"] != old["sourceRecord"]
    assert new["rank"] == 1 and after[str(FIRST)]["rank"] == 2
    assert await db.runs.count_documents({}) == 64
    group = await db.comparison_groups.find_one({"_id": new["groupKey"]})
    assert group["size"] == 55 and group["leaderDigest"] == new["_id"]
    published = await db.events.count_documents({"type": "run.published"})
    assert published == 64 and await db.events.count_documents({}) > events_before
    # The new #1 is a corrected run of the old #1's record? No: of another record, so "new_run".
    (record,) = await db.records.find({"groupKey": new["groupKey"], "runDigest": new["_id"]}).to_list()
    assert record["cause"] == "new_run" and record["previousDigest"] == before[str(FIRST)]["_id"]


async def test_dry_run_writes_nothing_and_prints_the_plan(db, snapshot, watched):
    watched_db, counter = watched
    console = quiet()
    code = await import_command(watched_db, snapshot_dir=snapshot, kernels=[KERNEL, 902], dry_run=True, console=console)
    assert code == 0
    assert counter.writes == []
    assert await db.runs.count_documents({}) == 0
    assert await db.source_snapshots.count_documents({}) == 0
    out = console.file.getvalue()
    assert "DRY RUN" in out and "Plan" in out
    assert "B200 · v1.1: 55" in out and "B200 · v1.0: 2" in out
    report = await run_import(None, snapshot_dir=snapshot, kernels=[KERNEL], dry_run=True, console=quiet())
    assert (report.discovered, report.parsed, report.new) == (64, 55, 0)
    assert report.plan[0].groups == {"B200 · v1.1": 55}


async def test_kernel_filter_and_limit(db, snapshot):
    report = await run_import(db, snapshot_dir=snapshot, kernels=[903, 999], console=quiet())
    assert report.kernels_selected == 1 and report.parsed == 3
    assert [(p.subject, p.reason) for p in report.rejected] == [("kernel 999", "not listed by the source (GET /kernels)")]
    report = await run_import(db, snapshot_dir=snapshot, kernels=[KERNEL, 902], limit=25, dry_run=True, console=quiet())
    assert [(k.kernel_id, k.discovered) for k in report.plan] == [(KERNEL, 25), (902, 5)]
    assert report.snapshots_seen == 1 + 2 + 2 + 1  # pages at offsets 40 and 60 never fetched


async def test_bad_records_pages_and_kernels_are_rejected_the_rest_imported(db, snapshot):
    root = snapshot / "submissions" / str(KERNEL)
    page = json.loads((root / "offset-20.json").read_bytes())
    records = page["data"]["submissions"]
    del records[0]["username"]  # submission FIRST+20: missing field
    records[1]["latency_ms"] = "fast"  # FIRST+21: wrong type
    records[2]["evaluation_stack_version"] = 11  # FIRST+22: wrong type
    synthetic.write_json(root / "offset-20.json", page)
    (root / "offset-40.json").write_bytes(b'{"data": {"submissions": [{"id": 1')  # malformed page
    (snapshot / "kernels" / "903.json").write_bytes(b"<html>502 Bad Gateway</html>")  # kernel detail

    console = quiet()
    code = await import_command(db, snapshot_dir=snapshot, console=console)
    assert code == 1
    report = await run_import(db, snapshot_dir=snapshot, console=quiet())  # same again: all unchanged
    reasons = {p.subject: p.reason for p in report.rejected}
    assert reasons[f"submission {FIRST + 20}"] == "username: Field required"
    assert reasons[f"submission {FIRST + 21}"] == "latency_ms: Input should be a valid number"
    assert reasons[f"submission {FIRST + 22}"] == "evaluation_stack_version: Input should be a valid string"
    assert reasons[f"kernel {KERNEL} submissions offset 40"].startswith("malformed JSON")
    assert reasons["kernel 903"].startswith("malformed JSON")
    assert len(report.rejected) == 5
    # 901: pages 0 (20), 20 (17 good), 60 (4, none passed: skipped) → 20 + 17; 902: 5
    assert report.parsed == report.unchanged == 20 + 17 + 5
    assert await db.runs.count_documents({}) == 42
    assert await db.definitions.count_documents({}) == 2
    # The page after the malformed one was still found (offset 60 by the page size).
    assert {p.subject for p in report.skipped} == {f"submission {FIRST + n}" for n in (60, 61, 62, 63)}
    # The bad responses are kept too: what the source said is evidence. kernels.json, three
    # details, four pages of 901 and one of 902 (903's pages were never asked for).
    assert await db.source_snapshots.count_documents({}) == 9
    assert "username: Field required" in console.file.getvalue()


async def test_bundled_snapshot_imports_as_the_seed_run(db):
    report = await run_import(db, snapshot_dir=BUNDLED, console=quiet())
    assert report.counts() == {
        "kernels": 1,
        "discovered": 1,
        "parsed": 1,
        "new": 1,
        "unchanged": 0,
        "superseded": 0,
        "rejected": 0,
        "skipped": 0,
    }
    run = await db.runs.find_one({"externalId": "37369"})
    assert run["metadata"]["name"] == "sol-submission-37369"
    assert run["spec"]["protocolDigest"] == "sha256:6383f62490dad270ad2146a94f67b48fba5cfcbc0b9b180f02665c69cc4433a0"
    assert run["spec"]["environmentDigest"] == "sha256:f304afb2fedab4bbeadf8ac36a990ff517ab6e824dfe5a3ee0fe46259ff5e39f"
    assert run["spec"]["timing"]["latencyNs"] == {"mean": 333636}
    assert run["rank"] == 1 and run["status"] == "passed"
    definition = await db.definitions.find_one({})
    assert "NOT CAPTURED" not in json.dumps(definition, default=str)
