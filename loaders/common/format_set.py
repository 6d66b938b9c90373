"""A set of v1alpha1 manifests (a `manifests.json` of our harness, a file given to `kernelindex
load`) as `FormatBundle`s: each BenchmarkRun with the objects it names, found in the set by
digest. Objects no run names are kept too (`loose`), so a protocol or definition loaded on its own
lands. Every unresolved reference is reported at once, and nothing is built then.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from loaders.common.source import FormatBundle
from registry.format import FormatError, FormatManifest, format_digest, parse_format_manifest

# run.spec field → (role in a FormatBundle, the kinds it may name)
RUN_REFERENCES = {
    "workloadDigest": ("workload", ("WorkloadSuite", "WorkloadCase")),
    "implementationDigest": ("implementation", ("ImplementationRevision",)),
    "protocolDigest": ("protocol", ("BenchmarkProtocol",)),
    "environmentDigest": ("environment", ("ExecutionEnvironment",)),
}


@dataclass
class FormatSet:
    bundles: list[FormatBundle] = field(default_factory=list)
    loose: list[FormatManifest] = field(default_factory=list)  # objects no run of the set names


def is_format_set(items: Iterable[Any]) -> bool:
    """Whether every item parses as the format (then the set is loaded as the format)."""
    try:
        for item in items:
            parse_format_manifest(item)
    except FormatError:
        return False
    return True


def format_set(items: list[Any], *, where: str = "", source: str | None = None) -> FormatSet:
    """Parse and assemble; FormatError naming each bad manifest and each unresolved reference."""
    problems: list[tuple[str, str]] = []
    manifests: list[FormatManifest] = []
    for index, item in enumerate(items):
        try:
            manifests.append(parse_format_manifest(item))
        except FormatError as error:
            problems += [(f"{where}[{index}].{path}".strip("."), reason) for path, reason in error.problems]
    if problems:
        raise FormatError(problems)
    by_digest = {format_digest(m): m for m in manifests}
    named: set[str] = set()
    out = FormatSet()
    for m in manifests:
        if m.kind != "BenchmarkRun":
            continue
        spec = m.spec.to_json()
        found: dict[str, FormatManifest] = {}
        for name, (role, kinds) in RUN_REFERENCES.items():
            ref = by_digest.get(spec[name])
            if ref is None or ref.kind not in kinds:
                problems.append((f"{m.metadata.name}.spec.{name}", f"no {' or '.join(kinds)} with digest {spec[name]} in the set"))
                continue
            found[role] = ref
            named.add(spec[name])
        if len(found) < len(RUN_REFERENCES):
            continue
        operation_digest = found["workload"].spec.to_json()["operationSpecDigest"]
        operation = by_digest.get(operation_digest)
        if operation is None or operation.kind != "OperationSpec":
            problems.append(
                (
                    f"{found['workload'].metadata.name}.spec.operationSpecDigest",
                    f"no OperationSpec with digest {operation_digest} in the set",
                )
            )
            continue
        named.add(operation_digest)
        out.bundles.append(FormatBundle(run=m, operation=operation, source=source, **found))
    if problems:
        raise FormatError(problems)
    out.loose = [m for digest, m in by_digest.items() if m.kind != "BenchmarkRun" and digest not in named]
    return out
