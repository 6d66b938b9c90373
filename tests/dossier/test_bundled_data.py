"""What `serve` shows from the bundled data: the B200 leaderboard group and our H200 group under
one operation, and the controlled reruns executed on the lent H200 as KernelIndex Verified."""


async def test_both_groups_under_one_operation_and_the_verified_h200_run(bundled_api):
    data = await bundled_api.data("""{
      ours: definition(name: "kernelindex-051-qkv-qknorm-backward") {
        relatedDefinitions { name }
        comparisonGroups(includeRelated: true) {
          title gpu { product } rankRule { metric order } size
          leader { implementation { name } primaryMeasurement { valueNs } }
        }
      }
      verified: runs(filter: {evidenceLevel: KERNELINDEX_VERIFIED}) { edges { node {
        status environment { gpu { product } } implementation { name code { digest } }
        group { title } aggregates cases { index status samplesNs }
      } } }
    }""")
    ours = data["ours"]
    assert [d["name"] for d in ours["relatedDefinitions"]] == [
        "051-attention-qkv-with-qk-norm-single-kernel-backward"
    ]  # the format's name of SOL's 051
    titles = {g["title"]: g for g in ours["comparisonGroups"]}
    assert set(titles) == {"kernelindex-controlled v1 · H200", "SOL-ExecBench v1.1 · B200"}
    assert titles["kernelindex-controlled v1 · H200"]["rankRule"] == {"metric": "median", "order": "asc"}
    assert titles["SOL-ExecBench v1.1 · B200"]["rankRule"] == {"metric": "sol_score", "order": "desc"}
    # The five H200 sessions' side-by-side runs (6 + 4 + 4 + 4 + 5) and the four verified reruns;
    # the fastest is #1: ext-hybrid, the fifth session's (28.65 µs side by side, 28.77 verified).
    h200 = titles["kernelindex-controlled v1 · H200"]
    assert h200["size"] == 27
    assert h200["leader"]["implementation"]["name"] == "kernelindex-051-ext-hybrid"
    assert 28_000 < h200["leader"]["primaryMeasurement"]["valueNs"] < 29_000

    # Four controlled reruns through the offline runner, one per implementation, all Verified (the
    # fourth signed by a second approved runner key: data/runners/kernelindex-lent-h200-2.pem).
    runs = {e["node"]["implementation"]["name"]: e["node"] for e in data["verified"]["edges"]}
    assert set(runs) == {
        "kernelindex-051-ext",
        "kernelindex-051-ext-cluster",
        "kernelindex-051-ext-streamnorm",
        "kernelindex-051-ext-hybrid",
    }
    for run in runs.values():
        assert run["status"] == "passed" and run["environment"]["gpu"]["product"] == "NVIDIA H200"
        assert run["group"]["title"] == "kernelindex-controlled v1 · H200"
        assert run["aggregates"]["casesPassed"] == 16 and len(run["cases"]) == 16
        assert all(len(c["samplesNs"]) == 50 for c in run["cases"])
    geomean = {name: run["aggregates"]["geomeanLatencyNs"] for name, run in runs.items()}
    assert (
        geomean["kernelindex-051-ext-hybrid"]
        < geomean["kernelindex-051-ext-streamnorm"]
        < geomean["kernelindex-051-ext-cluster"]
        < geomean["kernelindex-051-ext"]
    )
