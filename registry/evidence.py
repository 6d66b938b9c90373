"""Evidence levels: derived from what we hold about a run, never chosen by a submitter."""

from __future__ import annotations

from enum import Enum

from registry.manifests import ImplementationRevisionSpec


class EvidenceLevel(str, Enum):
    reported = "Reported"
    reproducible = "Reproducible"
    kernelindex_verified = "KernelIndex Verified"
    independently_replicated = "Independently Replicated"


def is_reproducible(implementation: ImplementationRevisionSpec | None) -> bool:
    """Code at an exact revision, pinned by digest: enough to rerun (workload, protocol and
    environment are always complete, since a run cannot be published without them)."""
    code = implementation.code if implementation else None
    return bool(code and code.digest and (code.commit or code.repository or code.entryPoint))


def is_reproducible_format(implementation: dict | None) -> bool:
    """The same rule for an ImplementationRevision of the v1alpha1 format (its spec as JSON): code
    at an exact commit (`projectRevision.commit`), pinned by digest (`source.contentDigest`), with
    what to call (`callable.symbol`). A submission known only by its content (SOL-ExecBench, GPU
    MODE: no commit) stays Reported."""
    spec = implementation or {}
    return bool(
        (spec.get("projectRevision") or {}).get("commit")
        and (spec.get("source") or {}).get("contentDigest")
        and (spec.get("callable") or {}).get("symbol")
    )


def derive_evidence_level(
    *,
    implementation: ImplementationRevisionSpec | None,
    verifying_runners: set[str],
) -> EvidenceLevel:
    """`verifying_runners`: the distinct approved runner identities whose signed, passing results
    cover the same implementation, workload, protocol and GPU as this run. Community
    attestations (notes, reproductions) are deliberately not an input."""
    if len(verifying_runners) >= 2:
        return EvidenceLevel.independently_replicated
    if len(verifying_runners) == 1:
        return EvidenceLevel.kernelindex_verified
    if is_reproducible(implementation):
        return EvidenceLevel.reproducible
    return EvidenceLevel.reported
