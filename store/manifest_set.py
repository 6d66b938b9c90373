"""Publishing a set of manifests of any kinds (what `kernelindex load` reads from files).

Runs are assembled into bundles from the set itself or from objects already stored. Every
reference is resolved before anything is written, so a set with one bad run writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pymongo.asynchronous.database import AsyncDatabase

from registry.digest import manifest_digest
from registry.manifests import Manifest, ManifestError, parse_manifest
from store.bundle import RUN_REFERENCES, Bundle
from store.publish import PublishOutcome, existing_ids, insert_ignoring_duplicates, manifest_document, publish_many
from store.schema import COLLECTION_BY_KIND


@dataclass
class SetReport:
    objects_new: int = 0
    objects_unchanged: int = 0
    runs: list[PublishOutcome] = field(default_factory=list)


async def _stored(db: AsyncDatabase, kind: str, digest: str) -> Manifest | None:
    doc = await db[COLLECTION_BY_KIND[kind]].find_one({"_id": digest})
    if doc is None:
        return None
    return parse_manifest({k: doc[k] for k in ("apiVersion", "kind", "metadata", "spec")})


async def assemble_bundles(db: AsyncDatabase, manifests: Sequence[Manifest]) -> list[Bundle]:
    """Bundles for the runs in the set; ManifestError naming every unresolved reference."""
    by_digest = {manifest_digest(m): m for m in manifests}
    problems: list[tuple[str, str]] = []
    bundles = []
    for m in manifests:
        if m.kind != "BenchmarkRun":
            continue
        found: dict[str, Manifest] = {}
        for role, (field_name, kind) in RUN_REFERENCES.items():
            digest = getattr(m.spec, field_name)
            ref = by_digest.get(digest) or await _stored(db, kind, digest)
            if ref is None or ref.kind != kind:
                problems.append((f"{m.metadata.name}.spec.{field_name}", f"no {kind} with digest {digest} in the files or the registry"))
                continue
            found[role] = ref
        if len(found) < len(RUN_REFERENCES):
            continue
        definition_digest = found["workload"].spec.definitionDigest
        definition = by_digest.get(definition_digest) or await _stored(db, "OperationSpec", definition_digest)
        if definition is None:
            problems.append(
                (f"{found['workload'].metadata.name}.spec.definitionDigest", f"no OperationSpec with digest {definition_digest}")
            )
            continue
        bundles.append(Bundle(run=m, definition=definition, **found))
    if problems:
        raise ManifestError(problems)
    return bundles


async def publish_set(db: AsyncDatabase, manifests: Sequence[Manifest]) -> SetReport:
    bundles = await assemble_bundles(db, manifests)
    report = SetReport()
    now = datetime.now(UTC)
    # Objects that no run in the set references (a definition loaded on its own) still land.
    for kind, collection in COLLECTION_BY_KIND.items():
        if kind in ("BenchmarkRun", "Attestation"):
            continue
        docs = {manifest_digest(m): manifest_document(m, manifest_digest(m), now) for m in manifests if m.kind == kind}
        present = await existing_ids(db[collection], set(docs))
        missing = [doc for digest, doc in docs.items() if digest not in present]
        await insert_ignoring_duplicates(db[collection], missing)
        report.objects_new += len(missing)
        report.objects_unchanged += len(present)
    report.runs = await publish_many(db, bundles) if bundles else []
    return report
