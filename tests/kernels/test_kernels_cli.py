"""`bench 051 --device cpu --cases small` end to end: manifests that parse and link up."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from registry.comparison import primary_measurement
from registry.controlled_format import aggregates_of, cases_of
from registry.digest import manifest_digest
from registry.format import format_digest, parse_format_manifest

REPO = Path(__file__).resolve().parents[2]


def test_cpu_bench_writes_parseable_manifests(tmp_path):
    pytest.importorskip("torch", reason="torch is not installed (pip install torch)")
    from kernels.harness.cli import main

    out = tmp_path / "run"
    rc = main(["051", "--device", "cpu", "--cases", "small", "--out", str(out), "--rounds", "2", "--samples", "3", "--warmups", "1"])
    assert rc == 0
    data = json.loads((out / "manifests.json").read_text())
    assert isinstance(data, list)
    manifests = [parse_format_manifest(m) for m in data]  # the KernelIndex v1alpha1 format
    by_kind: dict[str, list] = {}
    for m in manifests:
        by_kind.setdefault(m.kind, []).append(m.to_json())
    assert set(by_kind) == {
        "OperationSpec",
        "WorkloadSuite",
        "BenchmarkProtocol",
        "ExecutionEnvironment",
        "ImplementationRevision",
        "BenchmarkRun",
    }
    digest = {m.metadata.name: format_digest(m) for m in manifests}
    (definition,) = by_kind["OperationSpec"]
    (workload,) = by_kind["WorkloadSuite"]
    (protocol,) = by_kind["BenchmarkProtocol"]
    (environment,) = by_kind["ExecutionEnvironment"]
    (impl,) = by_kind["ImplementationRevision"]
    (run,) = by_kind["BenchmarkRun"]

    assert definition["metadata"]["labels"]["related_source"] == "sol-execbench"
    assert workload["spec"]["operationSpecDigest"] == digest[definition["metadata"]["name"]]
    assert impl["spec"]["operation"]["specDigest"] == digest[definition["metadata"]["name"]]
    assert impl["spec"]["source"]["contentDigest"].startswith("sha256:")
    spec = run["spec"]
    assert spec["protocolDigest"] == digest[protocol["metadata"]["name"]]
    assert spec["workloadDigest"] == digest[workload["metadata"]["name"]]
    assert spec["environmentDigest"] == digest[environment["metadata"]["name"]]
    assert spec["implementationDigest"] == digest[impl["metadata"]["name"]]
    assert protocol["spec"]["measurement"]["timer"] == "wall_clock_perf_counter"
    assert protocol["metadata"]["labels"]["l2_flush"] == "false"
    assert protocol["spec"]["harness"]["name"] == "kernelindex-controlled"
    assert protocol["metadata"]["labels"]["rounds"] == "2"

    assert spec["status"] == "passed"
    assert spec["sourceNative"]["source"] == "kernelindex" and "cases" not in spec
    cases = cases_of(spec, workload["spec"])
    assert len(cases) == len(workload["spec"]["cases"])
    for case in cases:
        assert case["status"] == "passed"
        assert len(case["samplesNs"]) == 3
        assert case["correctness"]["rounds"] == 2 and case["correctness"]["passed"]
        assert set(case["correctness"]["outputs"]) == {
            "grad_hidden_states",
            "grad_q_weight",
            "grad_k_weight",
            "grad_v_weight",
            "grad_q_norm_weight",
            "grad_k_norm_weight",
        }
        assert case["axes"]["batch_size"] * case["axes"]["seq_len"] <= 64
    aggregates = aggregates_of(spec)
    assert aggregates["caseCount"] == len(cases)
    assert primary_measurement(spec).key == "latency:geomean:ns"
    assert primary_measurement(spec).value == aggregates["geomeanLatencyNs"]
    raw_file = out / "raw.json"
    assert spec["evidence"]["rawSamples"] == {"uri": "raw.json", "digest": "sha256:" + hashlib.sha256(raw_file.read_bytes()).hexdigest()}
    raw = json.loads((out / "raw.json").read_text())
    assert raw["implementations"]["reference"]["cases"][0]["rounds"]
    assert (out / "summary.md").exists()


def test_cpu_and_cuda_protocols_differ():
    from kernels.harness.protocol import Settings, protocol_manifest

    cpu = protocol_manifest(Settings(device="cpu"))
    cuda = protocol_manifest(Settings(device="cuda"))
    assert manifest_digest(cpu) != manifest_digest(cuda)
    assert cuda.spec.measurement.timer == "cuda_graph_replay_events"
    assert cuda.spec.measurement.l2Flush is True
    assert cuda.spec.correctness.minMatchedRatio == 0.99
    assert cuda.spec.comparability.family == "kernelindex_controlled"
    assert cuda.spec.comparability.version == "v1"


def test_cli_rejects_unknown_operation_and_implementation(tmp_path):
    from kernels.harness.cli import main

    assert main(["999", "--out", str(tmp_path)]) == 2
    assert main(["051", "--impl", "nope", "--out", str(tmp_path), "--device", "cpu"]) == 2


def test_module_entry_point_help():
    out = subprocess.run([sys.executable, "-m", "kernels.harness.cli", "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--impl" in out.stdout


def test_importing_the_cli_and_registry_needs_no_torch():
    code = (
        "import sys; import kernels.harness.cli, kernels.implementations, kernels.operations, "
        "kernels.ops.qkv_qknorm_backward.definition, kernels.ops.qkv_qknorm_backward.checks; "
        "from kernels.implementations import IMPLEMENTATIONS, get; "
        "from kernels.operations import get_operation; "
        "from registry.digest import manifest_digest; from registry.manifests import make_manifest; "
        "op = get_operation('051'); "
        "d = make_manifest('OperationSpec', op.name, op.definition.operation_spec()); "
        "[get(n).manifest(manifest_digest(d)) for n in IMPLEMENTATIONS]; "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
