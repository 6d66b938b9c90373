"""Shared fixtures: one real SecantusDB server per test session, a fresh database per test, and
one database of the repository's bundled data (`bundled_db`) for the tests that only read it.

Set MONGODB_URI to run the suite against another MongoDB-compatible server instead. The session's
server logs to `secantusd.log` in pytest's base temporary directory; when it logged an error, the
end of that log is printed after the test summary (its "internal server error" says nothing more).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from asgi_lifespan import LifespanManager
from pymongo.errors import PyMongoError

from server.app import create_app
from server.bootstrap import bootstrap
from server.settings import Settings
from store.client import make_client
from store.embedded import EmbeddedServer, free_port
from store.schema import ensure_schema

DATA = Path(__file__).resolve().parents[1] / "data"
SERVER_LOG = "secantusd.log"
TEST_SERVER_CACHE = "4G"


@pytest.fixture(scope="session")
def mongo_uri(tmp_path_factory):
    if os.environ.get("MONGODB_URI"):
        yield os.environ["MONGODB_URI"]
        return
    log = tmp_path_factory.getbasetemp() / SERVER_LOG
    # In memory, WiredTiger keeps every byte in its cache, the capped oplog (100,000 entries) too:
    # one import of the bundled catalog writes ~43,000 of them, and at the default 1G the third
    # import of a session failed with WT_CACHE_FULL (CI, and reproduced: three bootstraps, each
    # database dropped after). 4G holds the full oplog beside the live data (RSS ~2.5 GB after
    # nine bootstraps at 6G); the cache is a cap, not memory taken up front.
    with EmbeddedServer(":memory:", failpoints=True, log_path=log, cache_size=TEST_SERVER_CACHE) as server:
        yield server.uri


# Tables a test writes into the test output (`report` fixture), printed after the summary.
REPORTS = pytest.StashKey[dict]()


@pytest.fixture
def report(request):
    """`report(title, lines)`: lines shown under `title` after the test summary (counts a test
    measured, e.g. the format conformance by kind)."""

    def write(title: str, lines: list[str]) -> None:
        request.config.stash.setdefault(REPORTS, {})[title] = lines

    return write


def pytest_terminal_summary(terminalreporter, config):
    for title, lines in config.stash.get(REPORTS, {}).items():
        terminalreporter.section(title)
        for line in lines:
            terminalreporter.write_line(line)
    log = Path(str(config._tmp_path_factory.getbasetemp())) / SERVER_LOG if hasattr(config, "_tmp_path_factory") else None
    if log is None or not log.is_file():
        return
    lines = log.read_text(errors="replace").splitlines()
    errors = [line for line in lines if "ERROR" in line or "Traceback" in line]
    if errors:
        terminalreporter.section(f"the test database server logged {len(errors)} error lines ({log}); its last 40 lines")
        for line in lines[-40:]:
            terminalreporter.write_line(line)


@pytest_asyncio.fixture(scope="session")
async def mongo_client(mongo_uri):
    client = make_client(mongo_uri)
    yield client
    await client.close()


@pytest_asyncio.fixture
async def db(mongo_client):
    name = f"test_{uuid.uuid4().hex[:12]}"
    database = mongo_client[name]
    await ensure_schema(database)
    yield database
    await mongo_client.drop_database(name)


@contextlib.asynccontextmanager
async def _in_process_api(mongo_uri: str, database: str):
    """The app, in process (no socket), bound to `database`, as a GraphQLClient."""
    app = create_app(mongo_uri, Settings(database=database, mongodb_uri=mongo_uri))
    async with LifespanManager(app) as manager:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://kernelindex.test") as client:
            yield GraphQLClient(client)


@pytest_asyncio.fixture
async def api(db, mongo_uri):
    async with _in_process_api(mongo_uri, db.name) as client:
        yield client


class GraphQLClient:
    def __init__(self, http: httpx.AsyncClient):
        self.http = http

    async def post(self, query: str, variables: dict | None = None, headers: dict | None = None) -> dict:
        response = await self.http.post("/graphql", json={"query": query, "variables": variables or {}}, headers=headers or {})
        return response.json()

    async def data(self, query: str, variables: dict | None = None, headers: dict | None = None) -> dict:
        body = await self.post(query, variables, headers)
        assert "errors" not in body, body["errors"]
        return body["data"]


@contextlib.contextmanager
def _serving(mongo_uri: str, database: str):
    """The real app on a real uvicorn server (a thread) on a free loopback port, bound to
    `database`; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(mongo_uri, Settings(database=database)), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def live_site(db, mongo_uri):
    """The real app on a real uvicorn server bound to the test's database; yields its base URL."""
    with _serving(mongo_uri, db.name) as url:
        yield url


@pytest_asyncio.fixture(scope="session")
async def bundled_db(mongo_client, mongo_uri):
    """The repository's bundled data (data/: the SOL-ExecBench snapshot, the KernelIndex public
    catalog, our controlled and verified runs) as `serve` loads it, once per session: importing
    the 40,795-row catalog takes a minute or more, and a dozen tests only read it. Tests that write
    take `db` and bootstrap their own."""
    name = f"bundled_{uuid.uuid4().hex[:12]}"
    await bootstrap(mongo_uri, Settings(database=name), DATA)
    yield mongo_client[name]
    # Best effort: a loaded machine may time the drop out, and the session's server goes anyway.
    with contextlib.suppress(PyMongoError):
        await mongo_client.drop_database(name)


@pytest_asyncio.fixture
async def bundled_api(bundled_db, mongo_uri):
    """The GraphQL API over `bundled_db` (in process, as `api`)."""
    async with _in_process_api(mongo_uri, bundled_db.name) as client:
        yield client


@pytest.fixture(scope="session")
def bundled_site(bundled_db, mongo_uri):
    """A real uvicorn server over `bundled_db`; yields its base URL."""
    with _serving(mongo_uri, bundled_db.name) as url:
        yield url


@pytest.fixture(scope="session")
def kernelindex_wheel(tmp_path_factory):
    """The wheel of this tree, built once per session (tests/wheel_build.py)."""
    from tests.wheel_build import build_wheel

    return build_wheel(tmp_path_factory.mktemp("wheel"))
