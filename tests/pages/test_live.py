"""Live pages: a run published by another process (`kernelindex load`) shows up on an open page
within 2 s, without a reload (graphql-transport-ws to the same origin's /graphql)."""

import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path

from playwright.async_api import expect

from store.publish import publish_many
from tests import factories

KERNELINDEX = str(Path(sys.executable).parent / "kernelindex")  # the installed entry point


async def load_from_another_process(bundle, tmp_path: Path, mongo_uri: str, database: str) -> float:
    """`kernelindex load` of the bundle's manifests; returns the time the command finished."""
    path = tmp_path / "run.json"
    path.write_text(
        json.dumps(
            [
                m.to_json()
                for m in (bundle.definition, bundle.workload, bundle.protocol, bundle.environment, bundle.implementation, bundle.run)
            ]
        )
    )
    env = {**os.environ, "MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": database}
    process = await asyncio.create_subprocess_exec(
        KERNELINDEX, "load", str(path), env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return time.monotonic()


async def test_a_better_run_appears_at_number_one_on_the_open_group_page(db, mongo_uri, site, page, graphql, tmp_path):
    await publish_many(db, [factories.run_bundle("a", score=0.5, user="alice"), factories.run_bundle("b", score=0.3, user="bob")])
    group = (await graphql("{ definitions(first: 1) { comparisonGroups { id } } }"))["definitions"][0]["comparisonGroups"][0]
    await page.goto(f"{site}/groups/{group['id']}")
    assert await page.locator("#leaderboard tbody tr td:nth-child(2)").all_inner_texts() == [
        "alice · synthetic-op · B200",
        "bob · synthetic-op · B200",
    ]
    # Locators, not JavaScript predicates: the pages' CSP forbids evaluating strings.
    await expect(page.locator("#live-status")).to_have_text(re.compile(r"^Live"), timeout=10_000)
    await page.evaluate("window.notReloaded = true")

    finished = await load_from_another_process(factories.run_bundle("c", score=0.95, user="carol"), tmp_path, mongo_uri, db.name)
    await expect(page.locator("#leaderboard tbody tr td:nth-child(2)").first).to_have_text("carol · synthetic-op · B200", timeout=2_000)
    assert time.monotonic() - finished <= 2.0
    assert await page.evaluate("window.notReloaded") is True
    assert await page.locator("#leaderboard tbody tr td.rank").all_inner_texts() == ["1", "2", "3"]
    assert await page.inner_text("#size") == "3"
    assert "new #1 carol · synthetic-op · B200" in await page.inner_text("#live-status")


async def test_a_new_run_appears_among_the_newest_on_the_open_home_page(db, mongo_uri, site, page, tmp_path):
    await publish_many(db, [factories.run_bundle("a", score=0.5, user="alice")])
    await page.goto(f"{site}/")
    # Locators, not JavaScript predicates: the pages' CSP forbids evaluating strings.
    await expect(page.locator("#live-status")).to_have_text(re.compile(r"^Live"), timeout=10_000)
    await page.evaluate("window.notReloaded = true")
    finished = await load_from_another_process(factories.run_bundle("d", score=0.1, user="dave"), tmp_path, mongo_uri, db.name)
    await expect(page.locator("#newest li a").first).to_have_text("dave · synthetic-op · B200", timeout=2_000)
    assert time.monotonic() - finished <= 2.0
    assert await page.evaluate("window.notReloaded") is True
    assert await page.locator("#newest li").count() == 2
