"""GPU MODE KernelBot import: from a snapshot directory and from a live datasets-server-shaped
HTTP server (paging, 500s while indexing, a drifted row, a failed run, a non-leaderboard run,
two submissions of one user, ties), then ranks, per-case statistics and re-imports. All rows are
SYNTHETIC (tests/loaders/gpumode_synthetic.py); each real shape is in test_gpumode_real_shapes.py."""

from __future__ import annotations

import functools
import io
from pathlib import Path

import pytest
from rich.console import Console

from loaders import pipeline
from loaders.gpumode.fetch import HttpSource, SourceUnreachable
from store.embedded import free_port
from tests.command import kernelindex
from tests.loaders import gpumode_synthetic as synthetic
from tests.loaders.datasets_server import DatasetsServer

# the pipeline runs the registered source (loaders/sources.py)
run_import = functools.partial(pipeline.run_import, "gpumode")
import_command = functools.partial(pipeline.import_command, "gpumode")

FP8, MOE, GEMV = 9399, 9430, 9595
BASE = [20_000.0, 45_000.0, 90_000.0, 160_000.0]  # ns per case


def scaled(factor: float) -> list[float]:
    return [round(m * factor, 3) for m in BASE]


def dataset() -> dict[str, list[dict]]:
    boards = [
        synthetic.leaderboard(FP8, "synthetic-fp8-mm", ["MI300X"]),
        synthetic.leaderboard(MOE, "synthetic-moe", ["MI300X"]),
        synthetic.leaderboard(GEMV, "synthetic-nvfp4-gemv", ["B200"]),
    ]
    rows = []
    # 120 users with well separated times (1 % std over 100 runs): two pages of 100 rows.
    for user in range(10, 130):
        rows.append(synthetic.per_shape_row(1000 + user, FP8, user, means=scaled(1.2 + user * 0.05)))
    # User 1: two submissions; the later one is faster and represents them.
    rows.append(synthetic.per_shape_row(1, FP8, 1, means=scaled(1.10), time="2026-05-01T10:00:00"))
    rows.append(synthetic.per_shape_row(2, FP8, 1, means=scaled(1.00), time="2026-05-03T10:00:00"))
    # Users 2 and 3: 0.1 % apart with 5 % std: their 95% intervals overlap — a tie.
    rows.append(synthetic.per_shape_row(3, FP8, 2, means=scaled(1.050), rel_std=0.05))
    rows.append(synthetic.per_shape_row(4, FP8, 3, means=scaled(1.051), rel_std=0.05))
    # A failed run, a non-leaderboard run, a drifted row (4 cases announced, 3 given).
    rows.append(synthetic.per_shape_row(5, FP8, 4, means=scaled(0.5), passed=False))
    rows.append(synthetic.per_shape_row(6, FP8, 5, means=scaled(0.5), run_mode="benchmark"))
    drifted = synthetic.per_shape_row(7, FP8, 6, means=scaled(1.3))
    del drifted["run_result"]["benchmark.3.mean"]
    rows.append(drifted)
    # Another board, and a board the leaderboards config does not list (it is stale).
    rows.append(
        synthetic.per_shape_row(8, MOE, 1, means=[300_000.0, 600_000.0], specs=("e: 8; t: 512; seed: 0", "e: 8; t: 2048; seed: -2"))
    )
    rows.append(synthetic.per_shape_row(9, 9999, 1, means=scaled(1.0)))
    flat = [
        synthetic.flat_row(20, "synthetic-nvfp4-gemv", 1, score=2.5e-5),
        synthetic.flat_row(21, "synthetic-nvfp4-gemv", 2, score=2.5e-5),  # an exact tie
        synthetic.flat_row(22, "synthetic-nvfp4-gemv", 3, score=3.1e-5),
        synthetic.flat_row(23, "synthetic-nvfp4-gemv", 4, score=None, status="failed"),
    ]
    return {"leaderboards": boards, synthetic.PER_SHAPE_CONFIG: rows, synthetic.FLAT_CONFIG: flat}


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def fast(base_url: str, attempts: int = 4) -> HttpSource:
    return HttpSource(base_url, timeout=2, attempts=attempts, backoff=0.01, max_wait=1)


@pytest.fixture
def snapshot(tmp_path) -> Path:
    return synthetic.write_snapshot(tmp_path / "gpumode", dataset())


