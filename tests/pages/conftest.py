"""Page tests drive Debian's Chromium headless through Playwright against a real uvicorn server."""

from __future__ import annotations

import shutil
from urllib.parse import urlsplit

import httpx
import pytest
import pytest_asyncio

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/pages/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.slow)
            if CHROMIUM is None:
                item.add_marker(pytest.mark.skip(reason="chromium is not installed (make test installs it)"))


@pytest.fixture
def site(request):
    """The server under test: over the session's bundled data for a test marked `bundled`, else over
    the test's own (empty) database."""
    if request.node.get_closest_marker("bundled"):
        return request.getfixturevalue("bundled_site")
    return request.getfixturevalue("live_site")


@pytest_asyncio.fixture
async def browser():
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        instance = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield instance
        await instance.close()


class Visits:
    """Every URL the page asked for (documents, scripts, styles, fetches, WebSockets)."""

    def __init__(self, page):
        self.urls: list[str] = []
        page.on("request", lambda request: self.urls.append(request.url))
        page.on("websocket", lambda ws: self.urls.append(ws.url))

    def foreign(self, site: str) -> list[str]:
        host = urlsplit(site).netloc
        return [url for url in self.urls if urlsplit(url).netloc != host and not url.startswith(("data:", "about:"))]


@pytest_asyncio.fixture
async def page(browser, site):
    page = await browser.new_page()
    visits = Visits(page)
    page.visits = visits
    yield page
    # Every request any page test made went to the server under test, and nowhere else.
    assert visits.foreign(site) == []
    await page.close()


@pytest_asyncio.fixture
async def graphql(site):
    """The API the pages are built from, asked directly (what a frontend would ask)."""
    async with httpx.AsyncClient(base_url=site, timeout=30) as http:

        async def ask(query: str, variables: dict | None = None) -> dict:
            body = (await http.post("/graphql", json={"query": query, "variables": variables or {}})).json()
            assert "errors" not in body, body
            return body["data"]

        ask.http = http
        yield ask
