"""GPU MODE KernelBot import against a datasets-server-shaped HTTP server holding SYNTHETIC rows
in every real shape of `GPUMODE/kernelbot-data` (loaders/gpumode/README.md cites each field):
per-shape rows (export.py) under each of KernelBot's score rules and on an 8-GPU run; flat rows
(hf_export.py) with each status, each runner of consts.py, an empty `user_name`, a mixed-GPU
board, B200 beside B200_Nebius; configs whose `/rows` is refused and are read through `/filter`
(500 `ResponseNotReady` while the index builds, paging by offset), and a 429 with Retry-After.
Then: what is published, in which groups, ranked by which rule, the exit status, a re-import
that writes nothing, and what happens when the index is not built within the budget."""

from __future__ import annotations

import functools
import io

import pytest
from rich.console import Console

from loaders import pipeline
from loaders.gpumode.fetch import HttpSource
from loaders.gpumode.normalize import RUNNERS
from tests.command import kernelindex
from tests.loaders import gpumode_synthetic as synthetic
from tests.loaders.datasets_server import DatasetsServer

# the pipeline runs the registered source (loaders/sources.py)
run_import = functools.partial(pipeline.run_import, "gpumode")
import_command = functools.partial(pipeline.import_command, "gpumode")

FP8, MOE, MLA, A2A = 9399, 9430, 9463, 9563  # per-shape: geom, mean, last, 8 GPUs
GEMV, TRIMUL, CONV, MXFP4, RUNNER_BOARD = 9595, 9496, 9766, 9763, 9900  # flat
NVFP4, AMD_1_1M, TRIMUL_CONFIG, HELION, RUNNERS_CONFIG = (
    "nvidia_nvfp4_submissions",
    "amd_1_1m_competition",
    "trimul_submissions",
    "helion_b200_nebius",
    "synthetic_runners_submissions",
)
BASE = [20_000.0, 45_000.0, 90_000.0, 160_000.0]  # ns per case
STATUSES = {  # flat rows that never rank, and why (users 201..206 of the gemv board)
    "failed": "status 'failed': did not pass KernelBot's checks; never ranked",
    "hacked": "status 'hacked': flagged by KernelBot's kernel guard as a hack; never ranked",
    "timed_out": "status 'timed_out': hit KernelBot's hard timeout; never ranked",
    "pending": "status 'pending': unfinished when exported",
    "running": "status 'running': unfinished when exported",
    "active": "status 'active': unfinished when exported",
}
GEMV_USERS = 120  # two /filter pages


def scaled(factor: float) -> list[float]:
    return [round(m * factor, 3) for m in BASE]