async def ranks_of(db, board: str) -> dict[str, int | None]:
    runs = db.runs.find({"source": "gpumode", "current": True, "spec.sourceNative.benchmark": board})
    return {run["spec"]["sourceNative"]["metrics"]["user_id"]: run["rank"] async for run in runs}


async def test_snapshot_import_keeps_each_users_best_and_declares_ties(db, snapshot):
    report = await run_import(db, snapshot_dir=snapshot, console=quiet())
    reasons = {p.subject: p.reason for p in report.rejected}
    assert reasons == {"amd_successful_submissions submission 7": "run_result: benchmark.3.mean is missing"}
    skipped = {p.subject: p.reason for p in report.skipped}
    assert skipped == {
        "amd_successful_submissions submission 5": "run_passed is false: a run that did not pass never ranks",
        "amd_successful_submissions submission 6": "run_mode 'benchmark': only leaderboard-mode runs rank",
        "nvidia_nvfp4_submissions submission 23": "status 'failed': did not pass KernelBot's checks; never ranked",
    }
    # fp8: 120 + users 1, 2, 3; moe: 1; the unlisted board: 1; gemv: 3.
    assert (report.parsed, report.new, report.not_best) == (128, 128, 1)
    assert report.boards["synthetic-fp8-mm"].runs == {"AMD Instinct MI300X": 123}
    assert (report.boards["synthetic-fp8-mm"].rule, report.boards["synthetic-nvfp4-gemv"].rule) == ("geomean", "score")
    assert report.boards["leaderboard-9999"].listed is False

    fp8 = await ranks_of(db, "synthetic-fp8-mm")
    assert (fp8["900001"], fp8["900002"], fp8["900003"], fp8["900010"]) == (1, 2, 2, 4)
    user1 = await db.runs.find_one({"spec.sourceNative.externalId": f"{FP8}/900001/amd-instinct-mi300x"})
    assert user1["spec"]["sourceNative"]["metrics"]["submission_id"] == 2  # the faster, later one
    case = user1["spec"]["cases"][0]
    assert case["axes"] == {"k": 7168, "m": 1024, "n": 1536}  # the seed is no axis: it is the case's seed
    suite = await db.workloads.find_one({"_id": user1["spec"]["workloadDigest"]})
    assert suite["spec"]["cases"][0]["sourceNative"] == {"spec": "k: 7168; m: 1024; n: 1536; seed: 8135", "seed": 8135}
    assert case["sampleCount"] == 100 and case["latencyNs"]["mean"] == 20_000 and case["latencyNs"]["std"] == 200
    group = await db.comparison_groups.find_one({"_id": user1["groupKey"]})
    assert group["rankRule"]["ci_overlap"] is True and group["size"] == 123
    assert await ranks_of(db, "synthetic-nvfp4-gemv") == {"900001": 1, "900002": 1, "900003": 3}
    # Seeds of 0 and below are seeds too; they stay with the case's spec, not in its axes.
    moe = await db.workloads.find_one({"spec.cases.sourceNative.spec": "e: 8; t: 512; seed: 0"})
    assert [case["axes"] for case in moe["spec"]["cases"]] == [{"e": 8, "t": 512}, {"e": 8, "t": 2048}]
    assert [case["sourceNative"]["seed"] for case in moe["spec"]["cases"]] == [0, -2]

    again = await run_import(db, snapshot_dir=snapshot, console=quiet())
    assert (again.new, again.unchanged, again.superseded, again.snapshots_saved) == (0, 128, 0, 0)
    # A run whose record fingerprint does not match (e.g. the loader changed) is rebuilt: the same
    # manifest, so still unchanged, and nothing is written.
    await db.runs.update_many({"source": "gpumode"}, {"$set": {"sourceRecord": "sha256:old"}})
    rebuilt = await run_import(db, snapshot_dir=snapshot, console=quiet())
    assert (rebuilt.new, rebuilt.unchanged, rebuilt.superseded) == (0, 128, 0)


async def test_live_server_pages_retries_500s_while_indexing_and_matches_the_snapshot(db, snapshot):
    first = await run_import(db, snapshot_dir=snapshot, console=quiet())
    faults = {"/splits": ["500"], f"/rows/{synthetic.PER_SHAPE_CONFIG}/100": ["500", "500", "503"]}
    with DatasetsServer(dataset(), faults) as server:
        # 2 attempts for an unreachable host, but a busy one (5xx) gets the datasets-server's 8.
        again = await run_import(db, source=fast(server.base_url, attempts=2), console=quiet())
        hits = server.hits(f"/rows/{synthetic.PER_SHAPE_CONFIG}/100")
    assert hits == 4
    assert first.new == again.unchanged == 128 and again.new == again.superseded == 0
    assert len(again.rejected) == 1  # the drifted row, as before


