"""resolveKernel / resolveKernels over HTTP through the real app and database: an exact shape's
ranked runs per cohort, the nearest measured shapes when nothing measured it, and refusals.

The operation, suites and runs here are synthetic (tests only); the bundled-data test at the end
uses the data `serve` loads."""

from tests.resolve_support import seed as _seed

RESOLVE = """query($op: String!, $axes: [AxisValueInput!]!, $gpu: String, $stat: String) {
  resolveKernel(operation: $op, axes: $axes, gpu: $gpu, statistic: $stat) {
    measured gpu asked { name value } operation { name }
    exact { ...Cohort }
    nearest { kind axis othersMatch label axes { name value } cohorts { ...Cohort } }
    userErrors { field message code }
  } }
fragment Cohort on CohortMatch {
  caseIndex statistic runCount group { title gpu { product } }
  runs(first: 10) { caseRank groupRank status latencyNs display runDigest permalink run { digest title } }
}"""


def _axes(**values):
    return [{"name": k, "value": v} for k, v in values.items()]


async def test_exact_shape_ranks_runs_on_that_case_in_every_cohort(api, db):
    await _seed(db)
    answer = (await api.data(RESOLVE, {"op": "synthetic-matmul", "axes": _axes(m=4, n=512, k=64)}))["resolveKernel"]
    assert answer["userErrors"] == [] and answer["measured"] is True and answer["nearest"] == []
    assert answer["asked"] == [{"name": "m", "value": 4}, {"name": "n", "value": 512}]
    assert sorted(c["group"]["gpu"]["product"] for c in answer["exact"]) == ["NVIDIA B200", "NVIDIA H200"]
    for cohort in answer["exact"]:
        assert cohort["caseIndex"] == 4 and cohort["statistic"] == "mean" and cohort["runCount"] == 3
        runs = cohort["runs"]
        # b (factor 1) first, a (factor 3) second; c failed this case: listed last without a rank.
        assert [r["caseRank"] for r in runs] == [1, 2, None]
        assert [r["latencyNs"] for r in runs] == [4 * 512 + 1000, 3 * (4 * 512 + 1000), 2 * (4 * 512 + 1000)]
        assert runs[2]["status"] == "failed"
        assert runs[0]["display"] == "3.0 µs"
        assert runs[0]["run"]["digest"] == runs[0]["runDigest"] and runs[0]["permalink"].endswith("/runs/" + runs[0]["runDigest"])


async def test_gpu_and_statistic_narrow_and_reorder(api, db):
    await _seed(db)
    answer = (await api.data(RESOLVE, {"op": "synthetic-matmul", "axes": _axes(m=1, n=128), "gpu": "h200", "stat": "median"}))[
        "resolveKernel"
    ]
    assert [c["group"]["gpu"]["product"] for c in answer["exact"]] == ["NVIDIA H200"]
    cohort = answer["exact"][0]
    assert cohort["statistic"] == "median"
    assert [r["latencyNs"] for r in cohort["runs"]] == [128 + 900, 2 * (128 + 900), 3 * (128 + 900)]
    by_arch = (await api.data(RESOLVE, {"op": "synthetic-matmul", "axes": _axes(m=1, n=128), "gpu": "sm_100"}))["resolveKernel"]
    assert [c["group"]["gpu"]["product"] for c in by_arch["exact"]] == ["NVIDIA B200"]


async def test_unmeasured_shape_gives_nearest_on_each_side_labelled(api, db):
    await _seed(db)
    answer = (await api.data(RESOLVE, {"op": "synthetic-matmul", "axes": _axes(m=4, n=1000), "gpu": "NVIDIA B200"}))["resolveKernel"]
    assert answer["measured"] is False and answer["exact"] == []
    found = {(n["kind"], n["axis"]): n for n in answer["nearest"]}
    # n: 512 below and 2048 above at m=4 (the other axis kept).
    below, above = found[("NEAREST_BELOW", "n")], found[("NEAREST_ABOVE", "n")]
    assert below["axes"] == [{"name": "m", "value": 4}, {"name": "n", "value": 512}] and below["othersMatch"] is True
    assert above["axes"] == [{"name": "m", "value": 4}, {"name": "n", "value": 2048}] and above["othersMatch"] is True
    assert "nearest below, not the asked shape" in below["label"] and "n=512 (asked 1000)" in below["label"]
    # m: below, 1 at n=1000 was never measured, so the nearest in m with the smallest change in n; above, (8, 1000) keeps n.
    assert found[("NEAREST_BELOW", "m")]["othersMatch"] is False
    assert found[("NEAREST_BELOW", "m")]["axes"][0] == {"name": "m", "value": 1}
    assert "also differs in n=" in found[("NEAREST_BELOW", "m")]["label"]
    assert found[("NEAREST_ABOVE", "m")]["axes"] == [{"name": "m", "value": 8}, {"name": "n", "value": 1000}]
    assert found[("NEAREST_ABOVE", "m")]["othersMatch"] is True
    cohort = below["cohorts"][0]
    assert cohort["caseIndex"] == 4 and [r["caseRank"] for r in cohort["runs"]] == [1, 2, None]


