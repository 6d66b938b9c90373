"""Comparison groups in the store: membership, ranks and the #1, recomputed on change."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from pymongo import UpdateOne
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from registry.comparison import GroupIdentity
from registry.ranking import Entry, RankRule, leader, rank_entries, rank_rule_for
from store import events, leaderboards, records
from store.bundle import Bundle
from store.group_members import current_members, rank_order


def group_title(bundle: Bundle) -> str:
    protocol = bundle.protocol.spec
    hardware = bundle.environment.spec.hardware
    gpu = hardware.product.removeprefix("NVIDIA ") + (f" ({hardware.formFactor})" if hardware.formFactor else "")
    if protocol.comparability.family == "sol_execbench_leaderboard":
        return f"SOL-ExecBench {protocol.harness.version} · {gpu}"
    return f"{protocol.harness.name} {protocol.comparability_version} · {gpu}"


async def ensure_group(
    db: AsyncDatabase, identity: GroupIdentity, bundle: Bundle, digests: dict[str, str], now: datetime, session: AsyncClientSession
) -> None:
    rule = rank_rule_for(bundle.protocol.spec)
    await db.comparison_groups.update_one(
        {"_id": identity.key()},
        {
            "$setOnInsert": {
                "definitionDigest": identity.definitionDigest,
                "workloadDigest": identity.workloadDigest,
                "protocolDigest": digests["protocol"],
                "environmentDigest": digests["environment"],
                "family": identity.family,
                "familyVersion": identity.familyVersion,
                "gpu": {"product": identity.gpuProduct, "architecture": identity.gpuArchitecture}
                | ({"formFactor": identity.gpuFormFactor} if identity.gpuFormFactor else {}),
                "rankRule": asdict(rule),
                "title": group_title(bundle),
                "size": 0,
                "rankedSize": 0,
                "leaderDigest": None,
                "createdAt": now,
            }
        },
        upsert=True,
        session=session,
    )


@dataclass
class RankPlan:
    """What publishing some runs into one group changes: ranks of members already stored,
    and the group's size and #1 (the new runs' own ranks are set in their documents)."""

    group: dict[str, Any]
    updates: list[UpdateOne]
    size: int
    ranked: int
    leader: str | None
    cause: str | None = None  # why #1 changed (store/records.py); None when it did not
    # The current members after the change, with their new ranks (the incoming run documents
    # among them get their seq when written): the group's leaderboard is built from them.
    members: list[dict[str, Any]] = field(default_factory=list)


async def plan(db: AsyncDatabase, key: str, incoming: list[dict[str, Any]], leaving: set[str], session: AsyncClientSession) -> RankPlan:
    """Rank the group's current members together with `incoming` run documents (not yet
    stored; their `rank`/`rankOrder` are set in place); `leaving` are members being superseded."""
    group = await db.comparison_groups.find_one({"_id": key}, session=session)
    members = [m for m in await current_members(db, key, leaderboards.MEMBER_PROJECTION, session) if m["_id"] not in leaving]
    arriving = [doc for doc in incoming if doc["current"]]
    everyone = members + arriving
    ranks = rank_entries(RankRule(**group["rankRule"]), [Entry(m["_id"], m.get("rankValue"), m.get("rankNoise") or 0.0) for m in everyone])
    for doc in incoming:
        doc["rank"] = ranks.get(doc["_id"]) if doc["current"] else None
        doc["rankOrder"] = rank_order(doc["rank"])
    updates = [
        UpdateOne({"_id": m["_id"]}, {"$set": {"rank": ranks[m["_id"]], "rankOrder": rank_order(ranks[m["_id"]])}})
        for m in members
        if m.get("rank") != ranks[m["_id"]]
    ]
    for m in members:
        m["rank"], m["rankOrder"] = ranks[m["_id"]], rank_order(ranks[m["_id"]])
    new_leader = leader(ranks)
    old_leader = group.get("leaderDigest")
    cause = records.cause_of(old_leader, new_leader, incoming, leaving) if new_leader != old_leader else None
    return RankPlan(group, updates, len(everyone), sum(1 for r in ranks.values() if r is not None), new_leader, cause, everyone)


async def apply(db: AsyncDatabase, plans: list[RankPlan], now: datetime, session: AsyncClientSession) -> None:
    """After the new runs are written, in the same transaction: move the ranks of existing members, update each group and
    its leaderboard and append one `group.changed` event per group (its membership changed even
    when its size and #1 did not, e.g. a correction replaced a run)."""
    boards = {p.group["_id"]: leaderboards.leaderboard(p.group["_id"], p.members) for p in plans}
    await leaderboards.write(db, list(boards.values()), session)
    for p in plans:
        if p.updates:
            await db.runs.bulk_write(p.updates, ordered=False, session=session)
        old_leader = p.group.get("leaderDigest")
        await db.comparison_groups.update_one(
            {"_id": p.group["_id"]},
            {
                "$set": {
                    "size": p.size,
                    "rankedSize": p.ranked,
                    "leaderDigest": p.leader,
                    leaderboards.HEAD: boards[p.group["_id"]]["head"],
                    "updatedAt": now,
                }
            },
            session=session,
        )
        event = await events.append(
            db,
            "group.changed",
            now,
            session=session,
            groupKey=p.group["_id"],
            definitionDigest=p.group["definitionDigest"],
            oldLeader=old_leader,
            newLeader=p.leader,
            leaderChanged=p.leader != old_leader,
            size=p.size,
        )
        if p.cause is not None:
            await records.append(db, p.group, seq=event["seq"], at=now, cause=p.cause, run=p.leader, previous=old_leader, session=session)