async def test_a_better_submission_supersedes_and_a_failed_page_drops_only_its_config(db):
    data = dataset()
    with DatasetsServer(data, {f"/rows/{synthetic.PER_SHAPE_CONFIG}/100": ["malformed"]}) as server:
        report = await run_import(db, source=fast(server.base_url), console=quiet())
    # The config's first page was read, its second not: nothing of the config is imported.
    assert [p.subject for p in report.rejected] == [synthetic.PER_SHAPE_CONFIG]
    assert "not imported: the page at offset 100 could not be read" in report.rejected[0].reason
    assert report.parsed == 3 and await db.runs.count_documents({}) == 3  # only the flat board
    data[synthetic.PER_SHAPE_CONFIG].append(synthetic.per_shape_row(30, FP8, 10, means=scaled(0.9)))
    with DatasetsServer(data) as server:
        report = await run_import(db, source=fast(server.base_url), console=quiet())
    assert (report.new, report.unchanged) == (125, 3)
    with DatasetsServer(data) as server:
        data[synthetic.PER_SHAPE_CONFIG].append(synthetic.per_shape_row(31, FP8, 11, means=scaled(0.8)))
        report = await run_import(db, source=fast(server.base_url), console=quiet())
    assert (report.new, report.superseded, report.unchanged) == (0, 1, 127)
    fp8 = await ranks_of(db, "synthetic-fp8-mm")
    assert fp8["900011"] == 1 and fp8["900010"] == 2


async def test_dry_run_selection_and_limit(db, snapshot):
    report = await run_import(None, snapshot_dir=snapshot, leaderboards=["synthetic-moe", "nope"], dry_run=True, console=quiet())
    assert report.parsed == 1 and set(report.boards) == {"synthetic-moe"}
    # A name the leaderboards config does not list is a notice (rows naming it are still read), not a failure.
    assert report.rejected == [] and {p.subject for p in report.notices} == {"leaderboard nope"}
    limited = await run_import(db, snapshot_dir=snapshot, limit=5, console=quiet())
    assert limited.discovered == 5 + 4 and await db.runs.count_documents({}) == limited.new == 5 + 3


async def test_unreachable_host_is_a_clear_error(db):
    base_url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(SourceUnreachable, match=r"cannot connect to 127\.0\.0\.1:\d+"):
        await run_import(db, source=fast(base_url, attempts=2), console=quiet())
    console = quiet()
    assert await import_command(db, source=fast(base_url, attempts=2), console=console) == 2
    assert "GPU MODE import failed" in console.file.getvalue()


async def test_cli_imports_reports_per_board_and_gpu_and_reimports_nothing(db, mongo_uri, snapshot):
    env = {"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name, "COLUMNS": "200"}
    first = kernelindex("import", "gpumode", "--snapshot", str(snapshot), env=env)
    assert first.returncode == 1, first.stderr  # the drifted row is rejected
    assert "synthetic-fp8-mm" in first.stderr and "AMD Instinct MI300X" in first.stderr and "Traceback" not in first.stderr
    assert "benchmark.3.mean is missing" in first.stderr
    events = await db.events.count_documents({})
    again = kernelindex("import", "gpumode", "--snapshot", str(snapshot), env=env)
    assert again.returncode == 1 and await db.events.count_documents({}) == events
    unreachable = kernelindex("import", "gpumode", "--base-url", "http://127.0.0.1:9", "--limit", "3", env=env)
    assert unreachable.returncode == 2 and "cannot connect to" in unreachable.stderr
    wrong = kernelindex("import", "gpumode", "--kernel", "51", "--snapshot", str(snapshot), env=env)
    assert wrong.returncode != 0 and "error: --kernel" in wrong.stderr


def test_the_bundled_snapshot_is_the_generators_output(tmp_path):
    bundled = Path(__file__).resolve().parents[1] / "fixtures" / "gpumode-synthetic"
    written = synthetic.write_bundle(tmp_path / "bundle")
    files = sorted(p.relative_to(written) for p in written.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(bundled) for p in bundled.rglob("*") if p.is_file())
    assert all((written / f).read_bytes() == (bundled / f).read_bytes() for f in files)
    assert "SYNTHETIC" in (bundled / "meta.json").read_text()
