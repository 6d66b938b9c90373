"""What `serve` shows from the bundled data: the B200 leaderboard group and our H200 group under
one operation; our controlled runs in the v1alpha1 format, the four runs of the signed reruns among
them, with their per-case results."""

from tests.fixtures import BUNDLED_CATALOG_OBJECTS


async def test_both_groups_under_one_operation_and_the_controlled_h200_runs(bundled_api):
    data = await bundled_api.data("""{
      ours: definition(name: "kernelindex-051-qkv-qknorm-backward") {
        relatedDefinitions { name }
        comparisonGroups(includeRelated: true) {
          title gpu { product } rankRule { metric order } size
          leader { implementation { name } primaryMeasurement { valueNs } }
        }
      }
      verified: runs(filter: {evidenceLevel: KERNELINDEX_VERIFIED}) { edges { node {
        name implementation { name } aggregates group { title } cases { index samplesNs }
      } } }
    }""")
    ours = data["ours"]
    assert [d["name"] for d in ours["relatedDefinitions"]] == [
        "051-attention-qkv-with-qk-norm-single-kernel-backward"
    ]  # the format's name of SOL's 051
    titles = {g["title"]: g for g in ours["comparisonGroups"]}
    assert set(titles) == {"kernelindex-controlled v1 · H200", "SOL-ExecBench v1.1 · B200"}
    # Ranked by the run's primary measurement: the geomean over cases of the per-case medians.
    assert titles["kernelindex-controlled v1 · H200"]["rankRule"] == {"metric": "geomean", "order": "asc"}
    assert titles["SOL-ExecBench v1.1 · B200"]["rankRule"] == {"metric": "sol_score", "order": "desc"}
    # The five H200 sessions' side-by-side runs (6 + 4 + 4 + 4 + 5), the four runs of the older
    # signed reruns and the two new signed reruns (2026-12-03); the fastest is #1: ext-hybrid, the
    # fifth session's (28.65 µs side by side).
    h200 = titles["kernelindex-controlled v1 · H200"]
    assert h200["size"] == 29
    assert h200["leader"]["implementation"]["name"] == "kernelindex-051-ext-hybrid"
    assert h200["leader"]["primaryMeasurement"]["valueNs"] == 28_650
    # Verified: only the new reruns, signed over the format's digests (data/verified/*-2026-12-03.json,
    # runner key kernelindex-lent-h200-3); the older signed files cover older digests.
    verified = {e["node"]["implementation"]["name"]: e["node"] for e in data["verified"]["edges"]}
    assert set(verified) == {"kernelindex-051-ext-streamnorm", "kernelindex-051-ext-hybrid"}
    for run in verified.values():
        assert run["group"]["title"] == "kernelindex-controlled v1 · H200"
        assert run["aggregates"]["casesPassed"] == 16 and all(len(c["samplesNs"]) == 50 for c in run["cases"])
    assert verified["kernelindex-051-ext-hybrid"]["aggregates"]["geomeanLatencyNs"] == 29_045

    runs, after = [], None
    while True:  # pages of 10 (each run's 16 cases with their samples weigh on the cost limit)
        page = (
            await bundled_api.data(
                """query($after: String) { runs(first: 10, after: $after, filter: {evidenceLevel: REPRODUCIBLE}) {
                  pageInfo { hasNextPage endCursor } edges { node {
                    name status environment { gpu { product } } implementation { name }
                    group { title } aggregates cases { index status samplesNs } artifacts { name uri digest }
                } } } }""",
                {"after": after},
            )
        )["runs"]
        runs += [e["node"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert len(runs) == 27
    for run in runs:
        assert run["status"] == "passed" and run["environment"]["gpu"]["product"] == "NVIDIA H200"
        assert run["group"]["title"] == "kernelindex-controlled v1 · H200"
        assert run["aggregates"]["casesPassed"] == 16 and len(run["cases"]) == 16
        assert all(len(c["samplesNs"]) == 50 for c in run["cases"])
        assert {a["name"] for a in run["artifacts"]} >= {"rawSamples", "logs"}
    # The four runs of the signed reruns name their envelope and runner log as evidence.
    signed = {
        r["implementation"]["name"]: r["aggregates"]["geomeanLatencyNs"]
        for r in runs
        if any(a["uri"].endswith(".runner.log") for a in r["artifacts"])
    }
    assert (
        signed["kernelindex-051-ext-hybrid"]
        < signed["kernelindex-051-ext-streamnorm"]
        < signed["kernelindex-051-ext-cluster"]
        < signed["kernelindex-051-ext"]
    )


# Where each kind of the format is stored (store/schema.py).
COLLECTIONS = {
    "OperationSpec": "definitions",
    "WorkloadCase": "workloads",
    "WorkloadSuite": "workloads",
    "SoftwareProject": "projects",
    "ImplementationRevision": "implementations",
    "BenchmarkProtocol": "protocols",
    "ExecutionEnvironment": "environments",
    "BenchmarkRun": "runs",
    "ModelRevision": "model_revisions",
    "ServingStackRevision": "serving_stack_revisions",
    "ServingConfiguration": "serving_configurations",
    "ServingWorkload": "serving_workloads",
    "ServingRun": "serving_runs",
}


async def test_the_bundled_export_is_stored_by_kind(bundled_db, report):
    """Loaded / refused by kind through the import `serve` runs: every object of the bundled export
    (tests/registry/test_bundled_catalog_format.py counts them in the file) is stored with the
    export's provenance, and the import refused no row."""
    (record,) = await bundled_db.catalog_imports.find().to_list()
    sha256 = record["_id"]
    lines = [
        f"{'kind':<24}{'in export':>10}{'stored':>10}   (import record: {record['export']['file']}, refused rows: {sum(record['refused'].values())})"
    ]
    stored = {}
    for kind, collection in COLLECTIONS.items():
        stored[kind] = await bundled_db[collection].count_documents({"kind": kind, "provenance.export.sha256": sha256})
        lines.append(f"{kind:<24}{BUNDLED_CATALOG_OBJECTS[kind]:>10,}{stored[kind]:>10,}")
    report("the bundled catalog export as stored by `serve`, by kind", lines)
    assert record["refused"] == {} or not any(record["refused"].values())
    assert stored == BUNDLED_CATALOG_OBJECTS
