"""Comparison groups in the store: membership, ranks and the #1, recomputed on change."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pymongo import UpdateOne
from pymongo.asynchronous.database import AsyncDatabase

from registry.comparison import group_identity
from registry.ranking import Entry, RankRule, leader, rank_entries, rank_rule_for
from store import events

if TYPE_CHECKING:
    from store.publish import Bundle


def group_title(bundle: Bundle) -> str:
    protocol = bundle.protocol.spec
    gpu = bundle.environment.spec.hardware.product.removeprefix("NVIDIA ")
    if protocol.comparability.family == "sol_execbench_leaderboard":
        return f"SOL-ExecBench {protocol.harness.version} · {gpu}"
    return f"{protocol.harness.name} {protocol.comparability_version} · {gpu}"


async def ensure_group(db: AsyncDatabase, key: str, bundle: Bundle, digests: dict[str, str], now: datetime) -> None:
    identity = group_identity(
        definition_digest=digests["definition"],
        workload_digest=digests["workload"],
        protocol=bundle.protocol.spec,
        environment=bundle.environment.spec,
    )
    rule = rank_rule_for(bundle.protocol.spec)
    await db.comparison_groups.update_one(
        {"_id": key},
        {
            "$setOnInsert": {
                "definitionDigest": identity.definitionDigest,
                "workloadDigest": identity.workloadDigest,
                "protocolDigest": digests["protocol"],
                "environmentDigest": digests["environment"],
                "family": identity.family,
                "familyVersion": identity.familyVersion,
                "gpu": {"product": identity.gpuProduct, "architecture": identity.gpuArchitecture},
                "rankRule": asdict(rule),
                "title": group_title(bundle),
                "size": 0,
                "rankedSize": 0,
                "leaderDigest": None,
                "createdAt": now,
            }
        },
        upsert=True,
    )


UNRANKED_ORDER = 2**31 - 1


def rank_order(rank: int | None) -> int:
    """A sortable stand-in for rank: unranked runs list after every ranked one."""
    return UNRANKED_ORDER if rank is None else rank


async def recompute(db: AsyncDatabase, keys: list[str], now: datetime) -> None:
    """Re-rank each group whose membership just changed (a run joined it, or superseded
    another); write only the ranks that moved, and append one `group.changed` event each."""
    for key in keys:
        group = await db.comparison_groups.find_one({"_id": key})
        if group is None:
            continue
        members = await db.runs.find(
            {"groupKey": key, "current": True},
            {"_id": 1, "rank": 1, "rankValue": 1, "rankNoise": 1},
        ).to_list()
        rule = RankRule(**group["rankRule"])
        ranks = rank_entries(
            rule, [Entry(m["_id"], m.get("rankValue"), m.get("rankNoise") or 0.0) for m in members]
        )
        updates = [
            UpdateOne({"_id": m["_id"]}, {"$set": {"rank": ranks[m["_id"]], "rankOrder": rank_order(ranks[m["_id"]])}})
            for m in members
            if m.get("rank") != ranks[m["_id"]]
        ]
        if updates:
            await db.runs.bulk_write(updates, ordered=False)
        new_leader = leader(ranks)
        old_leader = group.get("leaderDigest")
        size = len(members)
        ranked = sum(1 for r in ranks.values() if r is not None)
        changed: dict[str, Any] = {}
        if size != group.get("size"):
            changed["size"] = size
        if ranked != group.get("rankedSize"):
            changed["rankedSize"] = ranked
        if new_leader != old_leader:
            changed["leaderDigest"] = new_leader
        # Membership changed even when size and #1 did not (a correction replaced a run).
        await db.comparison_groups.update_one({"_id": key}, {"$set": {**changed, "updatedAt": now}})
        await events.append(
            db,
            "group.changed",
            now,
            groupKey=key,
            definitionDigest=group["definitionDigest"],
            oldLeader=old_leader,
            newLeader=new_leader,
            leaderChanged=new_leader != old_leader,
            size=size,
        )
