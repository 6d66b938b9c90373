"""The pages through the federated stack as `make serve` starts it: Hive Gateway on one port
serves /graphql and forwards every other path to the web process, which asks the gateway's
/graphql; the browser's live updates go over the gateway's WebSocket."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import time

import pytest
from playwright.async_api import expect

from tests import factories
from tests.federation.test_stack import Stack  # the stack exactly as `kernelindex serve` starts it
from tests.pages.conftest import Visits

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def load(stack: Stack, bundle, tmp_path) -> float:
    path = tmp_path / f"{bundle.run.metadata.name}.json"
    path.write_text(
        json.dumps(
            [
                m.to_json()
                for m in (bundle.definition, bundle.workload, bundle.protocol, bundle.environment, bundle.implementation, bundle.run)
            ]
        )
    )
    loaded = stack.cli("load", str(path))
    assert loaded.returncode == 0, loaded.stderr
    return time.monotonic()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    started = Stack(tmp_path_factory.mktemp("pages-stack") / "home", "--no-data").wait_ready()
    yield started
    started.stop()


async def test_pages_and_live_updates_through_the_gateway(stack, browser, tmp_path):
    site = f"http://127.0.0.1:{stack.port}"
    for bundle in (factories.run_bundle("a", score=0.5, user="alice"), factories.run_bundle("b", score=0.3, user="bob")):
        load(stack, bundle, tmp_path)
    page = await browser.new_page()
    visits = Visits(page)

    await page.goto(f"{site}/")
    assert await page.inner_text("#operations h3") == "Synthetic synthetic-op"
    await page.click("#operations a[href^='/groups/']")
    await page.wait_for_url(f"{site}/groups/**")
    assert await page.locator("#leaderboard tbody td:nth-child(2)").all_inner_texts() == [
        "alice · synthetic-op · B200",
        "bob · synthetic-op · B200",
    ]
    # Locators, not JavaScript predicates: the pages' CSP forbids evaluating strings.
    await expect(page.locator("#live-status")).to_have_text(re.compile(r"^Live"), timeout=15_000)

    finished = await asyncio.to_thread(load, stack, factories.run_bundle("c", score=0.95, user="carol"), tmp_path)
    await expect(page.locator("#leaderboard tbody tr td:nth-child(2)").first).to_have_text("carol · synthetic-op · B200", timeout=2_000)
    assert time.monotonic() - finished <= 2.0
    assert await page.locator("#leaderboard td.rank").all_inner_texts() == ["1", "2", "3"]

    await page.click("#leaderboard tbody tr:nth-child(3) a")
    assert await page.inner_text("#title") == "bob · synthetic-op · B200"
    await page.click("#compare")
    await page.wait_for_url(f"{site}/compare?**")
    assert await page.locator("#runs tbody td:first-child a").all_inner_texts() == [
        "bob · synthetic-op · B200",
        "carol · synthetic-op · B200",
    ]

    await page.goto(f"{site}/graphiql")
    await page.wait_for_selector(".graphiql-container", timeout=20_000)
    await page.click(".graphiql-execute-button")
    await page.locator(".result-window", has_text="carol").wait_for(timeout=20_000)
    assert visits.foreign(site) == []
    await page.close()
