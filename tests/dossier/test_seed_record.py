"""The seed record page, line by line, answered by the API after `serve`'s own data bootstrap."""

from pathlib import Path

import pytest

from server.bootstrap import bootstrap
from server.settings import Settings

DATA = Path(__file__).resolve().parents[2] / "data"

DOSSIER = """query { runByExternalId(source: "sol-execbench", externalId: "37369") {
  id digest title name labels { key value } status current observedAt evidenceLevel
  primaryMeasurement { statistic valueNs display }
  measurements { statistic valueNs display }
  rank group { id key size rankedSize catalogRuns title leader { digest title }
    runs(first: 10) { edges { node { digest rank identity { externalId } sourceNative { solExecBench { solScore } } } } } }
  sourceNative { source sourceTitle benchmark externalId externalReference raw
    metrics { name value } solExecBench { solScore latencyMs avgSpeedup fast1Count fast1Total summary } }
  identity { digest comparisonKey source sourceTitle externalId externalReference
    protocolDigest workloadDigest environmentDigest implementationDigest }
  implementation { name project revision }
  correctness { status statement policy }
  workload { description caseCount comparator aggregation }
  protocol { digest harness { name version } timer primaryStatistic correctnessReference comparabilityFamily comparabilityNotes notes manifest }
  environment { digest gpu { vendor product architecture display } libraries { key value } manifest }
  artifacts { name }
  attestations { edges { cursor } pageInfo { hasNextPage } }
  manifest
  citation { permalink digest accessedAt text }
} }"""


@pytest.fixture
def seeded(bundled_db):
    """`serve`'s own bootstrap of the bundled data (the session's one copy: these tests only read)."""
    return bundled_db


@pytest.fixture
def api(bundled_api):
    return bundled_api


