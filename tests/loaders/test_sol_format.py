"""SOL-ExecBench in the v1alpha1 format: submission 37369 of the bundled snapshot gives exactly
the seed page's digests, and kernel 51's operation and workloads equal the catalog's.

The seed page (tests/fixtures/run-record-37369.txt) states, for submission 37369: run
`sha256:3c2100b045792938b030dc9…`, comparison key `sha256:407b8c453f0c0ea5…`, and in its
canonical manifest block the run's full workload digest `sha256:f391b661…4acf` and implementation
digest `sha256:aab8eded…610c`. The catalog rows are real rows of the seed system's export
(tests/fixtures/v1alpha1/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loaders.sol_execbench import normalize, parse
from registry.comparison import cohort_of
from registry.format import format_digest
from tests.fixtures import SEED_RECORD, seed_manifests

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "data" / "snapshots" / "sol-execbench"
SAMPLE = REPO / "tests" / "fixtures" / "v1alpha1" / "catalog-sample.jsonl"

# From the seed page (run-record-37369.txt): the page's own words, then its manifest block.
PAGE_RUN_PREFIX = "sha256:3c2100b045792938b030dc9"
PAGE_COMPARISON_PREFIX = "sha256:407b8c453f0c0ea5"
SEED_WORKLOAD = "sha256:f391b6616becb7df06e483a3a561c67e7449af3b30e990939dcb02e8a25e4acf"
SEED_IMPLEMENTATION = "sha256:aab8eded4cabe3c7f9ddb694c9a1ee88bc02ffd533450462d331dab0820b610c"
SEED_PROTOCOL = "sha256:6383f62490dad270ad2146a94f67b48fba5cfcbc0b9b180f02665c69cc4433a0"
SEED_ENVIRONMENT = "sha256:f304afb2fedab4bbeadf8ac36a990ff517ab6e824dfe5a3ee0fe46259ff5e39f"


def _catalog(table: str) -> list[dict]:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    return [item["row"] for item in rows if item["table"] == table]


@pytest.fixture(scope="module")
def kernel() -> normalize.FormatKernel:
    return normalize.format_kernel(parse.parse_kernel((BUNDLED / "kernels" / "51.json").read_bytes()))


@pytest.fixture(scope="module")
def seed_run(kernel) -> normalize.FormatRun:
    page = parse.parse_page((BUNDLED / "submissions" / "51" / "offset-0.json").read_bytes())
    (record,) = page.records
    return normalize.format_submission(parse.parse_submission(record), kernel)


def test_the_page_states_what_is_pinned():
    text = SEED_RECORD.read_text(encoding="utf-8")
    assert f"comparison key{PAGE_COMPARISON_PREFIX}…" in text
    assert f"external idsubmission/37369\n\n{PAGE_RUN_PREFIX}…" in text
    spec = seed_manifests()["run"]["spec"]
    assert (spec["workloadDigest"], spec["implementationDigest"]) == (SEED_WORKLOAD, SEED_IMPLEMENTATION)


def test_submission_37369_has_the_seed_pages_digests(kernel, seed_run):
    seed = seed_manifests()
    assert format_digest(seed_run.run).startswith(PAGE_RUN_PREFIX)
    assert format_digest(seed_run.implementation) == SEED_IMPLEMENTATION
    assert kernel.suite_digest == SEED_WORKLOAD
    assert format_digest(seed_run.protocol) == SEED_PROTOCOL
    assert format_digest(seed_run.environment) == SEED_ENVIRONMENT
    # Not only the digests: the whole canonical manifests, metadata included.
    assert seed_run.run.to_json() == seed["run"]
    assert seed_run.protocol.to_json() == seed["protocol"]
    assert seed_run.environment.to_json() == seed["environment"]
    cohort = cohort_of(run_spec=seed_run.run.spec.to_json(), workload_spec=kernel.suite.spec.to_json())
    assert cohort.comparisonKey.startswith(PAGE_COMPARISON_PREFIX)


def test_it_sits_in_the_catalogs_051_b200_cohort(kernel, seed_run):
    cohort = cohort_of(run_spec=seed_run.run.spec.to_json(), workload_spec=kernel.suite.spec.to_json())
    peers = [
        r
        for r in _catalog("benchmark_runs")
        if r["manifest"]["run"]["spec"]["sourceNative"].get("externalId") in {"32664", "32555", "33003"}
    ]
    assert len(peers) == 3
    assert {r["comparisonKey"] for r in peers} == {cohort.comparisonKey}


def test_kernel_51_equals_the_catalogs_operation_and_workloads(kernel):
    (operation,) = [r for r in _catalog("operations") if r["name"] == kernel.name]
    assert kernel.operation.to_json() == operation["manifest"]
    assert kernel.operation_digest == operation["semanticDigest"]
    workloads = {r["workloadDigest"]: r for r in _catalog("workloads") if r["operationId"] == operation["id"]}
    assert len(workloads) == 17  # 16 cases and the suite
    for manifest in (*kernel.cases, kernel.suite):
        row = workloads[format_digest(manifest)]
        assert manifest.to_json() == row["manifest"]


def test_implementations_equal_the_catalogs_for_the_same_submission(kernel):
    """The catalog's implementations of kernel 51 (submissions 32664, 32555, 33003), rebuilt
    from the facts their run rows state (user, GPU, stack)."""
    implementations = {r["id"]: r for r in _catalog("implementations")}
    for row in _catalog("benchmark_runs"):
        native = row["manifest"]["run"]["spec"]["sourceNative"]
        if native.get("benchmark") != kernel.name:
            continue
        implementation = implementations[row["implementationId"]]
        record = {
            "id": int(native["externalId"]),
            "kernel_id": 51,
            "username": implementation["manifest"]["metadata"]["authors"][0]["name"],
            "status": "COMPLETED",
            "is_correct": True,
            "is_disqualified": False,
            "sol_score": native["metrics"].get("sol_score"),
            "latency_ms": native["metrics"]["latency_ms"],
            "avg_speedup": native["metrics"].get("avg_speedup"),
            "fast_1_count": native["metrics"].get("fast_1_count"),
            "fast_1_total": native["metrics"].get("fast_1_total"),
            "gpu_type": "B200",
            "worker_id": row["manifest"]["run"]["metadata"].get("labels", {}).get("worker"),
            "evaluation_stack_version": row["manifest"]["protocol"]["spec"]["harness"]["version"],
            "finished_at": row["manifest"]["run"]["spec"]["observedAt"].rstrip("Z"),
        }
        ours = normalize.format_submission(parse.parse_submission(record), kernel)
        assert ours.implementation.to_json() == implementation["manifest"]
        assert format_digest(ours.run) == row["runDigest"]


def test_only_passed_submissions_make_a_run(kernel):
    page = parse.parse_page((BUNDLED / "submissions" / "51" / "offset-0.json").read_bytes())
    (record,) = page.records
    for change, reason in (
        ({"is_correct": False}, "incorrect"),
        ({"is_disqualified": True}, "disqualified"),
        ({"status": "RUNNING"}, "pending"),
    ):
        with pytest.raises(normalize.Skipped, match=reason):
            normalize.format_submission(parse.parse_submission({**record, **change}), kernel)
    with pytest.raises(normalize.Rejected, match="kernel_id 52"):
        normalize.format_submission(parse.parse_submission({**record, "kernel_id": 52}), kernel)


def test_axis_expressions():
    assert normalize.evaluate_axis("num_attention_heads * head_dim", {"num_attention_heads": 4, "head_dim": 256}) == 1024
    assert normalize.evaluate_axis("(a + 3) // 2 - a % 3", {"a": 7}) == 4
    with pytest.raises(normalize.Rejected, match="unbound axis 'b'"):
        normalize.evaluate_axis("a * b", {"a": 1})