def dataset() -> dict[str, list[dict]]:
    """Every row SYNTHETIC."""
    s = synthetic
    boards = [
        s.leaderboard(FP8, "synthetic-fp8-mm", ["MI300X"]),
        s.leaderboard(MOE, "synthetic-moe", ["MI300X"]),
        s.leaderboard(MLA, "synthetic-mla-decode", ["MI300X"]),
        s.leaderboard(A2A, "synthetic-all2all", ["MI300x8"]),
        s.leaderboard(GEMV, "synthetic-nvfp4-gemv", ["NVIDIA"]),
        s.leaderboard(TRIMUL, "synthetic-trimul", ["A100", "H100", "B200", "MI300"]),
        s.leaderboard(CONV, "synthetic-causal-conv1d", ["B200_Nebius"]),
        s.leaderboard(MXFP4, "synthetic-mxfp4-mm", ["MI355X"]),
        s.leaderboard(RUNNER_BOARD, "synthetic-every-runner", list(RUNNERS)),
    ]
    per_shape = []
    # geom board: users 1..5; user 1 twice (the later, faster one counts); a failed and a benchmark-mode run.
    for user in range(1, 6):
        per_shape.append(s.per_shape_row(100 + user, FP8, user, means=scaled(1 + user / 10), time=f"2026-05-{user:02d}T12:00:00.000000Z"))
    per_shape.append(s.per_shape_row(110, FP8, 1, means=scaled(1.0), time="2026-05-20T12:00:00.000000Z"))
    per_shape.append(s.per_shape_row(111, FP8, 6, means=scaled(0.5), passed=False))
    per_shape.append(s.per_shape_row(112, FP8, 7, means=scaled(0.5), run_mode="benchmark"))
    # mean board: user 1 wins by the geometric mean but loses by the board's rule, the mean.
    moe_specs = ("e: 8; t: 512; seed: 1", "e: 8; t: 2048; seed: 2")
    per_shape.append(s.per_shape_row(120, MOE, 1, means=[100_000.0, 1_000_000.0], specs=moe_specs, rule="mean"))
    per_shape.append(s.per_shape_row(121, MOE, 2, means=[400_000.0, 400_000.0], specs=moe_specs, rule="mean"))
    per_shape.append(s.per_shape_row(122, MOE, 3, means=[500_000.0, 700_000.0], specs=moe_specs, rule="mean"))
    # last board: one case per leaderboard run (run_eval.py: ranking_by "last" runs only the last benchmark).
    mla_spec = ("b: 128; s: 4096; seed: 3",)
    per_shape.append(s.per_shape_row(130, MLA, 1, means=[300_000.0], specs=mla_spec, rule="last"))
    per_shape.append(s.per_shape_row(131, MLA, 2, means=[250_000.0], specs=mla_spec, rule="last"))
    # an 8-GPU run: the GPU as reported, with its device count.
    for user in (1, 2):
        per_shape.append(s.per_shape_row(140 + user, A2A, user, means=scaled(1 + user / 5)[:2], device_count=8))

    gemv = [
        s.flat_row(1000 + u, "synthetic-nvfp4-gemv", u, score=2e-5 * (1 + u / 50), runner="NVIDIA", board_id=GEMV)
        for u in range(1, GEMV_USERS + 1)
    ]
    gemv[3]["user_name"] = ""  # hf_export.py writes a missing name as ""
    gemv.append(s.flat_row(1200, "synthetic-nvfp4-gemv", 1, score=1e-5, runner="NVIDIA", board_id=GEMV))  # user 1's better code
    for position, status in enumerate(STATUSES):
        gemv.append(
            s.flat_row(1300 + position, "synthetic-nvfp4-gemv", 201 + position, score=None, status=status, runner="NVIDIA", board_id=GEMV)
        )
    trimul = [
        s.flat_row(2000 + 10 * g + u, "synthetic-trimul", u, score=1e-3 * (1 + u / 10 + g), runner=runner, board_id=TRIMUL)
        for g, runner in enumerate(("A100", "H100", "B200", "MI300"))
        for u in (1, 2, 3)
    ]
    helion = [
        s.flat_row(3000 + u, "synthetic-causal-conv1d", u, score=1e-5 * (1 + u / 10), runner="B200_Nebius", board_id=CONV)
        for u in (1, 2, 3)
    ]
    mxfp4 = [s.flat_row(4000 + u, "synthetic-mxfp4-mm", u, score=1e-5 * (1 + u / 10), runner="MI355X", board_id=MXFP4) for u in range(1, 6)]
    every = [
        s.flat_row(5000 + i, "synthetic-every-runner", 1, score=1e-4 * (i + 1), runner=r, board_id=RUNNER_BOARD)
        for i, r in enumerate(RUNNERS)
    ]
    return {
        "leaderboards": boards,
        s.PER_SHAPE_CONFIG: per_shape,
        NVFP4: gemv,
        AMD_1_1M: mxfp4,
        TRIMUL_CONFIG: trimul,
        HELION: helion,
        RUNNERS_CONFIG: every,
    }


EXPECTED_RUNS = 5 + 3 + 2 + 2 + GEMV_USERS + 4 * 3 + 3 + 5 + len(RUNNERS)
EXPECTED_GROUPS = 4 + 1 + 4 + 1 + 1 + len(RUNNERS)  # one per board × environment


def server(data: dict | None = None, **options) -> DatasetsServer:
    options.setdefault("too_big", {NVFP4, AMD_1_1M})
    options.setdefault("index_build", {NVFP4: 3, AMD_1_1M: 1})
    options.setdefault("faults", {f"/rows/{TRIMUL_CONFIG}/0": ["429:1"]})
    faults = options.pop("faults")
    return DatasetsServer(data or dataset(), faults, **options)


def fast(base_url: str, index_wait: float = 30.0) -> HttpSource:
    return HttpSource(base_url, timeout=5, attempts=3, backoff=0.01, max_wait=1, index_wait=index_wait)


def quiet() -> Console:
    return Console(file=io.StringIO(), width=240)


async def current(db) -> list[dict]:
    return [run async for run in db.runs.find({"source": "gpumode", "current": True})]


async def ranks(db, board: str) -> dict[str, int | None]:
    runs = db.runs.find({"source": "gpumode", "current": True, "spec.sourceNative.benchmark": board})
    return {run["spec"]["sourceNative"]["externalId"].split("/", 1)[1]: run["rank"] async for run in runs}


