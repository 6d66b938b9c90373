"""One `kernelindex serve` (the installed entry point, bundled data, like `make serve`) for the
tests of the agents' and machines' surfaces: MCP, the reading CLI, feeds."""

from __future__ import annotations

import shutil

import pytest

from tests.serving import ServedStack


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/agents/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.slow)
            if shutil.which("node") is None:
                item.add_marker(pytest.mark.skip(reason="node is not installed (the stack runs Hive Gateway)"))


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    home = tmp_path_factory.mktemp("agents-stack") / "home"
    started = ServedStack(home, public_url=True).wait_ready()  # permalinks name this stack
    yield started
    started.stop()