async def test_refusals_name_the_field(api, db):
    await _seed(db)

    async def errors(op, axes, gpu=None):
        answer = (await api.data(RESOLVE, {"op": op, "axes": axes, "gpu": gpu}))["resolveKernel"]
        assert answer["exact"] == [] and answer["nearest"] == []
        return [(e["field"], e["code"]) for e in answer["userErrors"]], answer["userErrors"][0]["message"]

    assert (await errors("no-such-op", _axes(m=1)))[0] == [("operation", "NOT_FOUND")]
    found, message = await errors("synthetic-matmul", _axes(m=1))
    assert found == [("axes", "BAD_USER_INPUT")] and "n" in message
    found, message = await errors("synthetic-matmul", _axes(m=1, n=2, q=3))
    assert found == [("axes.q", "BAD_USER_INPUT")] and "not an axis" in message
    found, message = await errors("synthetic-matmul", _axes(m=1, n=2, k=65))
    assert found == [("axes.k", "BAD_USER_INPUT")] and "constant" in message
    assert (await errors("synthetic-matmul", _axes(m=0, n=2)))[0] == [("axes.m", "BAD_USER_INPUT")]
    assert (await errors("synthetic-matmul", [{"name": "m", "value": 1}, {"name": "m", "value": 2}]))[0] == [
        ("axes[1].name", "BAD_USER_INPUT")
    ]
    found, message = await errors("synthetic-matmul", _axes(m=1, n=128), gpu="MI300X")
    assert found == [("gpu", "NOT_FOUND")] and "NVIDIA B200" in message


BATCH = """query($requests: [KernelRequest!]!) { resolveKernels(requests: $requests) {
  measured exact { caseIndex runs(first: 1) { runDigest } } nearest { kind } userErrors { field code } } }"""


async def test_batch_answers_in_order_and_is_bounded(api, db):
    await _seed(db)
    requests = [
        {"operation": "synthetic-matmul", "axes": _axes(m=1, n=512), "gpu": "B200"},
        {"operation": "nope", "axes": []},
        {"operation": "synthetic-matmul", "axes": _axes(m=2, n=512), "gpu": "B200"},
    ]
    answers = (await api.data(BATCH, {"requests": requests}))["resolveKernels"]
    assert [a["measured"] for a in answers] == [True, False, False]
    assert answers[0]["exact"][0]["caseIndex"] == 1
    assert answers[1]["userErrors"] == [{"field": "requests[1].operation", "code": "NOT_FOUND"}]
    assert {n["kind"] for n in answers[2]["nearest"]} == {"NEAREST_BELOW", "NEAREST_ABOVE"}
    body = await api.post(BATCH, {"requests": [requests[0]] * 21})
    assert "at most 20" in body["errors"][0]["message"] and body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_bundled_data_exact_and_unmeasured(bundled_api):
    """On what `serve` loads: operation 051's H200 cohort measured (batch_size 4, seq_len 128); seq_len 200 was not."""
    api = bundled_api
    op = "kernelindex-051-qkv-qknorm-backward"
    exact = (await api.data(RESOLVE, {"op": op, "axes": _axes(batch_size=4, seq_len=128), "gpu": "H200"}))["resolveKernel"]
    assert exact["measured"] is True
    cohort = exact["exact"][0]
    assert cohort["group"]["title"] == "kernelindex-controlled v1 · H200" and cohort["statistic"] == "median"
    ranked = [r["latencyNs"] for r in cohort["runs"] if r["caseRank"] is not None]
    assert ranked == sorted(ranked) and len(ranked) >= 10
    near = (await api.data(RESOLVE, {"op": op, "axes": _axes(batch_size=4, seq_len=200), "gpu": "H200"}))["resolveKernel"]
    assert near["measured"] is False
    sides = {(n["kind"], n["axis"]): n["axes"] for n in near["nearest"]}
    assert sides[("NEAREST_BELOW", "seq_len")] == [{"name": "batch_size", "value": 4}, {"name": "seq_len", "value": 128}]
    assert sides[("NEAREST_ABOVE", "seq_len")][0] == {"name": "batch_size", "value": 4}
    assert sides[("NEAREST_ABOVE", "seq_len")][1]["value"] > 200
