"""Every row of the bundled catalog export (data/kernelindex-catalog/, the seed system's public
export; NOTICE there) against our format models and cohort keys: each manifest validates as
v1alpha1, each digest we compute is the export's, and each run's comparison, protocol,
environment and correctness keys and primary measurement are the export's. Reads the file once
(about 35,000 manifests)."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest
import zstandard

from registry.comparison import cohort_of, primary_measurement
from registry.format import FormatError, format_digest, parse_format_manifest

BUNDLED = Path(__file__).resolve().parents[2] / "data" / "kernelindex-catalog"
DIGESTED = {
    "operations": "semanticDigest",
    "workloads": "workloadDigest",
    "implementations": "implementationDigest",
    "model_revisions": "modelDigest",
    "serving_stack_revisions": "stackDigest",
    "serving_configurations": "configurationDigest",
    "serving_workloads": "workloadDigest",
    "serving_runs": "runDigest",
}


@pytest.fixture(scope="module")
def export_rows() -> list[dict]:
    (path,) = sorted(BUNDLED.glob("catalog-*.jsonl.zst"))
    with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
        return [json.loads(line) for line in io.TextIOWrapper(reader, encoding="utf-8")]


def test_every_manifest_validates_and_every_digest_is_the_exports(export_rows):
    checked: Counter = Counter()
    problems: list[str] = []

    def check(label: str, manifest: dict, expected: str | None) -> None:
        checked[label] += 1
        try:
            digest = format_digest(parse_format_manifest(manifest))
        except FormatError as error:
            problems.append(f"{label} {manifest['metadata']['name']}: {error}")
            return
        if expected is not None and digest != expected:
            problems.append(f"{label} {manifest['metadata']['name']}: {digest} != {expected}")

    for item in export_rows:
        table, row = item["table"], item["row"]
        if table in DIGESTED:
            check(table, row["manifest"], row[DIGESTED[table]])
        elif table == "projects":
            check(table, row["manifest"], None)  # the export names projects by id, not digest
        elif table == "benchmark_runs":
            bundle = row["manifest"]
            check("runs", bundle["run"], row["runDigest"])
            check("protocols", bundle["protocol"], bundle["run"]["spec"]["protocolDigest"])
            check("environments", bundle["environment"], bundle["run"]["spec"]["environmentDigest"])
    assert problems == []
    # The export's counts (its README): 7,857 runs, 5,627 workloads, 4,250 implementations, ...
    assert checked["runs"] == 7857 and checked["workloads"] == 5627 and checked["implementations"] == 4250
    assert checked["operations"] == 449 and checked["serving_runs"] == 722


def test_every_runs_cohort_keys_are_the_exports(export_rows):
    workloads = {i["row"]["workloadDigest"]: i["row"]["manifest"]["spec"] for i in export_rows if i["table"] == "workloads"}
    runs = [i["row"] for i in export_rows if i["table"] == "benchmark_runs"]
    mismatches: list[str] = []
    for row in runs:
        spec = parse_format_manifest(row["manifest"]["run"]).spec.to_json()
        cohort = cohort_of(run_spec=spec, workload_spec=workloads[spec["workloadDigest"]])
        primary = primary_measurement(spec)
        ours = {
            "comparisonKey": cohort.comparisonKey,
            "protocolKey": cohort.protocolKey,
            "environmentKey": cohort.environmentKey,
            "correctnessKey": cohort.correctnessKey,
            "primaryMetric": primary.metric if primary else "none",
            "primaryStatistic": primary.statistic if primary else None,
            "primaryUnit": primary.unit if primary else None,
            "primaryValue": primary.value if primary else None,
        }
        mismatches += [f"{row['runDigest']} {key}: {value} != {row[key]}" for key, value in ours.items() if row[key] != value]
    assert mismatches == []
    assert len({row["comparisonKey"] for row in runs}) == 1912
