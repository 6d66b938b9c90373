"""The synthetic GPU MODE snapshot (a test fixture since the KernelIndex catalog's real boards are
the default data) imported as the loader does: per-case statistics through GraphQL and on the
dossier, ties from samples in the rank, and a second import that writes nothing."""

from pathlib import Path

import pytest

from loaders.pipeline import run_import

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "gpumode-synthetic"
RUN = """query($id: String!) { runByExternalId(source: "gpumode", externalId: $id) {
  digest title rank status
  primaryMeasurement { statistic valueNs }
  cases { index axes { key value } sampleCount latency { statistic valueNs } }
  group { size rankedSize sourceNative rankRule { metric order tieTest } }
  sourceNative { benchmark sourceTitle externalReference }
} }"""


def external_id(user: int, board: int = 9399, gpu: str = "amd-instinct-mi300x") -> str:
    return f"{board}/{900000 + user}/{gpu}"


@pytest.fixture
async def seeded(db):
    await run_import("gpumode", db, snapshot_dir=FIXTURE, console=None)
    return db


async def test_bundled_runs_show_per_case_statistics_and_ties(api, seeded):
    run = (await api.data(RUN, {"id": external_id(1)}))["runByExternalId"]
    # export.py's per-shape rows name users by anonymized id only.
    assert run["title"] == "user 900001 · synthetic-fp8-mm · MI300X"
    assert run["primaryMeasurement"]["statistic"] == "geomean"
    assert run["sourceNative"] == {
        "benchmark": "synthetic-fp8-mm",
        "sourceTitle": "GPU MODE KernelBot",
        "externalReference": "leaderboard/9399/900001/amd-instinct-mi300x",
    }
    first = run["cases"][0]
    assert {a["key"]: a["value"] for a in first["axes"]} == {"k": "7168", "m": "1024", "n": "1536"}  # the seed is no axis
    assert first["sampleCount"] == 100
    # User 1's later, faster submission (0.95 × the base means) represents them.
    assert {m["statistic"]: m["valueNs"] for m in first["latency"]} == {"mean": 19000, "std": 190, "err": 19, "best": 18430, "worst": 19950}
    assert run["rank"] == 1
    assert run["group"] == {
        "size": 10,
        "rankedSize": 10,
        "sourceNative": True,
        "rankRule": {"metric": "geomean", "order": "asc", "tieTest": "ci95_overlap"},
    }
    # Users 2 and 3 are 0.1 % apart with 5 % std per case: tied; user 4 is behind them.
    ranks = [(await api.data(RUN, {"id": external_id(user)}))["runByExternalId"]["rank"] for user in (2, 3, 4)]
    assert ranks == [2, 2, 4]
    flat = (await api.data(RUN, {"id": external_id(1, 9595, "b200")}))["runByExternalId"]  # the Modal B200 runner
    assert flat["cases"] == [] and flat["group"]["rankRule"]["tieTest"] == "exact"
    assert flat["primaryMeasurement"] == {"statistic": "score", "valueNs": 23100}


async def test_the_dossier_lists_each_cases_statistics(api, seeded):
    run = (await api.data(RUN, {"id": external_id(2)}))["runByExternalId"]
    page = await api.http.get(f"/runs/{run['digest']}", headers={"Accept": "text/html"})
    assert page.status_code == 200
    html = page.text
    assert "ties: overlapping 95% confidence intervals of the geometric mean" in html
    assert "mean ± std" in html and "<td>100</td>" in html
    assert "k=7168 m=1024 n=1536" in html and "seed=8135" not in html


async def test_second_import_writes_nothing(seeded):
    counts = {name: await seeded[name].count_documents({}) for name in ("runs", "events", "source_snapshots", "comparison_groups")}
    await run_import("gpumode", seeded, snapshot_dir=FIXTURE, console=None)
    assert {name: await seeded[name].count_documents({}) for name in counts} == counts
    assert await seeded.runs.count_documents({"source": "gpumode"}) == 10 + 5 + 6
