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
    assert (
        derive_evidence_level(implementation=impl(), verifying_runners={"r1", "r2"})
        is EvidenceLevel.independently_replicated
    )


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
    newer_driver = factories.environment().spec.model_copy(update={"software": factories.environment().spec.software.model_copy(update={"driver": "999"})})
    assert group_identity(
        definition_digest="sha256:" + "2" * 64, workload_digest="sha256:" + "3" * 64, protocol=a.protocol.spec, environment=newer_driver
    ).key() == group_identity(
        definition_digest="sha256:" + "2" * 64, workload_digest="sha256:" + "3" * 64, protocol=a.protocol.spec, environment=a.environment.spec
    ).key()


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
