"""`kernelindex mcp --http`: the MCP SDK's own streamable-HTTP client against the installed entry
point in front of a real `kernelindex serve`. A request without an API key, with a key the stack
does not know, or with a revoked one is refused (401) before any tool runs; with a reader key every
tool is listed and a tool answers as the GraphQL API does."""

from __future__ import annotations

import subprocess
import time

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from store.embedded import free_port
from tests.agents.test_mcp import OP, TOOLS, call
from tests.command import KERNELINDEX

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
}


@pytest.fixture(scope="module")
def mcp_http(stack):
    port = free_port()
    process = subprocess.Popen(
        [KERNELINDEX, "mcp", "--http", "--port", str(port), "--api", stack.url],
        env=stack.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()
        try:
            httpx.get(url, timeout=2)
            break
        except httpx.HTTPError:
            time.sleep(0.3)
    yield url
    process.terminate()
    process.wait(timeout=30)


def _key(stack, name: str) -> tuple[str, str]:
    created = stack.cli("keys", "create", "--name", name, "--scope", "reader")
    assert created.returncode == 0, created.stderr
    key_id = created.stderr.split(" key ")[1].split()[0]
    return created.stdout.strip(), key_id


def _client(url: str, secret: str | None) -> Client:
    headers = {"Authorization": f"Bearer {secret}"} if secret else None
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)))


def _post(url: str, secret: str | None) -> httpx.Response:
    headers = {"accept": "application/json, text/event-stream", **({"authorization": f"Bearer {secret}"} if secret else {})}
    return httpx.post(url, json=INITIALIZE, headers=headers, timeout=30)


async def test_a_reader_key_lists_and_calls_the_tools(stack, mcp_http):
    secret, _ = _key(stack, "mcp-http-reader")
    async with _client(mcp_http, secret) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        found = await call(client, "get_operation", name=OP)
    expected = stack.data("query($n: String!) { definition(name: $n) { id name title } }", {"n": OP})["definition"]
    assert {k: found[k] for k in ("id", "name", "title")} == expected


async def test_without_a_valid_key_nothing_is_served(stack, mcp_http):
    for secret in (None, "not-a-key-of-this-stack"):
        response = _post(mcp_http, secret)
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"].lower().startswith("bearer")
    # the SDK's client without a key gets no session
    with pytest.raises(Exception):  # noqa: B017 (the SDK raises its transport's HTTP error, wrapped in a group)
        async with _client(mcp_http, None) as client:
            await client.list_tools()
    # a revoked key (never accepted here before, so not remembered) is refused
    secret, key_id = _key(stack, "mcp-http-revoked")
    assert stack.cli("keys", "revoke", key_id).returncode == 0
    assert _post(mcp_http, secret).status_code == 401
