"""Every row of the bundled catalog export (data/kernelindex-catalog/, the seed system's public
export; NOTICE there) against our format models and cohort keys: each manifest validates as
v1alpha1, each digest we compute is the export's, and each run's comparison, protocol,
environment and correctness keys and primary measurement are the export's. Reads the file once
(about 35,000 manifests)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import zstandard

from registry.comparison import cohort_of, primary_measurement
from registry.format import parse_format_manifest
from registry.format_conformance import Conformance
from tests.fixtures import BUNDLED_CATALOG_OBJECTS

BUNDLED = Path(__file__).resolve().parents[2] / "data" / "kernelindex-catalog"


@pytest.fixture(scope="module")
def export_rows() -> list[dict]:
    (path,) = sorted(BUNDLED.glob("catalog-*.jsonl.zst"))
    with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
        return [json.loads(line) for line in io.TextIOWrapper(reader, encoding="utf-8")]


def test_every_manifest_validates_and_every_digest_is_the_exports(export_rows, report):
    conformance = Conformance().check_rows(export_rows)
    report("v1alpha1 conformance of the bundled catalog export, by kind (loaded / refused)", conformance.table())
    assert conformance.refusals() == []
    assert {kind: len(count.digests) for kind, count in conformance.kinds.items()} == BUNDLED_CATALOG_OBJECTS
    # Every kind of the format is in the export, and every manifest of it loads.
    assert all(count.loaded == count.manifests > 0 for count in conformance.kinds.values())
    assert sum(count.manifests for count in conformance.kinds.values()) == 35458


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
