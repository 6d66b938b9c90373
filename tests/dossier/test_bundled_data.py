"""What `serve` shows from the bundled data: the B200 leaderboard group and our H200 and H100 groups
under one operation; our controlled runs in the v1alpha1 format, the four runs of the signed reruns
among them, with their per-case results."""

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
    assert set(titles) == {
        "kernelindex-controlled v1 · H200",
        "kernelindex-controlled v1 · H100 80GB HBM3",
        "SOL-ExecBench v1.1 · B200",
    }
    # Ranked by the run's primary measurement: the geomean over cases of the per-case medians.
    assert titles["kernelindex-controlled v1 · H200"]["rankRule"] == {"metric": "geomean", "order": "asc"}
    assert titles["SOL-ExecBench v1.1 · B200"]["rankRule"] == {"metric": "sol_score", "order": "desc"}
    # The five H200 sessions' side-by-side runs (6 + 4 + 4 + 4 + 5), the four runs of the older
    # signed reruns and the two new signed reruns (2026-12-03); the fastest is #1: ext-hybrid, the
    # fifth session's (28.65 µs side by side).
    h200 = titles["kernelindex-controlled v1 · H200"]
    h100 = titles["kernelindex-controlled v1 · H100 80GB HBM3"]
    # The H200: the five earlier sessions' side-by-side runs (6 + 4 + 4 + 4 + 5), the four runs of
    # the older signed reruns, the two signed reruns of 2026-12-03, and 2026-12-05's side-by-side
    # run of the six current revisions (data/controlled/h200-051-2026-12-05) with the signed rerun
    # of ext-hybrid's. The fastest is still #1: ext-hybrid's revision of the fifth session
    # (28.65 µs side by side; today's revision 28.68).
    assert h200["size"] == 36
    assert h200["leader"]["implementation"]["name"] == "kernelindex-051-ext-hybrid"
    assert h200["leader"]["primaryMeasurement"]["valueNs"] == 28_650
    # The H100 (2026-12-05, data/controlled/h100-051-2026-12-05): the same six and a signed rerun
    # of ext-hybrid; #1 is ext-hybrid's side-by-side run.
    assert h100["gpu"]["product"] == "NVIDIA H100 80GB HBM3" and h100["size"] == 7
    assert h100["rankRule"] == {"metric": "geomean", "order": "asc"}
    assert h100["leader"]["implementation"]["name"] == "kernelindex-051-ext-hybrid"
    assert h100["leader"]["primaryMeasurement"]["valueNs"] == 30_888
    # Verified: only the reruns signed over the format's digests (data/verified/*-2026-12-03.json,
    # runner key kernelindex-lent-h200-3; h100-*-2026-12-05.json, kernelindex-lent-4;
    # h200-*-2026-12-05.json, kernelindex-lent-5); the older signed files cover older digests.
    verified = sorted(
        (e["node"]["implementation"]["name"], e["node"]["group"]["title"], e["node"]["aggregates"]["geomeanLatencyNs"])
        for e in data["verified"]["edges"]
    )
    assert verified == [
        ("kernelindex-051-ext-hybrid", "kernelindex-controlled v1 · H100 80GB HBM3", 31_155),
        ("kernelindex-051-ext-hybrid", "kernelindex-controlled v1 · H200", 28_933),
        ("kernelindex-051-ext-hybrid", "kernelindex-controlled v1 · H200", 29_045),
        ("kernelindex-051-ext-streamnorm", "kernelindex-controlled v1 · H200", 29_805),
    ]
    for e in data["verified"]["edges"]:
        run = e["node"]
        assert run["aggregates"]["casesPassed"] == 16 and all(len(c["samplesNs"]) == 50 for c in run["cases"])

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
    # 27 re-expressed from the older dialect, and 2026-12-05's six on each card.
    assert len(runs) == 27 + 6 + 6
    products = {"kernelindex-controlled v1 · H200": "NVIDIA H200", "kernelindex-controlled v1 · H100 80GB HBM3": "NVIDIA H100 80GB HBM3"}
    assert [products[r["group"]["title"]] for r in runs].count("NVIDIA H100 80GB HBM3") == 6
    for run in runs:
        assert run["status"] == "passed" and run["environment"]["gpu"]["product"] == products[run["group"]["title"]]
        assert run["aggregates"]["casesPassed"] == 16 and len(run["cases"]) == 16
        assert all(len(c["samplesNs"]) == 50 for c in run["cases"])
        assert "rawSamples" in {a["name"] for a in run["artifacts"]}
    # The re-expressed runs name their cli.log too; the harness writes a run's manifest before its
    # own log is complete, so a run it wrote in the format names its raw samples only.
    assert sum("logs" in {a["name"] for a in run["artifacts"]} for run in runs) == 27
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
