"""Our controlled runs in the v1alpha1 format on a real database: a database that holds them as the
older dialect published them (tests/fixtures/controlled-older-dialect/) gets the format's runs on
the next start, which supersede them; the dossier shows the same per-case results and aggregates as
the older manifests; their cohorts are `cohort_of`'s; a second start writes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from registry.comparison import cohort_of
from registry.manifests import parse_manifest
from resolvers import ids
from server.bootstrap import bootstrap
from server.settings import Settings
from store import leaderboards
from store.manifest_set import publish_set
from tests.older_dialect import OLDER, older_runs

ROOT = Path(__file__).resolve().parents[2]

RUNS = """query($after: String) { runs(first: 10, after: $after) { pageInfo { hasNextPage endCursor } edges { node {
  name digest current evidenceLevel labels { key value } group { id }
  aggregates cases { index status latency { statistic valueNs } solScore sampleCount samplesNs }
} } } }"""


def _data_dir(tmp_path: Path) -> Path:
    """The bundled data our runs need (controlled runs, signed results, runner keys, code pins),
    without the catalog and the snapshots, which are not what this test is about."""
    data = tmp_path / "data"
    data.mkdir()
    for name in ("controlled", "verified", "runners"):
        shutil.copytree(ROOT / "data" / name, data / name)
    shutil.copy(ROOT / "data" / "code-pins.json", data / "code-pins.json")
    return data


async def _served_runs(api) -> list[dict]:
    out, after = [], None
    while True:
        page = (await api.data(RUNS, {"after": after}))["runs"]
        out += [e["node"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            return out
        after = page["pageInfo"]["endCursor"]


async def test_older_dialect_runs_are_superseded_with_the_same_measurements(api, db, mongo_uri, tmp_path):
    # A database as the older dialect left it: our 23 side-by-side runs, published by the older path.
    older_manifests = []
    for path in sorted(OLDER.glob("*/manifests.json")):
        older_manifests += [parse_manifest(m) for m in json.loads(path.read_text())]
    report = await publish_set(db, older_manifests)
    assert len(report.runs) == 23
    older_digests = {o.run_digest for o in report.runs}

    data = _data_dir(tmp_path)
    settings = Settings(database=db.name)
    await bootstrap(mongo_uri, settings, data)
    # Each older run is kept, superseded by the format's run of the same name.
    for digest in older_digests:
        doc = await db.runs.find_one({"_id": digest})
        assert doc["current"] is False and doc["supersededBy"], doc["metadata"]["name"]
        successor = await db.runs.find_one({"_id": doc["supersededBy"]})
        assert successor["metadata"]["name"] == doc["metadata"]["name"] and successor["current"] is True
        assert successor["metadata"]["labels"]["reexpressed_from"] == digest

    older = older_runs()
    current = [r for r in await _served_runs(api) if r["current"]]
    served = [r for r in current if any(label["key"] == "reexpressed_from" for label in r["labels"])]
    assert len(served) == 27
    # Beside them, the four reruns signed over the format's digests (data/verified/*-2026-12-03.json,
    # *-2026-12-05.json) and the twelve runs `kernelindex bench` wrote in the format itself
    # (data/controlled/h100-051-2026-12-05, h200-051-2026-12-05).
    others = sorted(r["evidenceLevel"] for r in current if r not in served)
    assert others == ["KERNELINDEX_VERIFIED"] * 4 + ["REPRODUCIBLE"] * 12
    workloads = {doc["_id"]: doc async for doc in db.workloads.find({})}
    for run in served:
        labels = {label["key"]: label["value"] for label in run["labels"]}
        before = older[labels["reexpressed_from"]]["spec"]
        assert run["evidenceLevel"] == "REPRODUCIBLE"
        assert run["aggregates"] == before["aggregates"]
        for case, old in zip(run["cases"], before["cases"], strict=True):
            latency = {m["statistic"]: m["valueNs"] for m in case["latency"]}
            assert case["index"] == old["index"] and case["status"] == old["status"]
            assert {k: v for k, v in latency.items() if k != "std"} == old["latencyNs"]
            assert case["solScore"] == old["solScore"] and case["samplesNs"] == old["samplesNs"] and case["sampleCount"] == 50
        # In the cohort the seed system's keys give it.
        doc = await db.runs.find_one({"_id": run["digest"]})
        cohort = cohort_of(run_spec=doc["spec"], workload_spec=workloads[doc["spec"]["workloadDigest"]]["spec"])
        assert doc["groupKey"] == cohort.comparisonKey
    assert len({doc["groupKey"] for doc in [await db.runs.find_one({"_id": r["digest"]}) for r in served]}) == 1

    # A second start finds everything present and writes nothing.
    counts = {name: await db[name].count_documents({}) for name in ("runs", "events", "workloads", "implementations", "records")}
    await bootstrap(mongo_uri, settings, data)
    assert {name: await db[name].count_documents({}) for name in counts} == counts


SOURCE_METRICS = """query($id: ID!) { run(id: $id) { sourceNative {
  all: metrics { name value } runLevel: metrics(perCase: false) { name value }
} } }"""


async def test_per_case_metrics_can_be_left_out_of_a_runs_source_metrics(api, db, mongo_uri, tmp_path):
    # Lists and pages ask for the run-level figures only: a controlled run carries ~1,300 per-case
    # numbers (every sample), which only the dossier's case table needs.
    await bootstrap(mongo_uri, Settings(database=db.name), _data_dir(tmp_path))
    doc = await db.runs.find_one({"spec.sourceNative.source": "kernelindex", "current": True})
    stored = doc["spec"]["sourceNative"]["metrics"]
    native = (await api.data(SOURCE_METRICS, {"id": ids.encode("Run", doc["_id"])}))["run"]["sourceNative"]
    assert {m["name"]: m["value"] for m in native["all"]} == stored and "case0_sample_0" in stored
    assert native["runLevel"] == [{"name": k, "value": v} for k, v in sorted(stored.items()) if not k.startswith("case")]

    # Another source's metrics are its own, whatever their names: nothing is left out.
    other = {"latency_ms": 0.031, "case1_note": 2}
    await db.runs.update_one({"_id": doc["_id"]}, {"$set": {"spec.sourceNative.source": "gpumode", "spec.sourceNative.metrics": other}})
    native = (await api.data(SOURCE_METRICS, {"id": ids.encode("Run", doc["_id"])}))["run"]["sourceNative"]
    assert native["runLevel"] == native["all"] == [{"name": "case1_note", "value": 2.0}, {"name": "latency_ms", "value": 0.031}]


async def test_leaderboard_rows_leave_per_case_metrics_out_and_older_rows_are_rebuilt(api, db, mongo_uri, tmp_path):
    settings, data = Settings(database=db.name), _data_dir(tmp_path)
    await bootstrap(mongo_uri, settings, data)
    doc = await db.runs.find_one({"spec.sourceNative.source": "kernelindex", "current": True})
    board = await db.leaderboards.find_one({"_id": doc["groupKey"]})
    assert len(board["rows"]) > 1
    assert all(row["spec"]["sourceNative"]["metrics"] == {} for row in board["rows"])  # ours are all per-case
    listed = await db.run_rows.find({"groupKey": doc["groupKey"]}).to_list()  # store/run_rows.py: the same
    assert len(listed) == len(board["rows"]) and all(row["spec"]["sourceNative"]["metrics"] == {} for row in listed)

    # A database from before (rows carrying every sample) gets its rows rebuilt on the next start.
    older = [
        {**row, "spec": {**row["spec"], "sourceNative": {**row["spec"]["sourceNative"], "metrics": {"case0_status": 0}}}}
        for row in board["rows"]
    ]
    await db.leaderboards.update_one({"_id": doc["groupKey"]}, {"$set": {"rows": older}})
    await db.comparison_groups.update_one({"_id": doc["groupKey"]}, {"$unset": {"leaderboard.shape": ""}})
    await db.counters.delete_one({"_id": leaderboards.SHAPE_MARK})  # ...and from before backfill's mark
    await bootstrap(mongo_uri, settings, data)
    assert (await db.leaderboards.find_one({"_id": doc["groupKey"]}))["rows"] == board["rows"]
    assert (await db.comparison_groups.find_one({"_id": doc["groupKey"]}))["leaderboard"]["shape"] == leaderboards.ROW_SHAPE
