"""A synthetic operation for resolveKernel's tests (tests only: no real submission data): two
variable axes (m, n) and a constant k, one suite of seven shapes, three runs per GPU (B200, H200)."""

from registry.digest import manifest_digest
from registry.manifests import make_manifest
from store.publish import Bundle, publish_many
from tests import factories

# Shapes (m, n) of the synthetic suite: m in {1, 4}, n in {128, 512, 2048}, plus (8, 1000).
SHAPES = [(1, 128), (1, 512), (1, 2048), (4, 128), (4, 512), (4, 2048), (8, 1000)]


def _definition():
    return make_manifest(
        "OperationSpec",
        "synthetic-matmul",
        {
            "name": "synthetic-matmul",
            "description": "A synthetic operation with two variable axes and one constant.",
            "axes": {"m": {"type": "var"}, "n": {"type": "var"}, "k": {"type": "const", "value": 64}},
            "inputs": {"a": {"shape": ["m", "k"], "dtype": "float32"}, "b": {"shape": ["k", "n"], "dtype": "float32"}},
            "outputs": {"c": {"shape": ["m", "n"], "dtype": "float32"}},
        },
    )


def _bundles(defn, product="NVIDIA B200", architecture="sm_100"):
    """Three runs (users a, b, c) on every shape; user b is fastest except where c fails."""
    suite = make_manifest(
        "WorkloadSuite",
        "synthetic-matmul-suite",
        {"definitionDigest": manifest_digest(defn), "cases": [{"index": i, "axes": {"m": m, "n": n}} for i, (m, n) in enumerate(SHAPES)]},
    )
    proto, env = factories.protocol(), factories.environment(product, architecture)
    out = []
    for user, factor in (("a", 3), ("b", 1), ("c", 2)):
        impl = factories.implementation(defn, user, f"rev-{user}-{architecture}")
        cases = [
            {
                "index": i,
                "axes": {"m": m, "n": n},
                "status": "failed" if (user == "c" and i == 4) else "passed",
                "latencyNs": {"mean": factor * (m * n + 1000), "median": factor * (m * n + 900)},
            }
            for i, (m, n) in enumerate(SHAPES)
        ]
        run = make_manifest(
            "BenchmarkRun",
            f"synthetic-matmul-{user}-{architecture}",
            {
                "status": "passed",
                "timing": {"primaryStatistic": "mean", "latencyNs": {"mean": factor * 10_000}},
                "observedAt": "2026-08-16T10:44:34.394Z",
                "protocolDigest": manifest_digest(proto),
                "workloadDigest": manifest_digest(suite),
                "environmentDigest": manifest_digest(env),
                "implementationDigest": manifest_digest(impl),
                "sourceNative": {"source": factories.SOURCE, "externalId": f"{user}-{architecture}", "metrics": {"sol_score": 1 / factor}},
                "cases": cases,
            },
            title=f"{user} on {product}",
        )
        out.append(Bundle(run=run, definition=defn, workload=suite, protocol=proto, environment=env, implementation=impl))
    return out


async def seed(db):
    defn = _definition()
    outcomes = await publish_many(db, _bundles(defn) + _bundles(defn, "NVIDIA H200", "sm_90"))
    return {o.run_digest for o in outcomes}