async def test_every_real_shape_is_imported_in_one_group_per_board_and_environment_and_exits_0(db, capsys):
    console = quiet()
    with server() as live:
        code = await import_command(db, source=fast(live.base_url), console=console)
        retry_after = live.hit_times(f"/rows/{TRIMUL_CONFIG}/0")
        not_ready = live.hits(f"/filter/{NVFP4}/0")
    out = console.file.getvalue()
    assert code == 0, out
    assert "error:" not in out and "Rejected" not in out
    runs = await current(db)
    assert len(runs) == EXPECTED_RUNS
    assert await db.comparison_groups.count_documents({}) == EXPECTED_GROUPS
    # The 429's Retry-After (1 s) was waited for; /filter was asked again while the index built.
    assert len(retry_after) == 2 and retry_after[1] - retry_after[0] >= 0.9
    assert not_ready == 4
    waits = [line for line in capsys.readouterr().err.splitlines() if line.startswith("waiting for the datasets-server")]
    # 3 answers "not ready" for one config, 1 for the other: a line before each wait.
    assert [line.split(":")[0].rsplit(" ", 1)[1] for line in waits] == [NVFP4] * 3 + [AMD_1_1M]
    assert "HTTP 500 ResponseNotReady, attempt 3" in waits[2]

    environments = {(r["spec"]["sourceNative"]["benchmark"], r["spec"]["environmentDigest"]) for r in runs}
    groups = {r["groupKey"] for r in runs}
    assert len(environments) == len(groups) == EXPECTED_GROUPS

    # Each runner of consts.py is its own environment: B200 (Modal), B200_Nebius and the GitHub
    # NVIDIA runner are three groups although all three are B200s.
    every = [r for r in runs if r["spec"]["sourceNative"]["benchmark"] == "synthetic-every-runner"]
    envs = {r["spec"]["environmentDigest"]: r for r in every}
    assert len(envs) == len({r["groupKey"] for r in every}) == len(RUNNERS)
    kept = {doc["_id"]: doc async for doc in db.environments.find({"_id": {"$in": list(envs)}})}
    by_runner = {doc["spec"]["hardware"]["formFactor"]: doc["spec"]["hardware"] for doc in kept.values()}
    assert by_runner["runner:B200_Nebius"]["product"] == by_runner["runner:B200"]["product"] == "NVIDIA B200"
    assert by_runner["runner:MI300x8"] == {
        "vendor": "amd",
        "product": "AMD Instinct MI300X",
        "architecture": "gfx942",
        "formFactor": "runner:MI300x8",
        "count": 8,
    }
    assert by_runner["runner:L4x4"]["count"] == 4 and by_runner["runner:MI355X"]["architecture"] == "gfx950"

    # The mixed-GPU board: one group per runner, each ranked on its own.
    trimul = await ranks(db, "synthetic-trimul")
    assert len(trimul) == 12 and sorted(trimul.values()) == [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]
    assert trimul["900001/b200"] == trimul["900001/mi300"] == 1


