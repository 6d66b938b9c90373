"""Comparison groups: which runs may be ranked against each other.

The key covers the definition, the workload suite, the protocol's comparability family and
version, and the GPU (product and architecture). The implementation is deliberately not part of
it: implementations are what a group compares.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from registry.digest import digest_of
from registry.manifests import BenchmarkProtocolSpec, ExecutionEnvironmentSpec


@dataclass(frozen=True)
class GroupIdentity:
    definitionDigest: str
    workloadDigest: str
    family: str
    familyVersion: str
    gpuProduct: str
    gpuArchitecture: str

    def key(self) -> str:
        return _group_key(self)


@lru_cache(maxsize=4096)  # every run of a batch asks for its group's key; groups are few
def _group_key(identity: GroupIdentity) -> str:
    return digest_of(
        {
            "definitionDigest": identity.definitionDigest,
            "workloadDigest": identity.workloadDigest,
            "comparability": {"family": identity.family, "version": identity.familyVersion},
            "environment": {"product": identity.gpuProduct, "architecture": identity.gpuArchitecture},
        }
    )


def environment_equivalence(environment: ExecutionEnvironmentSpec) -> tuple[str, str]:
    """Two environments are equivalent for ranking when the GPU product and architecture match;
    driver and library versions are recorded but do not split a group."""
    return environment.hardware.product, environment.hardware.architecture


def group_identity(
    *,
    definition_digest: str,
    workload_digest: str,
    protocol: BenchmarkProtocolSpec,
    environment: ExecutionEnvironmentSpec,
) -> GroupIdentity:
    product, architecture = environment_equivalence(environment)
    return GroupIdentity(
        definitionDigest=definition_digest,
        workloadDigest=workload_digest,
        family=protocol.comparability.family,
        familyVersion=protocol.comparability_version,
        gpuProduct=product,
        gpuArchitecture=architecture,
    )
