"""The committed H200 runs (data/controlled/h200-051) are the v1alpha1 format and link up."""

from __future__ import annotations

import json
from pathlib import Path

from registry.controlled_format import aggregates_of, cases_of
from registry.format import format_digest, parse_format_manifest

DATA = Path(__file__).resolve().parents[2] / "data" / "controlled" / "h200-051"


def test_committed_h200_manifests_parse_and_link():
    manifests = [parse_format_manifest(m) for m in json.loads((DATA / "manifests.json").read_text())]
    digests = {format_digest(m): m.to_json() for m in manifests}
    runs = [m.to_json() for m in manifests if m.kind == "BenchmarkRun"]
    assert {r["metadata"]["labels"]["implementation"] for r in runs} >= {"reference", "compile", "ext"}
    for run in runs:
        spec = run["spec"]
        for field in ("protocolDigest", "workloadDigest", "environmentDigest", "implementationDigest"):
            assert spec[field] in digests, field
        env = digests[spec["environmentDigest"]]["spec"]
        assert env["hardware"]["product"] == "NVIDIA H200" and env["hardware"]["architecture"] == "sm_90"
        protocol = digests[spec["protocolDigest"]]
        assert protocol["spec"]["comparability"]["family"] == "kernelindex_controlled"
        assert protocol["metadata"]["labels"]["l2_flush"] == "true"
        cases = cases_of(spec, digests[spec["workloadDigest"]]["spec"])
        assert len(cases) == 16 and all(c["sampleCount"] == 50 for c in cases)
    ext = next(r for r in runs if r["metadata"]["labels"]["implementation"] == "ext")
    assert ext["spec"]["status"] == "passed"
    assert aggregates_of(ext["spec"])["casesFasterThanReference"] == 16
    assert (DATA / "chart.png").stat().st_size > 0