async def test_each_board_ranks_by_its_own_rule_and_skips_what_kernelbot_would_not_rank(db):
    with server() as live:
        report = await run_import(db, source=fast(live.base_url), console=quiet())
    assert report.rejected == []
    rules = {name: plan.rule for name, plan in report.boards.items()}
    assert rules["synthetic-fp8-mm"] == "geomean" and rules["synthetic-moe"] == "mean" and rules["synthetic-mla-decode"] == "last"
    assert rules["synthetic-nvfp4-gemv"] == "score"
    assert sorted(report.configs_by_filter) == [AMD_1_1M, NVFP4]
    skipped = {p.subject: p.reason for p in report.skipped}
    for position, status in enumerate(STATUSES):
        assert skipped[f"{NVFP4} submission {1300 + position}"] == STATUSES[status]
    assert skipped[f"{synthetic.PER_SHAPE_CONFIG} submission 111"] == "run_passed is false: a run that did not pass never ranks"
    assert skipped[f"{synthetic.PER_SHAPE_CONFIG} submission 112"] == "run_mode 'benchmark': only leaderboard-mode runs rank"
    assert len(skipped) == len(STATUSES) + 2
    assert report.skip_reasons()["status 'hacked'"] == 1

    # The mean board: user 2 (400 µs, 400 µs) beats user 1 (100 µs, 1000 µs) by the mean (KernelBot's
    # rule for this board, told from run_score), although user 1's geometric mean is the lowest.
    moe = await ranks(db, "synthetic-moe")
    assert (moe["900002/amd-instinct-mi300x"], moe["900001/amd-instinct-mi300x"], moe["900003/amd-instinct-mi300x"]) == (1, 2, 3)
    run = await db.runs.find_one({"spec.sourceNative.externalId": f"{MOE}/900002/amd-instinct-mi300x"})
    assert run["spec"]["timing"] == {"primaryStatistic": "mean", "latencyNs": {"mean": 400_000}}
    group = await db.comparison_groups.find_one({"_id": run["groupKey"]})
    assert group["rankRule"] == {"metric": "mean", "order": "asc", "noise_aware": True, "ci_overlap": True}
    mla = await ranks(db, "synthetic-mla-decode")
    assert (mla["900002/amd-instinct-mi300x"], mla["900001/amd-instinct-mi300x"]) == (1, 2)

    # The seed is the case's, not an axis.
    fp8 = await db.runs.find_one({"spec.sourceNative.externalId": f"{FP8}/900001/amd-instinct-mi300x"})
    assert fp8["spec"]["sourceNative"]["metrics"]["submission_id"] == 110
    assert fp8["spec"]["cases"][0]["axes"] == {"k": 7168, "m": 1024, "n": 1536}
    suite = await db.workloads.find_one({"_id": fp8["spec"]["workloadDigest"]})
    assert suite["spec"]["cases"][0]["sourceNative"]["seed"] == 8135
    # The 8-GPU run's environment is the reported GPU with its count.
    a2a = await db.runs.find_one({"spec.sourceNative.externalId": f"{A2A}/900001/amd-instinct-mi300x-x8"})
    env = await db.environments.find_one({"_id": a2a["spec"]["environmentDigest"]})
    assert env["spec"]["hardware"] == {"vendor": "amd", "product": "AMD Instinct MI300X", "architecture": "gfx942", "count": 8}

    # An empty user_name is the user by id; user 1's better code on the same runner represents them.
    gemv = {
        r["spec"]["sourceNative"]["externalId"]: r
        for r in await current(db)
        if r["spec"]["sourceNative"]["benchmark"] == "synthetic-nvfp4-gemv"
    }
    assert len(gemv) == GEMV_USERS
    assert gemv[f"{GEMV}/900004/nvidia"]["metadata"]["title"] == "user 900004 · synthetic-nvfp4-gemv · NVIDIA"
    assert gemv[f"{GEMV}/900001/nvidia"]["spec"]["sourceNative"]["metrics"]["submission_id"] == 1200
    assert gemv[f"{GEMV}/900001/nvidia"]["rank"] == 1


async def test_an_unchanged_reimport_writes_nothing(db):
    with server() as live:
        first = await run_import(db, source=fast(live.base_url), console=quiet())
        events = await db.events.count_documents({})
        again = await run_import(db, source=fast(live.base_url), console=quiet())
    assert first.new == EXPECTED_RUNS
    assert (again.new, again.superseded, again.unchanged, again.snapshots_saved) == (0, 0, EXPECTED_RUNS, 0)
    assert again.rejected == [] and await db.events.count_documents({}) == events


async def test_an_index_not_built_within_the_budget_is_a_clear_line_and_nothing_of_the_config(db):
    console = quiet()
    with server(index_build={NVFP4: None, AMD_1_1M: 0}) as live:
        code = await import_command(db, source=fast(live.base_url, index_wait=0.6), console=console)
        asked = live.hits(f"/filter/{NVFP4}/0")
    out = console.file.getvalue()
    assert code == 1
    assert asked >= 2  # retried while the budget lasted
    line = next(line for line in out.splitlines() if line.startswith("error: "))
    assert line.startswith(
        f"error: {NVFP4}: not imported: the page at offset 0 could not be read: the datasets-server was still not serving /filter"
    )
    assert "HTTP 500 ResponseNotReady" in line and "(the wait budget is 0.6 s)" in line and "run the import again later" in line
    # Nothing of that config; everything else.
    assert await db.runs.count_documents({"spec.sourceNative.benchmark": "synthetic-nvfp4-gemv"}) == 0
    assert len(await current(db)) == EXPECTED_RUNS - GEMV_USERS


async def test_a_partial_filter_index_or_a_page_lost_midway_imports_nothing_of_the_config(db):
    faults = {f"/filter/{NVFP4}/100": ["404"]}  # the second page of the config is lost
    with server(partial={AMD_1_1M}, faults=faults) as live:
        report = await run_import(db, source=fast(live.base_url), console=quiet())
    reasons = {p.subject: p.reason for p in report.rejected}
    assert reasons[AMD_1_1M] == "not imported: /filter answered `partial: true` (the server indexed only part of the config)"
    assert reasons[NVFP4].startswith("not imported: the page at offset 100 could not be read: ")
    assert len(reasons) == 2
    for board in ("synthetic-mxfp4-mm", "synthetic-nvfp4-gemv"):
        assert await db.runs.count_documents({"spec.sourceNative.benchmark": board}) == 0


