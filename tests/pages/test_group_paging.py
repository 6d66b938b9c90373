"""A large group's leaderboard: keyset pages from the API's cursors; sorting says what it sorts."""

from urllib.parse import parse_qs, urlsplit

from store.publish import publish_many
from tests import factories


async def test_pages_follow_the_api_cursor_and_sorting_stays_within_the_page(db, site, page, graphql):
    # 60 runs, best first (score falls with i): ranks 1..60.
    await publish_many(
        db, [factories.run_bundle(f"r{i}", score=1 - i / 100, latency_ns=100_000 + (i * 7919) % 5000, user=f"u{i:02d}") for i in range(60)]
    )
    group = (await graphql("{ definitions(first: 1) { comparisonGroups { id } } }"))["definitions"][0]["comparisonGroups"][0]["id"]
    await page.goto(f"{site}/groups/{group}")
    assert await page.locator("td.rank").all_inner_texts() == [str(r) for r in range(1, 51)]
    await page.click("#next")
    await page.wait_for_selector("#leaderboard tbody tr >> nth=0")
    assert await page.locator("td.rank").all_inner_texts() == [str(r) for r in range(51, 61)]
    assert not await page.locator("#next").count()
    after = (await graphql("query($id: ID!) { comparisonGroup(id: $id) { runs(first: 50) { pageInfo { endCursor } } } }", {"id": group}))[
        "comparisonGroup"
    ]["runs"]["pageInfo"]["endCursor"]
    assert parse_qs(urlsplit(page.url).query)["after"] == [after]

    await page.goto(f"{site}/groups/{group}")
    await page.click("#leaderboard th a:text('primary measurement')")
    await page.wait_for_url("**sort=latency**")
    assert await page.inner_text("#sort-note") == "Sorted by latency (asc) within this page of at most 50 runs; ranks are the group's."
    shown = await page.locator("td.rank").all_inner_texts()
    assert sorted(shown, key=int) == [str(r) for r in range(1, 51)]  # the same 50 runs, reordered
    board = (await graphql.http.get(page.url, headers={"accept": "application/json"})).json()
    latencies = [r["primaryMeasurement"]["valueNs"] for r in board["runs"]]
    assert latencies == sorted(latencies) and [str(r["rank"]) for r in board["runs"]] == shown
    await page.click("#leaderboard th a:text('primary measurement')")  # again: descending
    await page.wait_for_url("**order=desc**")
    assert await page.locator("td.rank").all_inner_texts() == shown[::-1]
