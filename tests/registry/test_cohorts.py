"""Cohort keys (registry/comparison.py) recomputed against real rows of the seed system's catalog
export, which carry the keys it computed (tests/fixtures/v1alpha1/README.md says which rows).
bench/verify_format.py does the same over the whole export (7,857 runs, 1,912 cohorts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registry.comparison import Cohort, cohort_of, correctness_key, metric_key, primary_measurement
from registry.format import format_digest, parse_format_manifest

SAMPLE = Path(__file__).parents[1] / "fixtures" / "v1alpha1" / "catalog-sample.jsonl"
ROWS = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
RUNS = [item["row"] for item in ROWS if item["table"] == "benchmark_runs"]
WORKLOADS = {item["row"]["workloadDigest"]: item["row"] for item in ROWS if item["table"] == "workloads"}
# The seed record's page (tests/fixtures/run-record-37369.txt): "comparison key sha256:407b8c453f0c0ea5…"
SEED_COHORT_PREFIX = "sha256:407b8c453f0c0ea5"


def _external(row: dict) -> str:
    native = row["manifest"]["run"]["spec"]["sourceNative"]
    return f"{native['source']}:{native.get('externalId', row['runDigest'][:15])}"


@pytest.mark.parametrize("row", RUNS, ids=_external)
def test_cohort_keys_are_the_seeds(row: dict):
    bundle = row["manifest"]
    run = parse_format_manifest(bundle["run"])
    assert format_digest(run) == row["runDigest"]
    assert format_digest(parse_format_manifest(bundle["protocol"])) == row["protocolKey"]
    assert format_digest(parse_format_manifest(bundle["environment"])) == row["environmentKey"]
    workload = WORKLOADS[run.spec.workloadDigest]
    assert format_digest(parse_format_manifest(workload["manifest"])) == workload["workloadDigest"]

    cohort = cohort_of(run_spec=run.spec.to_json(), workload_spec=workload["manifest"]["spec"])
    assert cohort.protocolKey == row["protocolKey"]
    assert cohort.environmentKey == row["environmentKey"]
    assert cohort.correctnessKey == row["correctnessKey"]
    assert cohort.comparisonKey == row["comparisonKey"]
    primary = primary_measurement(run.spec.to_json())
    assert (primary.metric, primary.statistic, primary.unit, primary.value) == (
        row["primaryMetric"],
        row["primaryStatistic"],
        row["primaryUnit"],
        row["primaryValue"],
    )


def test_the_seed_records_cohort_holds_the_051_b200_runs():
    sol_051 = [r for r in RUNS if r["manifest"]["run"]["spec"]["sourceNative"].get("externalId") in {"32664", "32555", "33003"}]
    assert len(sol_051) == 3
    keys = {r["comparisonKey"] for r in sol_051}
    assert len(keys) == 1 and keys.pop().startswith(SEED_COHORT_PREFIX)


def test_every_part_splits_a_cohort():
    row = RUNS[0]
    spec = parse_format_manifest(row["manifest"]["run"]).spec.to_json()
    workload = WORKLOADS[spec["workloadDigest"]]["manifest"]["spec"]
    base = cohort_of(run_spec=spec, workload_spec=workload)
    other = "sha256:" + "0" * 64
    for part in ("operationDigest", "workloadDigest", "protocolKey", "environmentKey", "correctnessKey", "metricKey"):
        changed = Cohort(**{**base.__dict__, part: other})
        assert changed.comparisonKey != base.comparisonKey, part
    assert correctness_key({"comparator": "a"}) != correctness_key({"comparator": "b"})


def test_primary_measurement_rule():
    timing = {"primaryStatistic": "median", "latencyNs": {"mean": 10, "median": 9}, "samples": 5}
    assert primary_measurement({"timing": timing}).value == 9
    assert primary_measurement({"timing": {**timing, "primaryStatistic": "mean"}}).value == 10
    only_mean = {"primaryStatistic": "median", "latencyNs": {"mean": 10}}
    assert primary_measurement({"timing": only_mean}).value == 10  # falls back to the other
    score = {"metric": "score", "statistic": "geomean", "unit": "s", "value": 1e-5}
    assert primary_measurement({"measurements": [score]}).key == metric_key("score", "geomean", "s") == "score:geomean:s"
    assert primary_measurement({}) is None
