"""Our controlled evidence of the older dialect, re-expressed in the v1alpha1 format
(registry/controlled_format.py, `python -m kernels.harness.reexpress`): every manifest is valid
format, every per-case result of the older manifests is read back unchanged, runs are keyed by
`cohort_of`, and re-expressing twice changes nothing.

The older manifests are read from tests/fixtures/controlled-older-dialect/ (data/controlled as it
was before the re-expression) and the signed envelopes in data/verified/."""

from __future__ import annotations

import hashlib
import json
import shutil
import statistics
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kernels.harness import reexpress
from loaders.common.format_plan import plan_bundles
from loaders.common.format_set import format_set
from registry.comparison import cohort_of, primary_measurement
from registry.controlled_format import aggregates_of, cases_of
from registry.format import format_digest, parse_format_manifest
from tests.older_dialect import OLDER, older_runs

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """A copy of data/ with the older manifests in data/controlled, re-expressed."""
    out = tmp_path_factory.mktemp("reexpress") / "data"
    shutil.copytree(ROOT / "data", out, ignore=shutil.ignore_patterns("kernelindex-catalog", "snapshots"))
    for path in OLDER.glob("*/manifests.json"):
        shutil.copy(path, out / "controlled" / path.parent.name / "manifests.json")
    assert reexpress.main(out) == 0
    return out


def _written_in_the_format(manifests: list[dict]) -> bool:
    """A folder `kernelindex bench` wrote in the format itself (data/controlled/h100-051-2026-12-05):
    runs with no older manifest behind them, not this file's subject (tests/dossier serves them)."""
    runs = [m for m in manifests if m["kind"] == "BenchmarkRun"]
    return bool(runs) and not any("reexpressed_from" in m["metadata"].get("labels", {}) for m in runs)


def _manifests(data: Path) -> list[dict]:
    """The re-expressed manifests: every folder of data/controlled but those written in the format."""
    out = []
    for path in sorted((data / "controlled").glob("*/manifests.json")):
        manifests = json.loads(path.read_text())
        if not _written_in_the_format(manifests):
            out += manifests
    return list({json.dumps(m, sort_keys=True): m for m in out}.values())


def test_every_manifest_is_the_format_and_its_digest_is_stable(data):
    manifests = _manifests(data)
    for m in manifests:
        parsed = parse_format_manifest(m)
        assert parsed.to_json() == m  # stored as the format normalizes it: the digest of the file is the served one
        assert format_digest(parse_format_manifest(json.loads(json.dumps(m)))) == format_digest(parsed)
    kinds = sorted(m["kind"] for m in manifests)
    assert kinds.count("BenchmarkRun") == 27  # 23 harness runs and the 4 runs of signed results
    assert not any("cases" in m["spec"] for m in manifests if m["kind"] == "BenchmarkRun")


def test_every_per_case_result_and_aggregate_reads_back_as_before(data):
    older = older_runs()
    manifests = _manifests(data)
    by_digest = {format_digest(parse_format_manifest(m)): m for m in manifests}
    runs = [m for m in manifests if m["kind"] == "BenchmarkRun"]
    assert {m["metadata"]["labels"]["reexpressed_from"] for m in runs} == set(older)
    for run in runs:
        old = older[run["metadata"]["labels"]["reexpressed_from"]]
        assert run["metadata"]["name"] == old["metadata"]["name"]
        assert run["spec"]["observedAt"] == old["spec"]["observedAt"]
        suite = by_digest[run["spec"]["workloadDigest"]]["spec"]
        cases = cases_of(run["spec"], suite)
        assert len(cases) == len(old["spec"]["cases"]) == 16
        for case, before in zip(cases, old["spec"]["cases"], strict=True):
            assert case.pop("sampleCount") == len(before["samplesNs"])
            assert case["latencyNs"].pop("std") == round(statistics.stdev(before["samplesNs"]))
            assert case == before
        assert aggregates_of(run["spec"]) == old["spec"]["aggregates"]
        primary = primary_measurement(run["spec"])
        assert (primary.key, primary.value) == ("latency:geomean:ns", old["spec"]["timing"]["latencyNs"]["median"])


def test_raw_samples_and_logs_are_named_by_their_digests(data):
    for path in sorted((data / "controlled").glob("*/manifests.json")):
        for m in json.loads(path.read_text()):
            if m["kind"] != "BenchmarkRun":
                continue
            for ref in m["spec"]["evidence"].values():
                held = (path.parent / ref["uri"]).resolve()
                assert "sha256:" + hashlib.sha256(held.read_bytes()).hexdigest() == ref["digest"]


def test_runs_are_planned_in_their_cohorts_at_the_level_their_code_supports(data):
    bundles = format_set(_manifests(data), source="kernelindex")
    # Loose: the CPU protocol, and the revisions of the 2026-12-03 signed reruns (data/verified).
    assert sorted(m.metadata.name for m in bundles.loose) == [
        "kernelindex-051-ext-hybrid",
        "kernelindex-051-ext-streamnorm",
        "kernelindex-controlled-v1-cpu",
    ]
    plan = plan_bundles(bundles.bundles, datetime.now(UTC))
    workloads = {doc["_id"]: doc for doc in plan.objects["workloads"]}
    for run in plan.runs:
        cohort = cohort_of(run_spec=run["spec"], workload_spec=workloads[run["spec"]["workloadDigest"]]["spec"])
        assert run["groupKey"] == cohort.comparisonKey
        assert cohort.metricKey == "latency:geomean:ns"
        assert run["evidenceLevel"] == "Reproducible"  # code at a commit, pinned by digest
        assert run["source"] == "kernelindex" and run["externalId"] == run["metadata"]["name"]
    # One cohort: the lent machines' kernel strings (…-v973-…, …-v657-…) are the runs' labels.
    assert len(plan.groups) == 1
    assert {r["metadata"]["labels"]["operating_system"].split("-")[3] for r in plan.runs} == {"v657", "v973"}
    best = min(plan.runs, key=lambda r: r["rankValue"])
    assert best["metadata"]["labels"]["implementation"] == "ext-hybrid" and best["rankValue"] == 28650


def test_re_expressing_again_changes_nothing(data):
    before = {p: p.read_bytes() for p in (data / "controlled").glob("*/manifests.json")}
    assert reexpress.main(data) == 0
    assert {p: p.read_bytes() for p in (data / "controlled").glob("*/manifests.json")} == before
