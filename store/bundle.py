"""A run with every object it references, and the checks that it really references them.

Its own module so that both `store.publish` and `store.groups` can use it without importing
each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from registry.comparison import GroupIdentity, group_identity
from registry.digest import manifest_digest
from registry.manifests import Manifest, ManifestError

# role in a Bundle → (the run's field that references it, its kind); the definition is reached
# through the workload.
RUN_REFERENCES = {
    "workload": ("workloadDigest", "WorkloadSuite"),
    "protocol": ("protocolDigest", "BenchmarkProtocol"),
    "environment": ("environmentDigest", "ExecutionEnvironment"),
    "implementation": ("implementationDigest", "ImplementationRevision"),
}
KIND_OF_ROLE = {"definition": "OperationSpec", **{role: kind for role, (_, kind) in RUN_REFERENCES.items()}}
REFERENCED = tuple(KIND_OF_ROLE)


@dataclass(frozen=True)
class Bundle:
    """One run with every object it references."""

    run: Manifest
    definition: Manifest
    workload: Manifest
    protocol: Manifest
    environment: Manifest
    implementation: Manifest
    # The runner identity whose signed, verified result this run is (controlled reruns only).
    verified_by: str | None = None
    # A loader's fingerprint of the source record the run was made from (store/source_records.py):
    # kept on the run's document beside the manifest, not in the published record.
    source_record: str | None = None


def check_references(bundle: Bundle, digest_of: Callable[[Manifest], str] = manifest_digest) -> dict[str, str]:
    """Digests of the bundle's objects; raise ManifestError when the run points elsewhere."""
    problems = []
    digests = {}
    for role in REFERENCED:
        manifest = getattr(bundle, role)
        expected_kind = KIND_OF_ROLE[role]
        if manifest.kind != expected_kind:
            problems.append((role, f"expected a {expected_kind}, got {manifest.kind}"))
            continue
        digests[role] = digest_of(manifest)
    if bundle.run.kind != "BenchmarkRun":
        problems.append(("run", f"expected a BenchmarkRun, got {bundle.run.kind}"))
    if problems:
        raise ManifestError(problems)
    spec = bundle.run.spec
    for role, (field_name, _) in RUN_REFERENCES.items():
        if getattr(spec, field_name) != digests[role]:
            problems.append((f"spec.{field_name}", f"does not match the {role} given ({digests[role]})"))
    definition = digests["definition"]
    if bundle.workload.spec.definitionDigest != definition:
        problems.append(("workload.spec.definitionDigest", "does not match the definition given"))
    if bundle.implementation.spec.definitionDigest != definition:
        problems.append(("implementation.spec.definitionDigest", "does not match the definition given"))
    if problems:
        raise ManifestError(problems)
    digests["run"] = manifest_digest(bundle.run)
    return digests


def bundle_group(bundle: Bundle, digests: dict[str, str]) -> GroupIdentity:
    return group_identity(
        definition_digest=digests["definition"],
        workload_digest=digests["workload"],
        protocol=bundle.protocol.spec,
        environment=bundle.environment.spec,
    )
