"""Architectures: GPU products map to architectures, implementations declare what they run on,
and revisions published before the field existed keep their digests (the legacy rule)."""

import pytest

from registry.architectures import architecture_of, declared, refusal, supports
from registry.manifests import ManifestError, make_manifest, parse_manifest


@pytest.mark.parametrize(
    "gpu, arch",
    [
        ("NVIDIA H200", "sm_90"),
        ("NVIDIA H100 80GB HBM3", "sm_90"),
        ("NVIDIA B200", "sm_100"),
        ("NVIDIA GB200", "sm_100"),
        ("NVIDIA GeForce RTX 5090", "sm_120"),
        ("NVIDIA H20", None),
        ("AMD EPYC 9654 96-Core Processor", "cpu"),
    ],
)
def test_gpu_products_map_to_architectures(gpu, arch):
    assert architecture_of(gpu) == arch


def test_patterns():
    assert supports(["sm_90"], "NVIDIA H200") and not supports(["sm_90"], "NVIDIA B200")
    assert supports(["sm_90", "sm_100"], "NVIDIA B200")
    assert supports(["sm_*"], "NVIDIA B300") and not supports(["sm_*"], "Intel Xeon")
    assert supports(["*"], "Intel Xeon") and supports(["*"], "NVIDIA Unknown 9000")
    assert not supports(["sm_90"], "NVIDIA Unknown 9000")
    message = refusal("kernelindex-051-ext-streamnorm", ["sm_90"], "NVIDIA B200")
    assert message == "kernelindex-051-ext-streamnorm does not run on NVIDIA B200 (sm_100); it supports sm_90"


def test_legacy_rule_for_revisions_without_architectures():
    assert declared({"code": {"digest": "sha256:" + "a" * 64, "language": "cuda"}}) == ("sm_90",)
    assert declared({"code": {"digest": "sha256:" + "a" * 64, "language": "python"}}) == ("*",)
    assert declared({"source": {"source": "sol-execbench"}}) == ()  # imported: not ours to run
    assert declared({"architectures": ["sm_90", "sm_100"], "code": {"language": "cuda"}}) == ("sm_90", "sm_100")


def test_manifest_refuses_a_malformed_architecture():
    spec = {"name": "x", "project": "p", "revision": "1", "definitionDigest": "sha256:" + "0" * 64, "architectures": ["hopper"]}
    with pytest.raises(ManifestError) as error:
        parse_manifest(make_manifest("ImplementationRevision", "x", spec).to_json() | {"spec": spec})
    assert "architectures" in str(error.value.problems)


def test_every_registry_entry_declares_architectures_its_manifest_implies():
    from kernels.implementations import IMPLEMENTATIONS

    for impl in IMPLEMENTATIONS.values():
        assert impl.architectures, impl.name
        spec = impl.manifest("sha256:" + "0" * 64).to_json()["spec"]
        assert declared(spec) == impl.architectures, impl.name
