"""The committed H200 run (data/controlled/h200-051) parses and links up."""

from __future__ import annotations

import json
from pathlib import Path

from registry.digest import manifest_digest
from registry.manifests import parse_manifest

DATA = Path(__file__).resolve().parents[2] / "data" / "controlled" / "h200-051"


def test_committed_h200_manifests_parse_and_link():
    manifests = [parse_manifest(m) for m in json.loads((DATA / "manifests.json").read_text())]
    digests = {manifest_digest(m): m for m in manifests}
    runs = [m for m in manifests if m.kind == "BenchmarkRun"]
    assert {r.metadata.labels["implementation"] for r in runs} >= {"reference", "compile", "ext"}
    for run in runs:
        for field in ("protocolDigest", "workloadDigest", "environmentDigest", "implementationDigest"):
            assert getattr(run.spec, field) in digests, field
        env = digests[run.spec.environmentDigest]
        assert env.spec.hardware.product == "NVIDIA H200" and env.spec.hardware.architecture == "sm_90"
        protocol = digests[run.spec.protocolDigest]
        assert protocol.spec.comparability.family == "kernelindex_controlled"
        assert protocol.spec.measurement.l2Flush is True
        assert len(run.spec.cases) == 16
        assert all(len(c.samplesNs) == 50 for c in run.spec.cases)
    ext = next(r for r in runs if r.metadata.labels["implementation"] == "ext")
    assert ext.spec.status.value == "passed"
    assert ext.spec.aggregates["casesFasterThanReference"] == 16
    assert (DATA / "chart.png").stat().st_size > 0
