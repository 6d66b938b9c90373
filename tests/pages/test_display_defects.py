"""The display defects a newcomer found (issue 4/8, item 8), each checked in Chromium (or, for the
content negotiation, with a client's plain request). Each of these failed on the pages before."""

from __future__ import annotations

import httpx
import pytest

from registry.controlled_format import cases_of
from store.publish import publish_many
from tests import factories


@pytest.mark.bundled
async def test_best_worst_and_std_are_shown_for_our_controlled_runs(bundled_db, site, page):
    db = bundled_db
    # A controlled run with raw samples (v1alpha1: every sample in sourceNative.metrics).
    run = await db.runs.find_one({"spec.sourceNative.metrics.case0_sample_1": {"$exists": True}})
    suite = await db.workloads.find_one({"_id": run["spec"]["workloadDigest"]})
    cases = cases_of(run["spec"], suite["spec"])
    await page.goto(f"{site}/runs/{run['_id']}")
    best_worst = await page.locator("#cases td.best-worst").all_inner_texts()
    mean_std = await page.locator("#cases td.mean-std").all_inner_texts()
    assert len(best_worst) == len(cases) and all(" / " in cell and "—" not in cell for cell in best_worst)
    assert all(" ± " in cell for cell in mean_std), mean_std[:3]
    assert best_worst[0].startswith(f"{cases[0]['latencyNs']['min'] / 1000:.1f} µs")


@pytest.mark.bundled
async def test_chart_legends_tell_two_runs_apart(bundled_db, site, page):
    db = bundled_db
    titles = (
        "KernelIndex CUDA extension, 128-row GEMM tiles on nvidia-h200",
        "KernelIndex CUDA extension, 256-row GEMM tiles on nvidia-h200",
    )
    a, b = [(await db.runs.find_one({"metadata.title": t}))["_id"] for t in titles]
    await page.goto(f"{site}/compare?runs={a},{b}")
    # The legend was cut at 22 characters: "KernelIndex CUDA exten" twice.
    legends = await page.locator("#chart svg text.legend").all_text_contents()
    assert legends == [f"1: {titles[0]}", f"2: {titles[1]}"]


async def test_rows_sharing_a_title_are_told_apart_on_the_leaderboard(db, site, page):
    outcomes = await publish_many(db, [factories.run_bundle("r1", score=0.9), factories.run_bundle("r2", score=0.3)])
    group = (await db.runs.find_one({"_id": outcomes[0].run_digest}))["groupKey"]
    from resolvers import ids

    await page.goto(f"{site}/groups/{ids.encode('ComparisonGroup', group)}")
    titles = await page.locator("#leaderboard tbody td:nth-child(2)").all_inner_texts()
    assert titles == ["alice · synthetic-op · B200 · submission-r1", "alice · synthetic-op · B200 · submission-r2"]


@pytest.mark.bundled
async def test_the_home_page_does_not_overflow_a_narrow_window(site, page):
    await page.set_viewport_size({"width": 640, "height": 900})
    await page.goto(f"{site}/")
    overflow = await page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the page is {overflow} px wider than the window"


@pytest.mark.bundled
async def test_source_metrics_column_only_where_runs_have_them(bundled_db, site, page):
    db = bundled_db
    from resolvers import ids

    controlled = await db.comparison_groups.find_one({"family": "kernelindex_controlled"})
    await page.goto(f"{site}/groups/{ids.encode('ComparisonGroup', controlled['_id'])}")
    headers = await page.locator("#leaderboard thead th").all_inner_texts()
    assert "source metrics" not in headers  # ours are per case (case<i>_*): the dossier's case table
    seed_group = (await db.runs.find_one({"externalId": "37369"}))["groupKey"]
    await page.goto(f"{site}/groups/{ids.encode('ComparisonGroup', seed_group)}")
    headers = await page.locator("#leaderboard thead th").all_inner_texts()
    column = headers.index("source metrics") + 1
    cells = await page.locator(f"#leaderboard tbody td:nth-child({column})").all_inner_texts()
    assert cells and all(cell != "—" for cell in cells)
    assert "SOL 0.2851 · 0.46× reference · 2/16 cases faster" in cells


async def test_an_unknown_path_is_a_page_with_a_way_on(site, page):
    response = await page.goto(f"{site}/no/such/page")
    assert response.status == 404
    assert await page.inner_text("h1") == "No such page"
    assert "Nothing is published at /no/such/page" in await page.inner_text("#error")
    await page.click("#way-on a")
    await page.wait_for_url(f"{site}/")
    async with httpx.AsyncClient(base_url=site) as http:
        twin = await http.get("/no/such/page", headers={"accept": "application/json"})
    assert twin.status_code == 404 and twin.json()["what"] == "page"


@pytest.mark.bundled
async def test_search_finds_operations_by_gpu(site, page):
    await page.goto(f"{site}/")
    await page.fill("#q", "H200")
    await page.click("nav button[type=submit]")
    await page.wait_for_url(f"{site}/?q=H200")
    result = await page.inner_text("#search-result")
    assert not result.startswith("0 operations"), result
    assert "Gemma-3-270m QKV projection backward with Q/K RMSNorm" in await page.inner_text("#operations")


@pytest.mark.bundled
async def test_plain_clients_get_html_and_json_when_they_ask(bundled_db, site):
    db = bundled_db
    digest = (await db.runs.find_one({"externalId": "37369"}))["_id"]
    async with httpx.AsyncClient(base_url=site) as http:
        # curl sends Accept: */* (httpx too): a page, not its JSON twin.
        for path in ("/", f"/runs/{digest}", "/graphiql"):
            plain = await http.get(path, headers={"accept": "*/*"})
            assert plain.headers["content-type"].startswith("text/html"), path
            asked = await http.get(path, headers={"accept": "application/json"})
            assert asked.headers["content-type"].startswith("application/json"), path
        assert (await http.get(f"/runs/{digest}?format=json")).json()["metadata"]["name"] == "sol-submission-37369"
        twin = (await http.get("/graphiql", headers={"accept": "application/json"})).json()
        assert twin["graphql"].endswith("/graphql") and "graphiql.min.js" in twin["assets"]