async def test_the_seed_page_line_by_line(api, seeded):
    run = (await api.data(DOSSIER))["runByExternalId"]
    assert run["title"] == "Geometric · 051_attention_qkv_with_qk_norm_single_kernel_backward · B200"
    # Primary measurement: 333.6µs mean.
    assert run["primaryMeasurement"] == {"statistic": "mean", "valueNs": 333636, "display": "333.6 µs"}
    assert run["measurements"] == [run["primaryMeasurement"]]
    # The seed page's identity: run, workload, implementation and comparison key (the page shows
    # prefixes; its canonical manifest block the full workload and implementation digests).
    assert run["digest"].startswith("sha256:3c2100b045792938b030dc9")
    assert run["group"]["key"].startswith("sha256:407b8c453f0c0ea5")
    # Rank in its cohort, honest for the data loaded: the seed page's cohort (051 on B200, stack
    # v1.1) holds the catalog's 32664, 32555 and 33003 here, all with a higher SOL score, so 4 of
    # 4 by SOL-ExecBench's own score (the seed system, with its whole board, says 50).
    assert run["rank"] == 4
    group = run["group"]
    assert (group["size"], group["rankedSize"], group["catalogRuns"]) == (4, 4, 3)
    assert group["title"] == "SOL-ExecBench v1.1 · B200"
    peers = [edge["node"] for edge in group["runs"]["edges"]]
    assert [(p["identity"]["externalId"], p["rank"]) for p in peers] == [("32664", 1), ("32555", 2), ("33003", 3), ("37369", 4)]
    assert group["leader"]["digest"] == peers[0]["digest"] != run["digest"]
    assert [p["sourceNative"]["solExecBench"]["solScore"] for p in peers] == [0.850323, 0.844609, 0.83503, 0.28508]
    assert run["observedAt"] == "2026-08-16T10:44:34.394000+00:00"
    # SOL 0.2851 · 0.46× reference · 2/16 cases faster
    sol = run["sourceNative"]["solExecBench"]
    assert sol == {
        "solScore": 0.28508,
        "latencyMs": 0.333636,
        "avgSpeedup": 0.4642,
        "fast1Count": 2,
        "fast1Total": 16,
        "summary": "SOL 0.2851 · 0.46× reference · 2/16 cases faster",
    }
    assert run["sourceNative"]["raw"]["metrics"]["sol_score"] == 0.28508
    # Identity.
    assert run["implementation"] == {"name": "Geometric", "project": "Geometric", "revision": "submission-37369"}
    identity = run["identity"]
    assert identity["sourceTitle"] == "NVIDIA SOL-ExecBench"
    assert identity["externalId"] == "37369" and identity["externalReference"] == "submission/37369"
    assert identity["comparisonKey"] == run["group"]["key"]
    assert identity["protocolDigest"] == "sha256:6383f62490dad270ad2146a94f67b48fba5cfcbc0b9b180f02665c69cc4433a0"
    assert identity["environmentDigest"] == "sha256:f304afb2fedab4bbeadf8ac36a990ff517ab6e824dfe5a3ee0fe46259ff5e39f"
    assert identity["digest"] == run["digest"]
    assert identity["workloadDigest"] == "sha256:f391b6616becb7df06e483a3a561c67e7449af3b30e990939dcb02e8a25e4acf"
    assert identity["implementationDigest"] == "sha256:aab8eded4cabe3c7f9ddb694c9a1ee88bc02ffd533450462d331dab0820b610c"
    # Correctness.
    assert run["correctness"] == {
        "status": "passed",
        "statement": "Marked passed by the source; the correctness policy was not published.",
        "policy": "not published",
    }
    # Workload.
    assert run["workload"] == {
        "description": "Correctness must pass on every case in the SOL evaluation stack.",
        "caseCount": 16,
        "comparator": "sol_execbench_eval",
        "aggregation": "mean latency",
    }
    # Protocol.
    protocol = run["protocol"]
    assert protocol["harness"] == {"name": "SOL-ExecBench evaluation stack", "version": "v1.1"}
    assert (protocol["timer"], protocol["primaryStatistic"]) == ("harness_reported", "mean")
    assert protocol["correctnessReference"] == "definition reference implementation"
    assert protocol["comparabilityFamily"] == "sol_execbench_leaderboard"
    assert any("median" in note for note in protocol["notes"])  # the stack computes the median of CUPTI spans
    # Environment.
    assert run["environment"]["gpu"]["display"] == "NVIDIA B200 (sm_100)"
    assert run["environment"]["libraries"] == [{"key": "evaluation_stack", "value": "v1.1"}]
    # Artifacts, attestations, evidence.
    assert run["artifacts"] == [] and run["attestations"]["edges"] == []
    assert run["evidenceLevel"] == "REPORTED"
    assert run["labels"] == [{"key": "worker", "value": "external-prod-b200-modal-1"}]
    # Canonical manifest and citation.
    assert run["manifest"]["kind"] == "BenchmarkRun" and run["manifest"]["spec"]["timing"]["latencyNs"] == {"mean": 333636}
    assert protocol["manifest"]["spec"]["comparability"]["family"] == "sol_execbench_leaderboard"
    assert run["citation"]["digest"] == run["digest"] and run["citation"]["permalink"].endswith(f"/runs/{run['digest']}")


async def test_bootstrap_twice_writes_nothing(seeded, mongo_uri):
    counts = {name: await seeded[name].count_documents({}) for name in ("runs", "events", "definitions", "workloads", "source_snapshots")}
    await bootstrap(mongo_uri, Settings(database=seeded.name), DATA)
    assert {name: await seeded[name].count_documents({}) for name in counts} == counts


async def test_permalink_serves_the_manifest(api, seeded):
    run = (await api.data(DOSSIER))["runByExternalId"]
    response = await api.http.get(f"/runs/{run['digest']}", headers={"Accept": "application/json"})
    assert response.status_code == 200 and response.json() == run["manifest"]
    # A client that asks for nothing in particular (curl's */*) gets the page.
    page = await api.http.get(f"/runs/{run['digest']}", headers={"Accept": "*/*"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
