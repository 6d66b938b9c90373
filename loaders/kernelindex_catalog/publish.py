"""From a verified catalog to the documents `store.catalog.write_plan` stores.

Every document keeps its manifest exactly as exported (so its digest is the export's) and, beside
it, its `provenance`: the export (file, sha256, size, when it was generated, where it was read)
and the original source with its licence and the attribution it asks for (the export's `sources`
rows; GPU MODE's dataset asks for "GPU Mode and the KernelBot dataset"). A run also keeps the
export row's own fields (`catalog`: ids, keys, primary value, ...) and its measurements.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from loaders.common.format_plan import WritePlan, group_document, rank_rule, rank_value, stored_status
from loaders.common.format_plan import manifest_fields as _manifest_fields
from loaders.kernelindex_catalog.fetch import Fetched
from loaders.kernelindex_catalog.normalize import RUN_PARTS, Catalog
from registry.catalog_format import SERVING_COLLECTIONS
from registry.digest import digest_of
from registry.digest_check import identity

PROVENANCE = "provenance"  # the field beside each manifest (store/catalog.py reads it by this name)


CatalogPlan = WritePlan  # the catalog's plan is the format's one write plan (loaders/common/format_plan.py)


# What the export's `sources` rows leave unsaid (SOL-ExecBench's row has no policy): from the
# upstream reference's README (the public leaderboard API: facts).
SOURCE_TERMS_WHEN_UNSTATED = {
    "sol-execbench": {
        "license": "none stated (facts from NVIDIA's public SOL-ExecBench leaderboard API)",
        "attribution": "NVIDIA SOL-ExecBench",
        "url": "https://research.nvidia.com/benchmarks/sol-execbench",
    }
}
EXPORT_LICENSE = "Apache-2.0 (the KernelIndex catalog export, SamMausberg/KernelIndex)"


def export_record(fetched: Fetched) -> dict[str, Any]:
    pointer = fetched.pointer
    record = {"file": fetched.file_name, "sha256": fetched.sha256, "sizeBytes": fetched.size, "license": EXPORT_LICENSE}
    if pointer is not None:
        record["generatedAt"] = pointer.generated_at
        if pointer.url:
            record["url"] = pointer.url
    return record


def source_record(row: dict[str, Any]) -> dict[str, Any]:
    policy = row.get("policy") or {}
    fallback = SOURCE_TERMS_WHEN_UNSTATED.get(row["slug"], {})
    record = {"slug": row["slug"], "name": row.get("name") or row["slug"]}
    for key in ("license", "attribution", "url", "terms"):
        value = policy.get(key) or fallback.get(key)
        if value:
            record[key] = value
    return record


def plan_write(catalog: Catalog, fetched: Fetched, now: datetime) -> CatalogPlan:
    export = export_record(fetched)
    sources = {row_id: source_record(row) for row_id, row in catalog.table("sources").items()}

    # Each document names the export and its sources; their licences and attributions are kept
    # once, in the import's record (store.catalog.IMPORTS), where the dossier reads them.
    brief = {"file": export["file"], "sha256": export["sha256"]}
    slugs = {row_id: row["slug"] for row_id, row in catalog.table("sources").items()}

    def provenance(source_ids: set[str], row_id: str) -> list[dict[str, Any]]:
        return [{"export": brief, "sources": sorted(slugs[s] for s in source_ids if s in slugs), "rowId": row_id}]

    operations = catalog.table("operations")
    workloads = catalog.table("workloads")
    implementations = catalog.table("implementations")
    runs = catalog.table("benchmark_runs")

    # Which sources stand behind each object: the sources of the runs that use it.
    used_by: dict[tuple[str, str], set[str]] = {}
    for row in runs.values():
        workload = workloads[row["workloadId"]]
        for key in (
            ("workloads", row["workloadId"]),
            ("implementations", row["implementationId"]),
            ("operations", workload["operationId"]),
        ):
            used_by.setdefault(key, set()).add(row["sourceId"])
    aliases: dict[str, list[str]] = {}
    for row in catalog.table("operation_aliases").values():
        aliases.setdefault(row["operationId"], []).append(row["alias"])

    plan = CatalogPlan(export_sha256=fetched.sha256)
    objects = plan.objects
    objects["definitions"] = [
        {
            "_id": row["semanticDigest"],
            **_manifest_fields(row["manifest"]),
            "storedAt": now,
            "aliases": sorted(set(aliases.get(row_id, []))),
            "catalog": _row_fields(row),
            PROVENANCE: provenance(used_by.get(("operations", row_id), set()), row_id),
        }
        for row_id, row in operations.items()
    ]
    objects["workloads"] = [
        {
            "_id": row["workloadDigest"],
            **_manifest_fields(row["manifest"]),
            "storedAt": now,
            "definitionDigest": operations[row["operationId"]]["semanticDigest"],
            "catalog": _row_fields(row),
            PROVENANCE: provenance(used_by.get(("workloads", row_id), set()), row_id),
        }
        for row_id, row in workloads.items()
    ]
    objects["implementations"] = [
        {
            "_id": row["implementationDigest"],
            **_manifest_fields(row["manifest"]),
            "storedAt": now,
            "definitionDigest": operations[row["operationId"]]["semanticDigest"],
            "projectName": (catalog.table("projects").get(row.get("projectId")) or {}).get("name"),
            "catalog": _row_fields(row),
            PROVENANCE: provenance(used_by.get(("implementations", row_id), set()), row_id),
        }
        for row_id, row in implementations.items()
    ]
    projects = {}
    for row_id, row in catalog.table("projects").items():
        digest = digest_of(identity(row["manifest"]))
        projects.setdefault(
            digest,
            {
                "_id": digest,
                **_manifest_fields(row["manifest"]),
                "storedAt": now,
                "catalog": _row_fields(row),
                PROVENANCE: provenance(set(), row_id),
            },
        )
    objects["projects"] = list(projects.values())
    artifacts: dict[str, dict[str, Any]] = {}
    for row_id, row in catalog.table("artifacts").items():
        if isinstance(row.get("contentDigest"), str):
            artifacts.setdefault(
                row["contentDigest"], {"_id": row["contentDigest"], **row, "storedAt": now, PROVENANCE: provenance(set(), row_id)}
            )
    objects["artifacts"] = list(artifacts.values())

    measurements: dict[str, list[dict[str, Any]]] = {}
    for row in catalog.table("measurements").values():
        measurements.setdefault(row["runId"], []).append({k: v for k, v in row.items() if k != "runId"})
    protocols: dict[str, dict[str, Any]] = {}
    environments: dict[str, dict[str, Any]] = {}
    digest_of_run = {row_id: row["runDigest"] for row_id, row in runs.items()}
    for row_id, row in runs.items():
        manifests = row["manifest"]
        run, protocol, environment = (manifests[part] for part in RUN_PARTS)
        spec = run["spec"]
        source_ids = {row["sourceId"]}
        protocols.setdefault(
            spec["protocolDigest"],
            {"_id": spec["protocolDigest"], **_manifest_fields(protocol), "storedAt": now, PROVENANCE: provenance(source_ids, row_id)},
        )
        environments.setdefault(
            spec["environmentDigest"],
            {
                "_id": spec["environmentDigest"],
                **_manifest_fields(environment),
                "storedAt": now,
                PROVENANCE: provenance(source_ids, row_id),
            },
        )
        workload = workloads[row["workloadId"]]
        definition = operations[workload["operationId"]]["semanticDigest"]
        hardware = (environment.get("spec") or {}).get("hardware") or {}
        product = row.get("hardwareModel") or hardware.get("product") or "unknown GPU"
        key = row["comparisonKey"]
        rule = rank_rule(protocol["spec"])
        value, noise = rank_value(
            rule,
            status=row.get("status"),
            run_spec=spec,
            primary=row.get("primaryValue"),
            low=row.get("uncertaintyLow"),
            high=row.get("uncertaintyHigh"),
        )
        native = spec.get("sourceNative") or {}
        doc = {
            "_id": row["runDigest"],
            **_manifest_fields(run),
            "definitionDigest": definition,
            "groupKey": key,
            "gpu": product,
            "status": stored_status(row.get("status") or spec.get("status")),
            "rankValue": value,
            "rankNoise": noise,
            "verifiedBy": [],
            "evidenceLevel": "Reported",
            "source": native.get("source") or "kernelindex-catalog",
            "catalog": _row_fields(row),
            "measurements": measurements.get(row_id, []),
            PROVENANCE: provenance(source_ids, row_id),
        }
        if native.get("externalId"):
            doc["externalId"] = native["externalId"]
        plan.runs.append(doc)
        if key not in plan.groups:
            plan.groups[key] = group_document(
                definition=definition,
                run_spec=spec,
                protocol_spec=protocol["spec"],
                product=product,
                architecture=row.get("hardwareArchitecture") or hardware.get("architecture") or "unknown",
                cohort={k: row[k] for k in ("protocolKey", "environmentKey", "correctnessKey")},
                source=native.get("source"),
            )
    objects["protocols"] = list(protocols.values())
    objects["environments"] = list(environments.values())

    for row_id, row in catalog.table("record_events").items():
        plan.history.setdefault(row["comparisonKey"], []).append(
            {
                "_id": row_id,
                "comparisonKey": row["comparisonKey"],
                "runDigest": digest_of_run[row["runId"]],
                "previousRunDigest": digest_of_run.get(row.get("previousRunId")) if row.get("previousRunId") else None,
                "cause": row.get("cause"),
                "policyVersion": row.get("policyVersion"),
                "at": row.get("at"),
                "export": fetched.sha256,
            }
        )

    serving_measurements: dict[str, list[dict[str, Any]]] = {}
    for row in catalog.table("serving_measurements").values():
        serving_measurements.setdefault(row["runId"], []).append({k: v for k, v in row.items() if k != "runId"})
    for table, digest_field in SERVING_COLLECTIONS.items():
        objects[table] = [
            {
                "_id": row[digest_field],
                **_manifest_fields(row["manifest"]),
                "storedAt": now,
                "catalog": _row_fields(row),
                PROVENANCE: provenance(set(), row_id),
            }
            for row_id, row in catalog.table(table).items()
        ]
    objects["serving_runs"] = [
        {
            "_id": row["runDigest"],
            **_manifest_fields(row["manifest"]),
            "storedAt": now,
            "catalog": _row_fields(row),
            "measurements": serving_measurements.get(row_id, []),
            PROVENANCE: provenance({row["sourceId"]}, row_id),
        }
        for row_id, row in catalog.table("serving_runs").items()
    ]
    plan.import_record = {
        "export": export,
        "pointer": fetched.pointer.to_json() if fetched.pointer else None,
        "location": fetched.location,
        "sources": list(sources.values()),
        "sourceRows": list(catalog.table("sources").values()),
        "rows": dict(catalog.read),
        "refused": dict(catalog.refused_by_table()),
    }
    return plan


def _row_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The export row without its manifest(s): what `export --catalog` writes back."""
    return {k: v for k, v in row.items() if k != "manifest"}
