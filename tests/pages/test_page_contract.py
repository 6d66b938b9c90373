"""What every page owes its readers: a title, headings in order, every link reachable with the
keyboard, and a JSON twin (same URL, `Accept: application/json`) carrying the data it shows."""

import json

import pytest
import pytest_asyncio

JSON = {"accept": "application/json"}

HEADINGS = "[...document.querySelectorAll('h1,h2,h3,h4,h5,h6')].map(h => Number(h.tagName[1]))"
LINKS = "[...document.querySelectorAll('a[href]')].filter(a => a.offsetParent !== null || a.classList.contains('skip')).map(a => a.href)"
# Every stop of the Tab key on the page: links and form controls (a page's forms, e.g. the
# operation page's resolver, take Tab stops before the links after them).
TAB_STOPS = "[...document.querySelectorAll('a[href], input, select, button, textarea, [tabindex]')].filter(e => e.offsetParent !== null || e.classList.contains('skip')).length"


pytestmark = pytest.mark.bundled

# The operations of the seed record (problem 051): what a visitor searching "qknorm" is shown.
SEED_OPERATIONS = """{ searchDefinitions(text: "qknorm", first: 20) { nodes { name comparisonGroups { id size
  leader { digest } runs(first: 2) { nodes { digest } } } } } }"""


@pytest_asyncio.fixture
async def pages(graphql):
    """The URL of each kind of page, on the bundled data."""
    definitions = (await graphql(SEED_OPERATIONS))["searchDefinitions"]["nodes"]
    group = max((g for d in definitions for g in d["comparisonGroups"]), key=lambda g: g["size"])
    # a run other than the leader (two runs may tie for #1: the leader need not be listed first)
    second = next(n["digest"] for n in group["runs"]["nodes"] if n["digest"] != group["leader"]["digest"])
    operation = next(d["name"] for d in definitions if group in d["comparisonGroups"])
    return {
        "home": "/",
        "group": f"/groups/{group['id']}",
        "operation": f"/operations/{operation}",
        "run": f"/runs/{second}",
        "compare": f"/compare?runs={second},{group['leader']['digest']}",
        "search": "/?q=qknorm",
        "serving": "/serving",
    }


async def test_title_headings_and_keyboard_reach_every_link(pages, site, page):
    for name, path in pages.items():
        await page.goto(f"{site}{path}")
        assert (await page.title()).endswith("KernelIndex") or "KernelIndex" in await page.title(), name
        levels = await page.evaluate(HEADINGS)
        assert levels[0] == 1 and levels.count(1) == 1, (name, levels)
        assert all(b <= a + 1 for a, b in zip(levels, levels[1:])), (name, levels)
        links = set(await page.evaluate(LINKS))
        reached: set[str] = set()
        for _ in range(await page.evaluate(TAB_STOPS) + 5):  # every Tab stop, and slack
            await page.keyboard.press("Tab")
            href = await page.evaluate("document.activeElement && document.activeElement.href || null")
            if href:
                reached.add(href)
            if reached >= links:
                break
        assert links - reached == set(), (name, sorted(links - reached)[:5])


async def test_json_twins_carry_what_the_pages_show(pages, site, page, graphql):
    http = graphql.http

    home = (await http.get(pages["home"], headers=JSON)).json()
    await page.goto(f"{site}/")
    for op in home["operations"]:
        for group in op["groups"]:
            assert await page.inner_text(f'#operations a[href="/groups/{group["id"]}"]') == group["title"]
    assert await page.eval_on_selector_all("#newest li", "els => els.map(e => e.dataset.digest)") == [r["digest"] for r in home["newest"]]

    board = (await http.get(pages["group"], headers=JSON)).json()
    await page.goto(f"{site}{pages['group']}")
    assert await page.eval_on_selector_all("#leaderboard tbody tr", "els => els.map(e => e.dataset.digest)") == [
        r["digest"] for r in board["runs"]
    ]
    assert await page.locator("td.rank").all_inner_texts() == [f"{'=' if r['tie'] else ''}{r['rank']}" for r in board["runs"]]
    assert await page.inner_text("#size") == str(board["group"]["size"])

    operation = (await http.get(pages["operation"], headers=JSON)).json()
    await page.goto(f"{site}{pages['operation']}")
    assert await page.inner_text("#name") == operation["definition"]["name"]
    assert await page.locator("table.cases tbody tr").count() == sum(w["caseCount"] for w in operation["definition"]["workloads"])
    assert await page.eval_on_selector_all("#groups a[href^='/groups/']", "els => els.map(e => e.getAttribute('href'))") == [
        f"/groups/{g['id']}" for g in operation["definition"]["comparisonGroups"]
    ]

    manifest = (await http.get(pages["run"], headers=JSON)).json()
    await page.goto(f"{site}{pages['run']}")
    # The run's twin is its canonical manifest; the page shows it with its protocol and environment.
    shown = json.loads(await page.text_content("#manifest pre"))
    assert shown["run"] == manifest and list(shown) == ["run", "protocol", "environment"]

    compare = (await http.get(pages["compare"], headers=JSON)).json()
    await page.goto(f"{site}{pages['compare']}")
    # A run published without per-case results (a catalog import) has no geomean of case ratios: "—".
    assert await page.locator("#runs td.geomean").all_inner_texts() == ["—" if g is None else f"{g:.3f}×" for g in compare["geomeanRatio"]]
    assert await page.locator("#cases tbody tr").count() == len(compare["cases"])
    assert (await http.get(pages["compare"], headers=JSON)).headers["content-type"] == "application/json"
