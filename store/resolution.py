"""What resolving a kernel for a workload reads (registry/resolution.py decides what matches).

Every read is an index range: the definition by `spec.name` (index `name`), its groups by
`definitionDigest` (index `definition`), their workload suites and protocols by `_id`, and a
group's current runs by `groupKey` (index `group_rank`, through store.group_members). A run is
read with only what ranking one case needs: its cases' index, status and latencies.
"""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from store.group_members import current_members
from store.read_models import ComparisonGroupDocument

Doc = dict[str, Any]

CASE_FIELDS = {
    "status": 1,
    "rank": 1,
    "spec.timing.primaryStatistic": 1,
    "spec.cases.index": 1,
    "spec.cases.status": 1,
    "spec.cases.latencyNs": 1,
    "spec.sourceNative": 1,  # a v1alpha1 controlled run's per-case results (registry/controlled_format.py)
}


async def operation_cohorts(
    db: AsyncDatabase, name: str
) -> tuple[Doc | None, list[ComparisonGroupDocument], dict[str, Doc], dict[str, Doc]]:
    """(definition, its comparison groups, their workload suites by digest, their protocols by digest)."""
    # The older dialect names an operation in its spec; the v1alpha1 format in its metadata.
    definition = await db.definitions.find_one({"$or": [{"spec.name": name}, {"metadata.name": name, "spec.family": {"$exists": True}}]})
    if definition is None:
        return None, [], {}, {}
    groups = [
        ComparisonGroupDocument.model_validate(g)
        for g in await db.comparison_groups.find({"definitionDigest": definition["_id"]}).to_list()
    ]
    workload_ids = sorted({g.workload_digest for g in groups})
    protocol_ids = sorted({g.protocol_digest for g in groups if g.protocol_digest})
    workloads = {w["_id"]: w for w in await db.workloads.find({"_id": {"$in": workload_ids}}, {"spec.cases": 1}).to_list()}
    protocols = {
        p["_id"]: p
        for p in await db.protocols.find({"_id": {"$in": protocol_ids}}, {"spec.measurement": 1, "metadata.labels": 1}).to_list()
    }
    return definition, groups, workloads, protocols


async def group_case_results(db: AsyncDatabase, group_key: str) -> list[Doc]:
    """The group's current runs, each with its cases' index, status and latencies."""
    return await current_members(db, group_key, CASE_FIELDS)
