"""`kernelindex export --catalog OUT.jsonl.zst`: our registry in the catalog export's format.

One `{"table", "row"}` line per row, in the seed exporter's table order, Zstandard-compressed,
with `latest.json` beside it (`file`, `url`, `sha256`, `sizeBytes`, `lines`, `generatedAt`), so
`import kernelindex-catalog` reads it back: export → import into an empty database gives the same
digests, cohorts and ranks (tests/loaders/test_catalog_export.py).

Rows imported from a catalog keep the export row's own fields (ids, keys, slugs); rows of ours
get ids derived from their digests and the cohort keys of registry/comparison.py. Only current
runs are exported (the seed's exporter writes published runs only).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import zstandard

from loaders.kernelindex_catalog.publish import SERVING_COLLECTIONS
from registry.comparison import cohort_of, correctness_key
from registry.sources import source_title
from store.client import Database

_NAMESPACE = uuid.UUID("6f1d3c52-8f9e-4a5b-9c33-0b7a1e2d4c55")  # ids of our own rows: uuid5(digest)


def _id(key: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, key))


def _manifest(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: doc[k] for k in ("apiVersion", "kind", "metadata", "spec")}


def _iso(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return value


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.counts: dict[str, int] = {}

    def emit(self, table: str, row: dict[str, Any]) -> None:
        self.lines.append(json.dumps({"table": table, "row": row}, ensure_ascii=False, separators=(",", ":")))
        self.counts[table] = self.counts.get(table, 0) + 1


async def export_catalog(db: Database, out: Path) -> dict[str, Any]:
    """Write OUT and OUT's folder's latest.json; return the pointer (with `counts`)."""
    w = _Writer()
    now = datetime.now(UTC)
    imports = await db.catalog_imports.find({}).sort("importedAt", 1).to_list()

    # sources: the catalog's own rows, then one for each source of ours that has runs
    sources: dict[str, str] = {}  # slug → row id
    for record in imports:
        for row in record.get("sourceRows", []):
            if row["slug"] not in sources:
                sources[row["slug"]] = row["id"]
                w.emit("sources", row)
    for slug in sorted(await db.runs.distinct("source", {"current": True})):
        if slug not in sources:
            sources[slug] = _id(f"source:{slug}")
            w.emit(
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

    projects: dict[str, str] = {}
    async for doc in db.projects.find({}).sort("_id", 1):
        row = {
            **(doc.get("catalog") or {"id": _id(doc["_id"]), "slug": doc["metadata"]["name"], "name": doc["metadata"]["name"]}),
            "manifest": _manifest(doc),
        }
        projects[doc["_id"]] = row["id"]
        w.emit("projects", row)

    operation_ids: dict[str, str] = {}
    definitions = await db.definitions.find({}).sort("_id", 1).to_list()
    for doc in definitions:
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
        operation_ids[doc["_id"]] = catalog["id"]
        w.emit("operations", {**catalog, "semanticDigest": doc["_id"], "manifest": _manifest(doc)})
    for doc in definitions:
        for alias in doc.get("aliases", []):
            w.emit("operation_aliases", {"operationId": operation_ids[doc["_id"]], "alias": alias})

    runs = await db.runs.find({"current": True}).sort("seq", 1).to_list()
    workload_ids: dict[str, str] = {}
    workload_specs: dict[str, dict[str, Any]] = {}
    async for doc in db.workloads.find({}).sort("_id", 1):
        definition = doc.get("definitionDigest") or doc["spec"].get("operationSpecDigest") or doc["spec"].get("definitionDigest")
        if definition not in operation_ids:
            continue
        catalog = doc.get("catalog") or {"id": _id(doc["_id"]), "schemaVersion": doc["apiVersion"], "createdAt": _iso(doc.get("storedAt"))}
        workload_ids[doc["_id"]] = catalog["id"]
        workload_specs[doc["_id"]] = doc["spec"]
        w.emit("workloads", {**catalog, "operationId": operation_ids[definition], "workloadDigest": doc["_id"], "manifest": _manifest(doc)})
    implementation_ids: dict[str, str] = {}
    async for doc in db.implementations.find({}).sort("_id", 1):
        definition = (
            doc.get("definitionDigest") or (doc["spec"].get("operation") or {}).get("specDigest") or doc["spec"].get("definitionDigest")
        )
        if definition not in operation_ids:
            continue
        catalog = doc.get("catalog") or {
            "id": _id(doc["_id"]),
            "projectId": None,
            "slug": doc["metadata"]["name"],
            "title": doc["metadata"].get("title"),
            "createdAt": _iso(doc.get("storedAt")),
        }
        implementation_ids[doc["_id"]] = catalog["id"]
        w.emit(
            "implementations",
            {**catalog, "operationId": operation_ids[definition], "implementationDigest": doc["_id"], "manifest": _manifest(doc)},
        )

    protocols = {d["_id"]: d for d in await db.protocols.find({}).to_list()}
    environments = {d["_id"]: d for d in await db.environments.find({}).to_list()}
    run_ids: dict[str, str] = {}
    measurements: list[dict[str, Any]] = []
    for doc in runs:
        spec = doc["spec"]
        if spec["workloadDigest"] not in workload_ids or spec["implementationDigest"] not in implementation_ids:
            continue  # a run whose workload or implementation is not in the v1alpha1 shape the export needs
        catalog = dict(doc.get("catalog") or {})
        if not catalog:
            keys = _keys(spec, workload_specs[spec["workloadDigest"]], doc["groupKey"])
            hardware = environments[spec["environmentDigest"]]["spec"].get("hardware", {})
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
        manifest = {
            "run": _manifest(doc),
            "protocol": _manifest(protocols[spec["protocolDigest"]]),
            "environment": _manifest(environments[spec["environmentDigest"]]),
        }
        w.emit("benchmark_runs", {**catalog, "manifest": manifest})
        for m in doc.get("measurements") or _measurements_of(spec):
            measurements.append(
                {
                    "id": m.get("id") or _id(f"{doc['_id']}:{m['metric']}:{m['statistic']}"),
                    "runId": catalog["id"],
                    **{k: v for k, v in m.items() if k != "id"},
                }
            )
    for row in measurements:
        w.emit("measurements", row)
    async for event in db.record_history.find({}).sort("at", 1):
        if event["runDigest"] not in run_ids:
            continue
        w.emit(
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
        w.emit("artifacts", {k: v for k, v in doc.items() if k not in ("_id", "storedAt", "provenance")})

    serving_ids: dict[str, dict[str, str]] = {}
    for table, digest_field in {**SERVING_COLLECTIONS, "serving_runs": "runDigest"}.items():
        serving_ids[table] = {}
        async for doc in db[table].find({}).sort("_id", 1):
            row = {**(doc.get("catalog") or {"id": _id(doc["_id"])}), digest_field: doc["_id"], "manifest": _manifest(doc)}
            serving_ids[table][doc["_id"]] = row["id"]
            w.emit(table, row)
            for m in doc.get("measurements", []) if table == "serving_runs" else ():
                w.emit("serving_measurements", {**m, "runId": row["id"]})

    body = ("\n".join(w.lines) + "\n").encode() if w.lines else b""
    compressed = zstandard.ZstdCompressor(level=19, write_checksum=True).compress(body)
    digest = hashlib.sha256(compressed).hexdigest()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(compressed)
    pointer = {
        "file": out.name,
        "url": None,
        "sha256": digest,
        "sizeBytes": len(compressed),
        "lines": len(w.lines),
        "generatedAt": _iso(now),
    }
    (out.parent / "latest.json").write_text(json.dumps(pointer, indent=2) + "\n")
    return {**pointer, "counts": w.counts}


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
