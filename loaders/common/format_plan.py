"""The one write path of the v1alpha1 format: a `WritePlan` of documents ready to store.

Two kinds of loader make one:

- a per-record source (SOL-ExecBench, GPU MODE) hands the pipeline validated `FormatBundle`s
  (loaders/common/source.py): one run with every object it references, each a
  `registry.format.FormatManifest`; `plan_bundles` turns a batch of them into a plan;
- the KernelIndex catalog export plans its whole file itself (loaders/kernelindex_catalog/publish.py),
  with its provenance, record history and serving objects.

Either way `store.catalog.write_plan` writes it (objects first, then per batch of cohorts one
transaction: the runs, ranks, each cohort's size and #1, events). Every run is keyed by its cohort
as the seed system keys it (`registry.comparison.cohort_of`: operation, workload, protocol,
environment, correctness and metric keys), so the same evidence reached by two paths is one run in
one cohort. Ranking rules stay ours (registry/ranking.py), chosen by the protocol's family.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from registry.comparison import cohort_of, primary_measurement
from registry.evidence import EvidenceLevel, is_reproducible_format
from registry.format import FormatManifest, format_digest
from registry.ranking import GEOMEAN, GPUMODE_FAMILY, SOL_EXECBENCH_FAMILY, RankRule

# Collection of each kind (store/schema.py declares them).
COLLECTION_OF_KIND = {
    "OperationSpec": "definitions",
    "WorkloadCase": "workloads",
    "WorkloadSuite": "workloads",
    "ImplementationRevision": "implementations",
    "BenchmarkProtocol": "protocols",
    "ExecutionEnvironment": "environments",
    "SoftwareProject": "projects",
}
# Our stored `status` (store/schema.py); the format's compile_error and runtime_error are
# failures (the manifest keeps the exact status).
STATUSES = ("passed", "incorrect", "failed", "disqualified", "pending", "cancelled")


@dataclass
class WritePlan:
    """What one write stores (store.catalog.write_plan): `objects`: collection → documents with
    `_id`; `runs`: run documents (seq, rank and current are set when written); `groups`: cohort key
    → group document; `history`: cohort key → record events; `import_record`: a catalog import's own
    record (None for a per-record source). `export_sha256`: the catalog export the documents'
    `provenance` names (None: no provenance records). `supersede`: a new run of a source record
    (source, externalId) that has a current run with another digest supersedes it (a source's
    corrected record); without it such a run is not written (reconciled: the catalog defers to a
    source's own importer)."""

    export_sha256: str | None = None
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    history: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    import_record: dict[str, Any] | None = None
    supersede: bool = False
    # Writes that commit in the transaction of the plan's last cohorts (a job's completion with
    # its verified run), or in one of their own when no run is new: `async (session) -> None`.
    also: Any = None


def manifest_fields(manifest: dict[str, Any]) -> dict[str, Any]:
    return {k: manifest[k] for k in ("apiVersion", "kind", "metadata", "spec")}


def rank_rule(protocol_spec: dict[str, Any]) -> RankRule:
    """Our ranking rules (registry/ranking.py), by the protocol's comparability family."""
    family = (protocol_spec.get("comparability") or {}).get("family")
    statistic = (protocol_spec.get("measurement") or {}).get("primaryStatistic") or "value"
    if family == SOL_EXECBENCH_FAMILY:
        return RankRule(metric="sol_score", order="desc", noise_aware=False)
    if family == GPUMODE_FAMILY:
        samples = statistic == GEOMEAN
        return RankRule(metric=statistic, order="asc", noise_aware=samples, ci_overlap=samples)
    return RankRule(metric=statistic, order="asc", noise_aware=True)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def rank_value(
    rule: RankRule, *, status: str | None, run_spec: dict[str, Any], primary: Any, low: Any = None, high: Any = None
) -> tuple[float | None, float]:
    """(value, noise) a run is ranked by; (None, 0) when it is not ranked (not passed, no value).
    `primary`: the run's primary value; `low`/`high`: its uncertainty interval, when known."""
    if status != "passed":
        return None, 0.0
    if rule.metric == "sol_score":
        return _number(((run_spec.get("sourceNative") or {}).get("metrics") or {}).get("sol_score")), 0.0
    value = _number(primary)
    if value is None:
        return None, 0.0
    low, high = _number(low), _number(high)
    noise = (high - low) / 2 if low is not None and high is not None and high >= low else 0.0
    return value, noise


def stored_status(value: str | None) -> str:
    return value if value in STATUSES else "failed"


def group_title(protocol_spec: dict[str, Any], product: str) -> str:
    harness = protocol_spec.get("harness") or {}
    gpu = product.removeprefix("NVIDIA ")
    version = (protocol_spec.get("comparability") or {}).get("version") or harness.get("version")
    if (protocol_spec.get("comparability") or {}).get("family") == SOL_EXECBENCH_FAMILY:
        return f"SOL-ExecBench {version} · {gpu}" if version else f"SOL-ExecBench · {gpu}"
    return " ".join(part for part in (harness.get("name"), version) if part) + f" · {gpu}"


def group_document(
    *,
    definition: str,
    run_spec: dict[str, Any],
    protocol_spec: dict[str, Any],
    product: str,
    architecture: str,
    cohort: dict[str, str],
    source: str | None,
) -> dict[str, Any]:
    """A cohort's group document (store.catalog inserts it with its size and #1)."""
    comparability = protocol_spec.get("comparability") or {}
    harness = protocol_spec.get("harness") or {}
    return {
        "definitionDigest": definition,
        "workloadDigest": run_spec["workloadDigest"],
        "protocolDigest": run_spec["protocolDigest"],
        "environmentDigest": run_spec["environmentDigest"],
        "family": comparability.get("family") or "unspecified",
        "familyVersion": comparability.get("version") or harness.get("version") or "unversioned",
        "gpu": {"product": product, "architecture": architecture},
        "rankRule": asdict(rank_rule(protocol_spec)),
        "title": group_title(protocol_spec, product),
        "cohort": cohort,
        "source": source,
    }


def measurements_of(run_spec: dict[str, Any]) -> list[dict[str, Any]]:
    """A run's measurements as the catalog's `measurements` rows hold them (without ids)."""
    if run_spec.get("measurements"):
        return [dict(m) for m in run_spec["measurements"]]
    timing = run_spec.get("timing") or {}
    return [
        {"metric": "latency", "statistic": statistic, "unit": "ns", "value": value, "sampleCount": timing.get("samples")}
        for statistic, value in (timing.get("latencyNs") or {}).items()
    ]


def _document(manifest: FormatManifest, digest: str, now: datetime, **extra: Any) -> dict[str, Any]:
    return {"_id": digest, **manifest_fields(manifest.to_json()), "storedAt": now, **extra}


# run.spec field → the bundle's object it must name
_REFERENCES = {
    "workloadDigest": "workload",
    "implementationDigest": "implementation",
    "protocolDigest": "protocol",
    "environmentDigest": "environment",
}
_KINDS = {
    "run": ("BenchmarkRun",),
    "operation": ("OperationSpec",),
    "workload": ("WorkloadCase", "WorkloadSuite"),
    "implementation": ("ImplementationRevision",),
    "protocol": ("BenchmarkProtocol",),
    "environment": ("ExecutionEnvironment",),
}


def bundle_problems(bundle: Any) -> list[str]:
    """Why a `FormatBundle` cannot be written (wrong kinds, a run or workload naming other objects
    than the ones given); empty when it can. The pipeline rejects such a record with these reasons."""
    problems = [
        f"{role}: expected a {' or '.join(kinds)}, got {getattr(bundle, role).kind}"
        for role, kinds in _KINDS.items()
        if getattr(bundle, role).kind not in kinds
    ]
    if problems:
        return problems
    spec = bundle.run.spec.to_json()
    for name, role in _REFERENCES.items():
        digest = format_digest(getattr(bundle, role))
        if spec.get(name) != digest:
            problems.append(f"spec.{name}: does not match the {role} given ({digest})")
    operation = format_digest(bundle.operation)
    if bundle.workload.spec.to_json().get("operationSpecDigest") != operation:
        problems.append("workload.spec.operationSpecDigest: does not match the operation given")
    if (bundle.implementation.spec.to_json().get("operation") or {}).get("specDigest") != operation:
        problems.append("implementation.spec.operation.specDigest: does not match the operation given")
    return problems


def plan_objects(plan: WritePlan, manifests: list[FormatManifest], now: datetime) -> None:
    """Add objects no run of the plan names (a protocol or definition loaded on its own)."""
    for manifest in manifests:
        collection = COLLECTION_OF_KIND[manifest.kind]
        digest = format_digest(manifest)
        docs = plan.objects.setdefault(collection, [])
        if all(doc["_id"] != digest for doc in docs):
            extra = {}
            if manifest.kind in ("WorkloadCase", "WorkloadSuite"):
                extra["definitionDigest"] = manifest.spec.to_json()["operationSpecDigest"]
            elif manifest.kind == "ImplementationRevision":
                extra["definitionDigest"] = manifest.spec.to_json()["operation"]["specDigest"]
            docs.append(_document(manifest, digest, now, **extra))


def plan_bundles(bundles: list[Any], now: datetime) -> WritePlan:
    """The plan of a batch of `FormatBundle`s (loaders/common/source.py) of one source: every
    object once, each run keyed by its cohort, a changed source record superseding its current
    run."""
    plan = WritePlan(supersede=True)
    objects: dict[str, dict[str, dict[str, Any]]] = {}
    digests: dict[int, str] = {}  # id(manifest) → digest: the objects a batch shares are hashed once

    def digest_of(manifest: FormatManifest) -> str:
        key = id(manifest)
        if key not in digests:
            digests[key] = format_digest(manifest)
        return digests[key]

    def keep(manifest: FormatManifest, **extra: Any) -> str:
        digest = digest_of(manifest)
        docs = objects.setdefault(COLLECTION_OF_KIND[manifest.kind], {})
        if digest not in docs:
            docs[digest] = _document(manifest, digest, now, **extra)
        return digest

    for bundle in bundles:
        definition = keep(bundle.operation, **({"sourceTitle": bundle.operation_title} if bundle.operation_title else {}))
        workload = bundle.workload.spec.to_json()
        keep(bundle.workload, definitionDigest=definition)
        for case in bundle.cases:
            keep(case, definitionDigest=definition)
        keep(bundle.implementation, definitionDigest=definition, **({"projectName": bundle.project_name} if bundle.project_name else {}))
        if bundle.project is not None:
            keep(bundle.project)
        keep(bundle.protocol)
        keep(bundle.environment)
        run = bundle.run.to_json()
        spec = run["spec"]
        implementation = bundle.implementation.spec.to_json()
        protocol = bundle.protocol.spec.to_json()
        hardware = bundle.environment.spec.to_json().get("hardware") or {}
        product, architecture = hardware.get("product") or "unknown GPU", hardware.get("architecture") or "unknown"
        cohort = cohort_of(run_spec=spec, workload_spec=workload)
        key = cohort.comparisonKey
        rule = rank_rule(protocol)
        primary = primary_measurement(spec)
        interval = ((spec.get("measurements") or [{}])[0].get("uncertainty") or {}) if spec.get("timing") is None else {}
        status = stored_status(spec.get("status"))
        value, noise = rank_value(
            rule,
            status=status,
            run_spec=spec,
            primary=primary.value if primary else None,
            low=interval.get("low"),
            high=interval.get("high"),
        )
        native = spec.get("sourceNative") or {}
        doc = {
            "_id": digest_of(bundle.run),
            **manifest_fields(run),
            "definitionDigest": definition,
            "groupKey": key,
            "gpu": product,
            "status": status,
            "rankValue": value,
            "rankNoise": noise,
            "verifiedBy": [],
            "evidenceLevel": (EvidenceLevel.reproducible if is_reproducible_format(implementation) else EvidenceLevel.reported).value,
            "source": native.get("source") or bundle.source,
            "measurements": measurements_of(spec),
        }
        if native.get("externalId"):
            doc["externalId"] = native["externalId"]
        if bundle.source_record:
            doc["sourceRecord"] = bundle.source_record
        if bundle.source_snapshot:
            doc["sourceSnapshot"] = bundle.source_snapshot
        plan.runs.append(doc)
        if key not in plan.groups:
            plan.groups[key] = group_document(
                definition=definition,
                run_spec=spec,
                protocol_spec=protocol,
                product=product,
                architecture=architecture,
                cohort={
                    "protocolKey": cohort.protocolKey,
                    "environmentKey": cohort.environmentKey,
                    "correctnessKey": cohort.correctnessKey,
                },
                source=doc["source"],
            )
    plan.objects = {collection: list(docs.values()) for collection, docs in objects.items()}
    return plan
