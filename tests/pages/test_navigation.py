"""A visitor's path through the bundled data: / → a group → a run → compare with #1 → back,
each page checked against the API's answer for the same data."""

import math

import pytest

# What the home page asks for one search (web/queries.py HOME): the operations matching
# the text, each with its groups and their #1s.
SEARCH = """query($text: String!) { searchDefinitions(text: $text, first: 20) { nodes { name comparisonGroups {
  id title size leader { id digest title } } } } }"""
BOARD = """query($id: ID!) { comparisonGroup(id: $id) { rankRule { tieTest } runs(first: 50) { edges { node {
  id digest title rank primaryMeasurement { display } } } } } }"""
CASES = """query($id: ID!) { run(id: $id) { title rank group { rankedSize } implementation { architectures }
  protocol { primaryStatistic } cases { index latency { statistic valueNs } } } }"""


def per_case(run: dict) -> dict[int, int]:
    """Each case's latency under the protocol's statistic, else its first (our controlled protocol
    ranks runs by a geomean over cases, each case by its median), as web/charts.py reads it."""
    statistic = run["protocol"]["primaryStatistic"]
    return {c["index"]: next((m for m in c["latency"] if m["statistic"] == statistic), c["latency"][0])["valueNs"] for c in run["cases"]}


@pytest.mark.bundled
async def test_home_group_run_compare_and_back(site, page, graphql):
    await page.goto(f"{site}/")
    assert await page.title() == "KernelIndex · fastest evidenced GPU kernels"
    # The visitor searches for the operation of the seed record (problem 051, QK-norm backward).
    await page.fill("#q", "qknorm")
    await page.click("nav button[type=submit]")
    await page.wait_for_url(f"{site}/?q=qknorm")
    definitions = (await graphql(SEARCH, {"text": "qknorm"}))["searchDefinitions"]["nodes"]
    assert definitions
    # Every matching operation and every group with its #1, as the API lists them.
    for definition in definitions:
        for group in definition["comparisonGroups"]:
            row = page.locator("tr", has=page.locator(f'a[href="/groups/{group["id"]}"]'))
            assert await row.locator("td").nth(0).inner_text() == group["title"]
            assert await row.locator("td").nth(3).inner_text() == str(group["size"])
            assert await row.locator("td").nth(4).inner_text() == group["leader"]["title"]

    # The largest group whose #1 carries per-case results (so the comparison has cases to divide).
    groups = sorted((g for d in definitions for g in d["comparisonGroups"]), key=lambda g: -g["size"])
    leaders = [(await graphql(CASES, {"id": g["leader"]["id"]}))["run"] for g in groups]
    group = next(g for g, leader in zip(groups, leaders) if leader["cases"] and g["size"] > 1)
    await page.click(f'a[href="/groups/{group["id"]}"]')
    await page.wait_for_url(f"{site}/groups/{group['id']}")
    assert await page.inner_text("h1") == group["title"]
    answer = (await graphql(BOARD, {"id": group["id"]}))["comparisonGroup"]
    board = [e["node"] for e in answer["runs"]["edges"]]
    tie_test = {"exact": "equal values", "noise_band": "difference inside the larger half-IQR"}[answer["rankRule"]["tieTest"]]
    assert await page.inner_text("#tie-test") == f"ties: {tie_test}"
    rows = page.locator("#leaderboard tbody tr")
    assert await rows.count() == len(board) == group["size"]
    ranks = [r["rank"] for r in board]
    for i, run in enumerate(board):
        assert await rows.nth(i).get_attribute("data-digest") == run["digest"]
        tie = ranks.count(run["rank"]) > 1
        assert await rows.nth(i).locator("td.rank").inner_text() == f"{'=' if tie else ''}{run['rank']}"
        assert (await rows.nth(i).locator("td").nth(2).inner_text()).startswith(run["primaryMeasurement"]["display"])

    # The worst-ranked run, then compare it with #1.
    last = board[-1]
    await rows.nth(len(board) - 1).locator("a").click()
    await page.wait_for_url(f"{site}/runs/{last['digest']}")
    detail = (await graphql(CASES, {"id": last["id"]}))["run"]
    assert await page.inner_text("#title") == last["title"]
    assert f"Rank {detail['rank']} of {detail['group']['rankedSize']}" in await page.inner_text("#rank")
    assert await page.locator("#chart svg rect").count() >= len(detail["cases"])
    assert detail["implementation"]["architectures"] and await page.inner_text("#architectures") == ", ".join(
        detail["implementation"]["architectures"]
    )

    await page.click("#compare")
    await page.wait_for_url(f"{site}/compare?runs={last['digest']},{group['leader']['digest']}")
    leader = (await graphql(CASES, {"id": group["leader"]["id"]}))["run"]
    mine, best = per_case(detail), per_case(leader)
    shared = sorted(set(mine) & set(best))
    expected = math.exp(sum(math.log(best[i] / mine[i]) for i in shared) / len(shared))
    rows = page.locator("#runs tbody tr")
    assert [await rows.nth(i).locator("td a").first.inner_text() for i in range(2)] == [last["title"], leader["title"]]
    assert await rows.nth(1).locator("td.geomean").inner_text() == f"{expected:.3f}×"
    assert await page.locator("#cases tbody tr").count() == len(set(mine) | set(best))

    await page.go_back()
    await page.wait_for_url(f"{site}/runs/{last['digest']}")
    assert await page.inner_text("#title") == last["title"]
