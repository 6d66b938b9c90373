"""/serving in headless Chromium over the bundled data: the catalog's MLPerf serving runs, reached
from the site's navigation, filtered with the form, paged, never ranked; each page checked against
the API's answer and its JSON twin, and within 100 kB."""

import pytest

pytestmark = pytest.mark.bundled

JSON = {"accept": "application/json"}
RUNS = """query($filter: ServingRunFilter, $after: String) { servingRuns(filter: $filter, first: 25, after: $after) {
  totalCount pageInfo { hasNextPage endCursor } nodes { digest } } }"""
MAX_BYTES = 100_000


async def _digests(page) -> list[str]:
    return await page.eval_on_selector_all("#serving-runs tbody tr[data-digest]", "els => els.map(e => e.dataset.digest)")


async def test_from_the_home_page_to_a_filtered_list_and_its_pages(site, page, graphql):
    await page.goto(f"{site}/")
    await page.click('nav a[href="/serving"]')
    await page.wait_for_url(f"{site}/serving")
    assert await page.inner_text("h1") == "Serving runs"
    first = (await graphql(RUNS))["servingRuns"]
    assert await page.inner_text("#serving-count") == f"{first['totalCount']} of {first['totalCount']} serving runs, 25 on this page"
    assert first["totalCount"] == 722
    assert await _digests(page) == [n["digest"] for n in first["nodes"]]
    # Listed, never ranked: no rank column, no "#1".
    headers = [h.lower() for h in await page.locator("#serving-runs th").all_inner_texts()]
    assert not [h for h in headers if "rank" in h or "#" in h]
    assert "MLPerf™ Inference results by MLCommons" in await page.inner_text("#provenance")

    # The visitor narrows to Llama-2-70B in the Interactive scenario.
    await page.select_option("#f-model", "mlperf-llama2-70b")
    await page.select_option("#f-scenario", "interactive")
    await page.click("#serving-filter button[type=submit]")
    await page.wait_for_url(f"{site}/serving?model=mlperf-llama2-70b&scenario=interactive&accelerator=&system=&round=")
    wanted = {"model": "mlperf-llama2-70b", "scenario": "interactive"}
    seen, after = [], None
    while True:
        answer = (await graphql(RUNS, {"filter": wanted, "after": after}))["servingRuns"]
        assert await _digests(page) == [n["digest"] for n in answer["nodes"]]
        assert (await page.inner_text("#serving-count")).startswith(f"{answer['totalCount']} of 722 serving runs match")
        seen += await _digests(page)
        if not answer["pageInfo"]["hasNextPage"]:
            assert await page.locator("#next").count() == 0
            break
        after = answer["pageInfo"]["endCursor"]
        await page.click("#next")
        await page.wait_for_load_state()
    assert len(seen) == len(set(seen)) == answer["totalCount"] == 78
    # Every row of the filtered list says its model and scenario.
    assert set(await page.locator("#serving-runs tbody tr td:nth-child(3)").all_inner_texts()) == {"interactive"}
    # As MLPerf's results messaging asks: round and division, submitter, system and entry ID.
    assert set(await page.locator("#serving-runs tbody tr td:nth-child(8)").all_inner_texts()) <= {"v5.1 · closed", "v6.0 · closed"}


async def test_json_twin_and_size(site, page, graphql, report):
    http = graphql.http
    path = "/serving?accelerator=NVIDIA+H200-SXM-141GB"
    twin = (await http.get(path, headers=JSON)).json()
    answer = (await graphql(RUNS, {"filter": {"accelerator": "NVIDIA H200-SXM-141GB"}}))["servingRuns"]
    assert [r["digest"] for r in twin["runs"]] == [n["digest"] for n in answer["nodes"]]
    assert twin["matching"] == answer["totalCount"] and twin["filter"]["accelerator"] == "NVIDIA H200-SXM-141GB"
    # Each record carries its manifests' digests and its provenance in the twin.
    assert {m["kind"] for m in twin["runs"][0]["manifests"]} == {
        "ServingRun",
        "ModelRevision",
        "ServingConfiguration",
        "ServingStackRevision",
        "ServingWorkload",
    }
    assert twin["runs"][0]["provenance"][0]["license"] == "Apache-2.0"
    await page.goto(f"{site}{path}")
    assert await _digests(page) == [r["digest"] for r in twin["runs"]]
    sizes = []
    for url in ("/serving", path, "/serving?system=" + twin["runs"][0]["configuration"]["system"]):
        for headers in ({}, JSON):
            response = await http.get(url, headers=headers)
            assert response.status_code == 200 and len(response.content) <= MAX_BYTES, (url, headers, len(response.content))
            sizes.append(f"{url} ({'JSON' if headers else 'HTML'}): {len(response.content):,} bytes")
    report("/serving page sizes (limit 100 kB)", sizes)


async def test_a_bad_cursor_is_one_line_not_a_traceback(site, graphql):
    response = await graphql.http.get("/serving?after=bm9wZQ")
    assert response.status_code == 400
    assert "after: &#39;bm9wZQ&#39; is not a valid cursor" in response.text and "Traceback" not in response.text
