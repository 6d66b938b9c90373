"""Concurrent writers that conflict inside the database get their answer, not a masked error:
every transaction retries transient conflicts."""

from __future__ import annotations

import asyncio

import httpx

from store.manifest_set import publish_set
from tests import factories
from tests.faults.support import group_problems
from tests.partners import support
from tests.partners.support import SUBMIT, bearer


async def test_six_identical_reproductions_at_once_are_one_attestation_and_six_answers(db, live_site):
    run = await support.published_run(db)
    signer, secret = await support.partner(db)
    envelope = support.envelope(signer, run["digest"])
    async with httpx.AsyncClient(base_url=live_site, timeout=60) as http:
        replies = await asyncio.gather(
            *[
                http.post("/graphql", json={"query": SUBMIT, "variables": {"run": run["id"], "envelope": envelope}}, headers=bearer(secret))
                for _ in range(6)
            ]
        )
    bodies = [reply.json() for reply in replies]
    assert all("errors" not in body for body in bodies), [body.get("errors") for body in bodies]
    answers = [body["data"]["runSubmitReproduction"] for body in bodies]
    assert all(answer["userErrors"] == [] for answer in answers)
    assert sorted(answer["created"] for answer in answers) == [False] * 5 + [True]
    assert len({answer["attestation"]["digest"] for answer in answers}) == 1
    assert await db.attestations.count_documents({}) == 1
    assert await db.events.count_documents({"type": "run.attested"}) == 1


async def test_concurrent_loads_into_the_same_groups_all_land_and_agree(db, mongo_uri):
    env = factories.environment()
    sets = []
    for writer in range(4):
        manifests = []
        for n in range(10):
            b = factories.run_bundle(f"w{writer}-{n}", env=env, score=(writer * 10 + n) / 50, user=f"user{writer}")
            manifests += [b.definition, b.workload, b.protocol, b.environment, b.implementation, b.run]
        sets.append(manifests)
    reports = await asyncio.gather(*[publish_set(db, manifests) for manifests in sets])
    assert [sorted({o.status for o in report.runs}) for report in reports] == [["new"]] * 4
    assert await db.runs.count_documents({}) == 40
    group = await db.comparison_groups.find_one({})
    assert group["size"] == 40
    assert group_problems(mongo_uri, db.name) == []