async def test_a_malformed_row_is_rejected_naming_the_row_and_field_and_exits_1(db):
    data = dataset()
    rows = data[HELION]
    rows.append(
        synthetic.flat_row(3100, "synthetic-causal-conv1d", 7, score=1e-5, runner="B200_Nebius", board_id=CONV) | {"status": "exploded"}
    )
    rows.append(synthetic.flat_row(3101, "synthetic-causal-conv1d", 8, score=1e-5, runner="B300", board_id=CONV))
    rows.append(synthetic.flat_row(3102, "synthetic-causal-conv1d", 9, score=1e-5, runner="B200_Nebius", board_id=CONV) | {"score": None})
    rows.append(
        synthetic.flat_row(3103, "synthetic-causal-conv1d", 1, score=1e-5, runner="B200_Nebius", board_id=CONV)
        | {"user_id": None, "user_name": ""}
    )
    off_rule = synthetic.per_shape_row(150, MOE, 9, means=[100_000.0, 300_000.0], specs=("e: 8; t: 512; seed: 1", "e: 8; t: 2048; seed: 2"))
    off_rule["run_score"] = 1.0  # none of KernelBot's scores of its cases
    data[synthetic.PER_SHAPE_CONFIG].append(off_rule)
    console = quiet()
    with server(data) as live:
        code = await import_command(db, source=fast(live.base_url), console=console)
    assert code == 1
    out = console.file.getvalue()
    assert "error: " in out
    with server(data) as live:
        again = await run_import(db, source=fast(live.base_url), console=quiet())
    reasons = {p.subject: p.reason for p in again.rejected}
    assert reasons == {
        f"{HELION} submission 3100": "status: 'exploded' is none of KernelBot's (succeeded, failed, timed_out, hacked, pending, running, active)",
        f"{HELION} submission 3101": "runner: 'B300' is none of KernelBot's runners (" + ", ".join(RUNNERS) + ")",
        f"{HELION} submission 3102": "score: missing on a succeeded row",
        f"{HELION} submission 3103": "user_id: missing, and user_name is empty: the row names no user",
        f"{synthetic.PER_SHAPE_CONFIG} submission 150": "run_score: 1.0 s is none of KernelBot's scores of the case means (geomean 0.000173205 s, mean 0.0002 s)",
    }
    # The rest of each config is imported.
    assert again.new == 0 and again.unchanged == EXPECTED_RUNS


@pytest.mark.parametrize("index_build", [2])
async def test_the_installed_command_reads_a_refused_config_through_filter(db, mongo_uri, index_build):
    env = {"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name, "COLUMNS": "240"}
    with server(index_build={NVFP4: index_build, AMD_1_1M: 0}, faults={}) as live:
        first = kernelindex("import", "gpumode", "--base-url", live.base_url, "--index-wait", "120", env=env)
        events = await db.events.count_documents({})
        again = kernelindex("import", "gpumode", "--base-url", live.base_url, env=env)
    assert first.returncode == 0, first.stderr
    assert "waiting for the datasets-server to index nvidia_nvfp4_submissions" in first.stderr
    by_filter = next(line for line in first.stderr.splitlines() if "configs read through /filter" in line)
    assert NVFP4 in by_filter and AMD_1_1M in by_filter
    assert "Traceback" not in first.stderr and "error:" not in first.stderr
    assert again.returncode == 0 and await db.events.count_documents({}) == events
    bad = kernelindex("import", "gpumode", "--base-url", live.base_url, "--index-wait", "-1", env=env)
    assert bad.returncode != 0 and "argument --index-wait: '-1': must be 0 seconds or more" in bad.stderr


async def test_a_snapshot_keeps_a_config_read_through_filter(db, tmp_path):
    root = synthetic.write_snapshot(tmp_path / "snapshot", dataset())
    for page in (root / NVFP4).glob("offset-*.json"):  # saved as /filter answered them
        page.rename(page.with_name("filter-" + page.name))
    report = await run_import(db, snapshot_dir=root, console=quiet())
    assert report.rejected == [] and report.configs_by_filter == [NVFP4]
    assert report.new == EXPECTED_RUNS
