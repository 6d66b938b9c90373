"""The registry as KernelIndex catalog export rows, read from the database: `(table, row)` in the
seed exporter's table order (registry/catalog_format.py), for server/exports.py to write as
`catalog-*.jsonl.zst` (served at /exports/, and by `kernelindex export --catalog`), which
`import kernelindex-catalog` reads back: export → import into an empty database gives the same
digests, cohorts and ranks (tests/loaders/test_catalog_export.py, tests/agents/test_exports.py).

Rows imported from a catalog keep the export row's own fields (ids, keys, slugs); rows of ours
get ids derived from their digests and the cohort keys of registry/comparison.py. Only current
runs are exported (the seed's exporter writes published runs only).

Streamed: every collection is read through a cursor, never listed whole; what is held is the
id maps (digest → row id) that later tables refer to. `fingerprint` names the data an export
is built from: the event log's last `seq` (every publication, rank change and record event
writes one in its transaction) and the size of every collection the export reads (the objects
written without an event: definitions alone, catalog projects, artifacts, serving objects, an
import record). Manifests are immutable and never deleted, so the same fingerprint before and
after a read means the read saw one consistent state (server/exports.py checks it).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from registry.catalog_format import SERVING_COLLECTIONS
from registry.comparison import cohort_of, correctness_key
from registry.format import parse_format_manifest
from registry.sources import source_title
from store import events

_NAMESPACE = uuid.UUID("6f1d3c52-8f9e-4a5b-9c33-0b7a1e2d4c55")  # ids of our own rows: uuid5(digest)

# What an export reads (fingerprint counts each).
COLLECTIONS = (
    "catalog_imports",
    "projects",
    "definitions",
    "workloads",
    "implementations",
    "protocols",
    "environments",
    "runs",
    "record_history",
    "artifacts",
    *SERVING_COLLECTIONS,
    "serving_runs",
)


def _id(key: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, key))


def _manifest(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: doc[k] for k in ("apiVersion", "kind", "metadata", "spec")}


def _iso(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return value


async def fingerprint(db: AsyncDatabase) -> str:
    """A short name of the data an export of `db` holds now (see the module's docstring)."""
    parts = {"seq": await events.last_seq(db)}
    for name in COLLECTIONS:
        parts[name] = await db[name].estimated_document_count()
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def line(table: str, row: dict[str, Any]) -> bytes:
    """One line of the export."""
    return (json.dumps({"table": table, "row": row}, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def _v1alpha1(manifest: dict[str, Any]) -> bool:
    """Whether the v1alpha1 models (registry/format.py, what the importer checks) accept it."""
    try:
        parse_format_manifest(manifest)
    except ValueError:
        return False
    return True


async def catalog_rows(
    db: AsyncDatabase, now: datetime | None = None, left_out: dict[str, int] | None = None
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Every row of the export of `db`, in table order. A manifest the v1alpha1 models refuse (our
    older dialect: e.g. the manifests of a GPU MODE board the catalog does not cover) cannot be read back by `import kernelindex-catalog`: its row, and the
    rows that need it, are left out and counted in `left_out` (table → rows)."""
    now = now or datetime.now(UTC)
    left_out = left_out if left_out is not None else {}

    def leave_out(table: str) -> None:
        left_out[table] = left_out.get(table, 0) + 1

    # sources: the catalog's own rows, then one for each source of ours that has runs
    sources: dict[str, str] = {}  # slug → row id
    async for record in db.catalog_imports.find({}, {"sourceRows": 1}).sort("importedAt", 1):
        for row in record.get("sourceRows", []):
            if row["slug"] not in sources:
                sources[row["slug"]] = row["id"]
                yield "sources", row
    for slug in sorted(await db.runs.distinct("source", {"current": True})):
        if slug not in sources:
            sources[slug] = _id(f"source:{slug}")
            yield (
                "sources",
                {
                    "id": sources[slug],
                    "slug": slug,
                    "kind": "benchmark",
                    "name": source_title(slug),
                    "policy": None,
                    "createdAt": _iso(now),
                },
            )

    project_ids: set[str] = set()
    async for doc in db.projects.find({}).sort("_id", 1):
        row = {
            **(doc.get("catalog") or {"id": _id(doc["_id"]), "slug": doc["metadata"]["name"], "name": doc["metadata"]["name"]}),
            "manifest": _manifest(doc),
        }
        project_ids.add(row["id"])
        yield "projects", row

    operation_ids: dict[str, str] = {}
    aliases: list[tuple[str, str]] = []
    async for doc in db.definitions.find({}).sort("_id", 1):
        catalog = doc.get("catalog") or {
            "id": _id(doc["_id"]),
            "slug": doc["metadata"]["name"],
            "family": doc["spec"].get("family"),
            "name": doc["metadata"].get("title") or doc["metadata"]["name"],
            "schemaVersion": doc["apiVersion"],
            "semanticDigest": doc["_id"],
            "tags": doc["spec"].get("tags", []),
            "createdAt": _iso(doc.get("storedAt")),
            "supersedesId": None,
        }
        if not _v1alpha1(_manifest(doc)):
            leave_out("operations")
            continue
        operation_ids[doc["_id"]] = catalog["id"]
        aliases.extend((catalog["id"], alias) for alias in doc.get("aliases", []))
        yield "operations", {**catalog, "semanticDigest": doc["_id"], "manifest": _manifest(doc)}
    for operation_id, alias in aliases:
        yield "operation_aliases", {"operationId": operation_id, "alias": alias}

    workload_ids: dict[str, str] = {}
    workload_specs: dict[str, dict[str, Any]] = {}  # only our own workloads' (a catalog run carries its keys)
    async for doc in db.workloads.find({}).sort("_id", 1):
        definition = doc.get("definitionDigest") or doc["spec"].get("operationSpecDigest") or doc["spec"].get("definitionDigest")
        if definition not in operation_ids or not _v1alpha1(_manifest(doc)):
            leave_out("workloads")
            continue
        catalog = doc.get("catalog")
        if not catalog:
            catalog = {"id": _id(doc["_id"]), "schemaVersion": doc["apiVersion"], "createdAt": _iso(doc.get("storedAt"))}
            workload_specs[doc["_id"]] = doc["spec"]
        workload_ids[doc["_id"]] = catalog["id"]
        yield "workloads", {**catalog, "operationId": operation_ids[definition], "workloadDigest": doc["_id"], "manifest": _manifest(doc)}
    implementation_ids: dict[str, str] = {}
    async for doc in db.implementations.find({}).sort("_id", 1):
        definition = (
            doc.get("definitionDigest") or (doc["spec"].get("operation") or {}).get("specDigest") or doc["spec"].get("definitionDigest")
        )
        if definition not in operation_ids or not _v1alpha1(_manifest(doc)):
            leave_out("implementations")
            continue
        catalog = doc.get("catalog") or {
            "id": _id(doc["_id"]),
            "projectId": None,
            "slug": doc["metadata"]["name"],
            "title": doc["metadata"].get("title"),
            "createdAt": _iso(doc.get("storedAt")),
        }
        implementation_ids[doc["_id"]] = catalog["id"]
        if catalog.get("projectId") is not None and catalog["projectId"] not in project_ids:
            # a catalog row naming a project row this registry does not hold (e.g. written by our
            # SOL-ExecBench importer with the seed's project id): the importer would refuse it
            catalog = {**catalog, "projectId": None}
            leave_out("implementations.projectId")
        yield (
            "implementations",
            {**catalog, "operationId": operation_ids[definition], "implementationDigest": doc["_id"], "manifest": _manifest(doc)},
        )

    protocols: dict[str, dict[str, Any] | None] = {}
    environments: dict[str, dict[str, Any] | None] = {}

    async def referenced(cache: dict[str, dict[str, Any] | None], collection: str, digest: str) -> dict[str, Any] | None:
        """The manifest of a protocol or environment, None when the v1alpha1 models refuse it."""
        if digest not in cache:
            doc = await db[collection].find_one({"_id": digest}, {"apiVersion": 1, "kind": 1, "metadata": 1, "spec": 1})
            cache[digest] = _manifest(doc) if doc is not None and _v1alpha1(_manifest(doc)) else None
        return cache[digest]

    run_ids: dict[str, str] = {}
    async for doc in db.runs.find({"current": True}).sort("seq", 1):
        spec = doc["spec"]
        # a run is exported with its workload and implementation, as v1alpha1 manifests all
        if spec["workloadDigest"] not in workload_ids or spec["implementationDigest"] not in implementation_ids:
            leave_out("benchmark_runs")
            continue
        environment = await referenced(environments, "environments", spec["environmentDigest"])
        protocol = await referenced(protocols, "protocols", spec["protocolDigest"])
        if environment is None or protocol is None or not _v1alpha1(_manifest(doc)):
            leave_out("benchmark_runs")
            continue
        catalog = dict(doc.get("catalog") or {})
        if not catalog:
            workload_spec = (
                workload_specs.get(spec["workloadDigest"]) or (await db.workloads.find_one({"_id": spec["workloadDigest"]}))["spec"]
            )
            keys = _keys(spec, workload_spec, doc["groupKey"])
            hardware = environment["spec"].get("hardware", {})
            catalog = {
                "id": _id(doc["_id"]),
                "sourceId": sources[doc["source"]],
                "status": spec.get("status"),
                "observedAt": spec.get("observedAt"),
                "publishedAt": _iso(doc.get("storedAt")),
                "hardwareVendor": hardware.get("vendor"),
                "hardwareModel": hardware.get("product"),
                "hardwareArchitecture": hardware.get("architecture"),
                **keys,
            }
        catalog.update(
            runDigest=doc["_id"],
            implementationId=implementation_ids[spec["implementationDigest"]],
            workloadId=workload_ids[spec["workloadDigest"]],
            sourceId=catalog.get("sourceId") or sources[doc["source"]],
        )
        run_ids[doc["_id"]] = catalog["id"]
        manifest = {"run": _manifest(doc), "protocol": protocol, "environment": environment}
        yield "benchmark_runs", {**catalog, "manifest": manifest}
    # measurements follow every run (the seed's table order): a second pass over the same runs
    async for doc in db.runs.find({"current": True}, {"spec": 1, "measurements": 1}).sort("seq", 1):
        if doc["_id"] not in run_ids:
            left_out["measurements"] = left_out.get("measurements", 0) + len(doc.get("measurements") or _measurements_of(doc["spec"]))
            continue
        for m in doc.get("measurements") or _measurements_of(doc["spec"]):
            yield (
                "measurements",
                {
                    "id": m.get("id") or _id(f"{doc['_id']}:{m['metric']}:{m['statistic']}"),
                    "runId": run_ids[doc["_id"]],
                    **{k: v for k, v in m.items() if k != "id"},
                },
            )
    async for event in db.record_history.find({}).sort("at", 1):
        if event["runDigest"] not in run_ids:
            leave_out("record_events")  # its run is left out (or no longer current)
            continue
        yield (
            "record_events",
            {
                "id": event["_id"],
                "comparisonKey": event["comparisonKey"],
                "runId": run_ids[event["runDigest"]],
                "previousRunId": run_ids.get(event.get("previousRunDigest")),
                "policyVersion": event.get("policyVersion"),
                "cause": event.get("cause"),
                "at": event.get("at"),
                "createdAt": event.get("at"),
            },
        )
    async for doc in db.artifacts.find({}).sort("_id", 1):
        yield "artifacts", {k: v for k, v in doc.items() if k not in ("_id", "storedAt", "provenance")}

    for table, digest_field in {**SERVING_COLLECTIONS, "serving_runs": "runDigest"}.items():
        async for doc in db[table].find({}).sort("_id", 1):
            row = {**(doc.get("catalog") or {"id": _id(doc["_id"])}), digest_field: doc["_id"], "manifest": _manifest(doc)}
            yield table, row
            for m in doc.get("measurements", []) if table == "serving_runs" else ():
                yield "serving_measurements", {**m, "runId": row["id"]}


def _keys(spec: dict[str, Any], workload_spec: dict[str, Any], group_key: str) -> dict[str, Any]:
    if "operationSpecDigest" not in workload_spec:  # a workload of our older dialect: its own group key
        return {
            "protocolKey": spec["protocolDigest"],
            "environmentKey": spec["environmentDigest"],
            "correctnessKey": correctness_key(workload_spec.get("correctness")),
            "comparisonKey": group_key,
        }
    cohort = cohort_of(run_spec=spec, workload_spec=workload_spec)
    return {
        "protocolKey": cohort.protocolKey,
        "environmentKey": cohort.environmentKey,
        "correctnessKey": cohort.correctnessKey,
        "comparisonKey": cohort.comparisonKey,
    }


def _measurements_of(spec: dict[str, Any]) -> list[dict[str, Any]]:
    if spec.get("measurements"):
        return [dict(m) for m in spec["measurements"]]
    timing = spec.get("timing") or {}
    return [
        {"metric": "latency", "statistic": statistic, "unit": "ns", "value": value, "sampleCount": timing.get("samples")}
        for statistic, value in (timing.get("latencyNs") or {}).items()
    ]
