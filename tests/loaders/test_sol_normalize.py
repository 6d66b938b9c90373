"""Pure steps: parse and normalize, no database, no network."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from loaders.sol_execbench import normalize, parse
from loaders.sol_execbench.fetch import retry_after_seconds
from registry.digest import manifest_digest
from registry.manifests import RunStatus, parse_manifest
from tests.fixtures import seed_manifests, sol_051_facts
from tests.loaders import synthetic

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "data" / "snapshots" / "sol-execbench"
SEED_PROTOCOL = "sha256:6383f62490dad270ad2146a94f67b48fba5cfcbc0b9b180f02665c69cc4433a0"
SEED_ENVIRONMENT = "sha256:f304afb2fedab4bbeadf8ac36a990ff517ab6e824dfe5a3ee0fe46259ff5e39f"
SEED_RUN = "sha256:3c2100b045792938b030dc99e62585550012b982921e377090ef1d6ec04d9c56"


def bundled_run() -> normalize.RunManifests:
    kernel = normalize.normalize_kernel(parse.parse_kernel((BUNDLED / "kernels" / "51.json").read_bytes()))
    page = parse.parse_page((BUNDLED / "submissions" / "51" / "offset-0.json").read_bytes())
    (record,) = page.records
    return normalize.normalize_submission(parse.parse_submission(record), kernel)


def synthetic_kernel(kernel_id: int = 901) -> normalize.KernelManifests:
    return normalize.normalize_kernel(parse.parse_kernel(json.dumps({"data": synthetic.kernel_detail(kernel_id)}).encode()))


def normalized(record: dict, kernel_id: int = 901) -> normalize.RunManifests:
    return normalize.normalize_submission(parse.parse_submission(record), synthetic_kernel(kernel_id))


# ---------------------------------------------------------------- the seed record


def test_seed_digests_are_reproduced_by_the_registry():
    seed = seed_manifests()
    assert manifest_digest(parse_manifest(seed["run"])) == SEED_RUN
    assert manifest_digest(parse_manifest(seed["protocol"])) == SEED_PROTOCOL
    assert manifest_digest(parse_manifest(seed["environment"])) == SEED_ENVIRONMENT


def test_bundled_submission_37369_normalizes_to_the_seed():
    seed = seed_manifests()
    ours = bundled_run()

    # Protocol and environment: exactly the seed's (same spec, same digest, same metadata).
    assert manifest_digest(ours.protocol) == SEED_PROTOCOL
    assert manifest_digest(ours.environment) == SEED_ENVIRONMENT
    assert ours.protocol.to_json()["spec"] == seed["protocol"]["spec"]
    assert ours.protocol.metadata.name == "sol-execbench-leaderboard-v1-1"
    assert ours.protocol.metadata.title == seed["protocol"]["metadata"]["title"]
    assert ours.protocol.metadata.annotations["primaryStatisticNote"] == (
        "stack v1.1 computes the median of CUPTI spans although the documentation says mean"
    )
    assert ours.environment.to_json() == seed["environment"]

    # Run: the seed's spec except the two digests of objects the seed did not publish.
    run = ours.run.to_json()
    expected = dict(seed["run"]["spec"])
    assert run["spec"]["workloadDigest"] == manifest_digest(ours.kernel.workload)
    assert run["spec"]["implementationDigest"] == manifest_digest(ours.implementation)
    for name in ("workloadDigest", "implementationDigest"):
        expected.pop(name)
        run["spec"].pop(name)
    assert run["spec"] == expected
    assert run["metadata"] == seed["run"]["metadata"]


def test_bundled_kernel_51_keeps_only_the_baseline_digest():
    detail = json.loads((BUNDLED / "kernels" / "51.json").read_bytes())["data"]
    kernel = normalize.normalize_kernel(parse.parse_kernel((BUNDLED / "kernels" / "51.json").read_bytes()))
    spec = kernel.definition.to_json()["spec"]
    assert "NOT CAPTURED" in detail["baseline"]  # a placeholder, not SOL-ExecBench code
    assert spec["reference"]["referenceDigest"] == normalize.text_digest(detail["baseline"])
    assert detail["baseline"] not in json.dumps(kernel.definition.to_json())
    assert spec["axes"]["hidden_size"] == {"type": "const", "value": 640, "description": "Model width (Gemma-3 270M)."}
    assert spec["inputs"]["grad_query"]["shape"] == ["batch_size", "num_attention_heads", "seq_len", "head_dim"]
    assert spec["inputs"]["rms_norm_eps"]["shape"] is None
    assert set(spec["outputs"]) == {
        "grad_hidden_states",
        "grad_q_weight",
        "grad_k_weight",
        "grad_v_weight",
        "grad_q_norm_weight",
        "grad_k_norm_weight",
    }
    suite = kernel.workload.to_json()["spec"]
    facts = sol_051_facts()
    assert len(suite["cases"]) == 16
    assert suite["correctness"] == {
        "comparator": "sol_execbench_eval",
        "description": "Correctness must pass on every case in the SOL evaluation stack.",
    }
    assert suite["definitionDigest"] == kernel.definition_digest
    for case, fact in zip(suite["cases"], facts["cases"], strict=True):
        # The case's variable axes are the facts'; the source lists the constant ones too.
        assert case["axes"] == {"batch_size": fact["batch_size"], "seq_len": fact["seq_len"], **facts["const_axes"]}
        assert case["sourceNative"] == {"sol_ms": fact["sol_ms_b200"], "baseline_latency_ms": fact["baseline_latency_ms_b200"]}


# ---------------------------------------------------------------- submissions


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, RunStatus.passed),
        ({"is_correct": False}, RunStatus.incorrect),
        ({"is_disqualified": True}, RunStatus.disqualified),
        ({"is_disqualified": True, "is_correct": False}, RunStatus.disqualified),
        ({"status": "FAILED", "is_correct": None}, RunStatus.failed),
        ({"status": "ERROR", "is_correct": None}, RunStatus.failed),
        ({"status": "REJECTED", "is_correct": None}, RunStatus.disqualified),
        ({"status": "RUNNING", "is_correct": None}, RunStatus.pending),
        ({"status": "PENDING_RESULT", "is_correct": None}, RunStatus.pending),
        ({"status": "CANCELLED", "is_correct": None}, RunStatus.cancelled),
    ],
)
def test_status_mapping(fields, expected):
    record = synthetic.submission(901, 1, **fields)
    assert normalize.run_status(parse.parse_submission(record)) is expected
    assert normalized(record).run.spec.status is expected


def test_unknown_status_and_completed_without_verdict_are_rejected():
    with pytest.raises(normalize.Rejected, match="unknown status 'EXPLODED'"):
        normalized(synthetic.submission(901, 1, status="EXPLODED"))
    with pytest.raises(normalize.Rejected, match="is_correct is null"):
        normalized(synthetic.submission(901, 1, is_correct=None))


def test_run_fields():
    run = normalized(synthetic.submission(901, 42, sol_score=0.5, latency_ms=0.0123455, username="synthetic-Üser")).run
    spec = run.to_json()["spec"]
    assert spec["timing"] == {"latencyNs": {"mean": 12346}, "primaryStatistic": "mean"}  # half-even of 12345.5
    assert spec["observedAt"] == "2026-08-01T12:00:00.123Z"
    assert spec["sourceNative"] == {
        "source": "sol-execbench",
        "benchmark": synthetic.kernel_name(901),
        "externalId": "42",
        "metrics": {"sol_score": 0.5, "latency_ms": 0.0123455, "avg_speedup": 8.1001, "fast_1_count": 2, "fast_1_total": 4},
    }
    assert run.metadata.name == "sol-submission-42"
    assert run.metadata.title == f"synthetic-Üser · {synthetic.kernel_name(901)} · B200"
    assert run.metadata.labels == {"worker": "synthetic-worker-1"}


def test_implementation_revision():
    item = normalized(synthetic.submission(901, 42, username="synthetic-user"))
    assert item.implementation.to_json()["spec"] == {
        "name": "synthetic-user",
        "project": "synthetic-user",
        "revision": "submission-42",
        "definitionDigest": item.kernel.definition_digest,
        "source": {"source": "sol-execbench", "externalId": "submission/42"},
    }


@pytest.mark.parametrize(
    ("finished", "submitted", "observed", "fallback"),
    [
        ("2026-08-16T10:44:34.394", "x", "2026-08-16T10:44:34.394Z", False),
        ("2026-08-16T10:44:34", "x", "2026-08-16T10:44:34.000Z", False),
        ("2026-08-16T10:44:34.394999", "x", "2026-08-16T10:44:34.394Z", False),
        ("2026-08-16T12:44:34.394+02:00", "x", "2026-08-16T10:44:34.394Z", False),
        ("2026-08-16T10:44:34.394Z", "x", "2026-08-16T10:44:34.394Z", False),
        (None, "2026-08-15T09:00:00.5", "2026-08-15T09:00:00.500Z", True),
    ],
)
def test_observed_at(finished, submitted, observed, fallback):
    record = synthetic.submission(901, 1, finished_at=finished)
    record["submitted_at"] = submitted if submitted != "x" else "2026-01-01T00:00:00"
    run = normalized(record).run
    assert run.spec.observedAt == observed
    assert ("observedAtFrom" in run.metadata.annotations) is fallback


def test_a_run_without_latency_is_skipped_not_rejected():
    with pytest.raises(normalize.Skipped, match="no latency_ms"):
        normalized(synthetic.submission(901, 1, status="FAILED", is_correct=None, latency_ms=None))
    with pytest.raises(normalize.Rejected, match="neither finished_at nor submitted_at"):
        record = synthetic.submission(901, 1, finished_at=None)
        record["submitted_at"] = None
        normalized(record)


def test_unknown_gpu_and_wrong_kernel_are_rejected():
    with pytest.raises(normalize.Rejected, match="gpu_type 'Z900'"):
        normalized(synthetic.submission(901, 1, gpu_type="Z900"))
    with pytest.raises(normalize.Rejected, match="kernel_id 902 on a page of kernel 901"):
        normalize.normalize_submission(parse.parse_submission(synthetic.submission(902, 1)), synthetic_kernel(901))


def test_one_environment_per_gpu_and_stack_one_protocol_per_stack():
    a = normalized(synthetic.submission(901, 1))
    b = normalized(synthetic.submission(901, 2, stack="v1.0"))
    c = normalized(synthetic.submission(901, 3, gpu_type="H100"))
    assert manifest_digest(a.protocol) != manifest_digest(b.protocol)
    assert manifest_digest(a.protocol) == manifest_digest(c.protocol)
    assert b.protocol.metadata.name == "sol-execbench-leaderboard-v1-0"
    assert "primaryStatisticNote" not in b.protocol.metadata.annotations  # only known for v1.1
    assert c.environment.spec.hardware.architecture == "sm_90"
    assert len({manifest_digest(x.environment) for x in (a, b, c)}) == 3


# ---------------------------------------------------------------- parsing


def test_unknown_fields_are_ignored():
    record = synthetic.submission(
        901, 1, review_status="approved", profiling_results={"x": 1}, started_at="2026-08-01T11:59:30", run_log="…"
    )
    plain = synthetic.submission(901, 1)
    assert manifest_digest(normalized(record).run) == manifest_digest(normalized(plain).run)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"username": None}, "username: Input should be a valid string"),
        ({"sol_score": "0.5"}, "sol_score: Input should be a valid number"),
        ({"fast_1_count": True}, "fast_1_count: Input should be a valid integer"),
        ({"finished_at": "yesterday"}, "finished_at: Value error, not an ISO 8601 time"),
        ({"is_disqualified": "no"}, "is_disqualified: Input should be a valid boolean"),
    ],
)
def test_wrong_types_are_named(change, message):
    with pytest.raises(parse.ParseError, match=message):
        parse.parse_submission({**synthetic.submission(901, 1), **change})


@pytest.mark.parametrize("field", ["id", "username", "status", "latency_ms", "gpu_type", "evaluation_stack_version", "is_correct"])
def test_missing_required_field(field):
    record = synthetic.submission(901, 1)
    del record[field]
    with pytest.raises(parse.ParseError, match=f"{field}: Field required"):
        parse.parse_submission(record)


def test_envelopes():
    with pytest.raises(parse.ParseError, match="malformed JSON"):
        parse.parse_page(b'{"data": {')
    with pytest.raises(parse.ParseError, match="envelope"):
        parse.parse_page(b'{"submissions": []}')
    with pytest.raises(parse.ParseError, match="data.total"):
        parse.parse_page(b'{"data": {"submissions": [], "offset": 0, "limit": 20}}')
    kernels, problems = parse.parse_kernel_list(
        json.dumps({"data": {"kernels": [synthetic.kernel_summary(901), {"id": 902, "name": 5}]}}).encode()
    )
    assert [k.id for k in kernels] == [901]
    assert problems == [("kernel 902 (list entry)", "name: Input should be a valid string")]


def test_source_time_without_zone_is_utc():
    assert parse.parse_source_time("2026-08-16T10:44:34.394") == datetime(2026, 8, 16, 10, 44, 34, 394000, tzinfo=UTC)


def test_retry_after():
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
