import pytest

from registry.comparison import group_identity
from registry.evidence import EvidenceLevel, derive_evidence_level
from registry.manifests import ImplementationRevisionSpec
from registry.ranking import Entry, RankRule, leader, rank_entries, rank_rule_for
from tests import factories

DEF = "sha256:" + "1" * 64


def impl(code=None):
    return ImplementationRevisionSpec(name="x", project="x", revision="r", definitionDigest=DEF, code=code)


def test_evidence_levels():
    assert derive_evidence_level(implementation=impl(), verifying_runners=set()) is EvidenceLevel.reported
    with_code = impl({"repository": "https://example.org/x.git", "commit": "abc", "digest": DEF})
    assert derive_evidence_level(implementation=with_code, verifying_runners=set()) is EvidenceLevel.reproducible
    assert derive_evidence_level(implementation=impl(), verifying_runners={"r1"}) is EvidenceLevel.kernelindex_verified
    assert derive_evidence_level(implementation=impl(), verifying_runners={"r1", "r2"}) is EvidenceLevel.independently_replicated


def test_group_key_ignores_implementation_and_software_but_not_gpu():
    a = factories.run_bundle("1", user="a")
    b = factories.run_bundle("2", user="b")

    def key(bundle, env=None):
        from registry.digest import manifest_digest

        return group_identity(
            definition_digest=manifest_digest(bundle.definition),
            workload_digest=manifest_digest(bundle.workload),
            protocol=bundle.protocol.spec,
            environment=(env or bundle.environment).spec,
        ).key()

    assert key(a) == key(b)
    assert key(a) != key(a, factories.environment("NVIDIA H200", "sm_90"))
    newer_driver = factories.environment().spec.model_copy(
        update={"software": factories.environment().spec.software.model_copy(update={"driver": "999"})}
    )
    assert (
        group_identity(
            definition_digest="sha256:" + "2" * 64, workload_digest="sha256:" + "3" * 64, protocol=a.protocol.spec, environment=newer_driver
        ).key()
        == group_identity(
            definition_digest="sha256:" + "2" * 64,
            workload_digest="sha256:" + "3" * 64,
            protocol=a.protocol.spec,
            environment=a.environment.spec,
        ).key()
    )


def test_source_native_rule_ranks_by_sol_score_with_exact_ties():
    rule = rank_rule_for(factories.protocol().spec)
    assert rule == RankRule(metric="sol_score", order="desc", noise_aware=False)
    ranks = rank_entries(rule, [Entry("a", 0.5), Entry("b", 0.9), Entry("c", 0.5), Entry("d", None)])
    assert ranks == {"b": 1, "a": 2, "c": 2, "d": None}
    assert leader(ranks) == "b"


def test_controlled_rule_ties_inside_noise():
    rule = RankRule(metric="median", order="asc", noise_aware=True)
    ranks = rank_entries(rule, [Entry("fast", 100.0, noise=3.0), Entry("close", 102.0, noise=1.0), Entry("slow", 150.0, noise=1.0)])
    assert ranks == {"fast": 1, "close": 1, "slow": 3}


def test_noise_comes_from_the_runs_own_samples():
    from registry.manifests import BenchmarkRunSpec
    from registry.ranking import rank_value

    digest = "sha256:" + "4" * 64
    case = {
        "index": 0,
        "axes": {"n": 1},
        "status": "passed",
        "latencyNs": {"median": 100},
        "samplesNs": [90, 95, 100, 105, 110, 100, 100, 100],
    }
    spec = BenchmarkRunSpec.model_validate(
        {
            "status": "passed",
            "timing": {"primaryStatistic": "median", "latencyNs": {"median": 1000}},
            "observedAt": "2026-11-30T00:00:00Z",
            "protocolDigest": digest,
            "workloadDigest": digest,
            "environmentDigest": digest,
            "implementationDigest": digest,
            "cases": [case],
        }
    )
    rule = RankRule(metric="median", order="asc", noise_aware=True)
    value, noise = rank_value(rule, spec)
    # quartiles of the samples: 96.25 and 103.75 → half-IQR 3.75 % of the case median.
    assert value == 1000.0 and noise == pytest.approx(37.5)
