"""Synthetic manifests for tests and benchmarks (named synthetic: no real submission data)."""

from __future__ import annotations

from registry import controlled_format
from registry.digest import manifest_digest
from registry.manifests import Manifest, make_manifest
from store.bundle import Bundle

SOURCE = "synthetic-bench"
CONTROLLED_SOURCE = controlled_format.SOURCE


def definition(name: str = "synthetic-op") -> Manifest:
    return make_manifest(
        "OperationSpec",
        name,
        {
            "name": name,
            "description": "A synthetic operation: y = x + 1.",
            "axes": {"n": {"type": "var", "description": "length"}},
            "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
            "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
            "tags": ["synthetic"],
        },
        title=f"Synthetic {name}",
    )


def workload(defn: Manifest, cases: int = 3) -> Manifest:
    return make_manifest(
        "WorkloadSuite",
        f"{defn.metadata.name}-suite",
        {
            "definitionDigest": manifest_digest(defn),
            "cases": [{"index": i, "axes": {"n": 1024 * (i + 1)}} for i in range(cases)],
            "correctness": {"comparator": "synthetic_allclose", "description": "allclose per case"},
        },
    )


def protocol(family: str = "sol_execbench_leaderboard", version: str = "v1.1") -> Manifest:
    return make_manifest(
        "BenchmarkProtocol",
        f"synthetic-{family.replace('_', '-')}-{version.replace('.', '-')}",
        {
            "harness": {"name": "synthetic harness", "version": version},
            "correctness": {"reference": "definition reference implementation", "comparator": "synthetic_allclose"},
            "measurement": {"timer": "harness_reported", "primaryStatistic": "mean"},
            "comparability": {"family": family, "notes": "synthetic"},
        },
    )


def environment(product: str = "NVIDIA B200", architecture: str = "sm_100") -> Manifest:
    return make_manifest(
        "ExecutionEnvironment",
        f"synthetic-{architecture}",
        {"hardware": {"vendor": "nvidia", "product": product, "architecture": architecture}},
    )


def implementation(defn: Manifest, user: str, revision: str) -> Manifest:
    return make_manifest(
        "ImplementationRevision",
        f"impl-{user.lower()}-{revision}",
        {
            "name": user,
            "project": user,
            "revision": revision,
            "definitionDigest": manifest_digest(defn),
            "source": {"source": SOURCE, "externalId": revision},
        },
    )


def run_bundle(
    external_id: str,
    *,
    score: float = 0.5,
    latency_ns: int = 100_000,
    status: str = "passed",
    user: str = "alice",
    defn: Manifest | None = None,
    env: Manifest | None = None,
    proto: Manifest | None = None,
    case_samples: int = 0,
) -> Bundle:
    """A SYNTHETIC run. With `case_samples`, it carries that many per-case timing samples in
    sourceNative.metrics as our controlled runs do (registry/controlled_format.py: source
    `kernelindex`, `case<i>_*` names)."""
    defn = defn or definition()
    wl = workload(defn)
    proto = proto or protocol()
    env = env or environment()
    impl = implementation(defn, user, f"submission-{external_id}")
    run = make_manifest(
        "BenchmarkRun",
        f"synthetic-{external_id}",
        {
            "status": status,
            "timing": {"primaryStatistic": "mean", "latencyNs": {"mean": latency_ns}},
            "observedAt": "2026-08-16T10:44:34.394Z",
            "protocolDigest": manifest_digest(proto),
            "workloadDigest": manifest_digest(wl),
            "environmentDigest": manifest_digest(env),
            "implementationDigest": manifest_digest(impl),
            "sourceNative": {
                "source": CONTROLLED_SOURCE if case_samples else SOURCE,
                "benchmark": defn.spec.name,
                "externalId": external_id,
                "metrics": {"sol_score": score, "latency_ms": latency_ns / 1e6}
                | {f"case{i % 4}_sample{i // 4}": latency_ns + i for i in range(case_samples)},
            },
        },
        title=f"{user} · {defn.spec.name} · B200",
    )
    return Bundle(run=run, definition=defn, workload=wl, protocol=proto, environment=env, implementation=impl)
