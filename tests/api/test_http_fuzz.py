"""Fuzzing the HTTP layer (beside the Schemathesis fuzzing of operations): whatever bytes a client
POSTs to /graphql, the answer is a 4xx with a coded GraphQL error or a normal answer, never a
500 and never "Unexpected error."."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
# Requests shaped like GraphQL ones, with any member of any type.
REQUESTS = st.fixed_dictionaries(
    {},
    optional={
        "query": st.sampled_from(["{ runs(first: 1) { nodes { digest } } }", "query($id: ID!) { node(id: $id) { id } }", "{"])
        | JSON_VALUES,
        "variables": st.dictionaries(st.sampled_from(["id", "first", "x"]), JSON_VALUES, max_size=3) | JSON_VALUES,
        "operationName": JSON_VALUES,
        "extensions": JSON_VALUES,
    },
)


def _check(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    body = response.json()
    messages = [e.get("message") for e in body.get("errors", [])]
    assert "Unexpected error." not in messages, body
    if response.status_code >= 400:
        assert all(e.get("extensions", {}).get("code") for e in body["errors"]), body


@pytest.mark.parametrize(
    "body, status, code",
    [
        (b"42", 400, "BAD_REQUEST"),
        (b'"s"', 400, "BAD_REQUEST"),
        (b"null", 400, "BAD_REQUEST"),
        (b"true", 400, "BAD_REQUEST"),
        (b"[]", 400, "BAD_REQUEST"),
        (b'{"query": "{ __typename }"}\xff', 400, "BAD_REQUEST"),
        (b'{"query": "\xc3\x28"}', 400, "BAD_REQUEST"),
        (b"[" * 100_000, 400, "BAD_REQUEST"),
        (b'{"query": 5}', 400, "BAD_REQUEST"),
        (b'{"query": ""}', 400, "BAD_REQUEST"),
        (b'{"query": "query A { __typename }", "operationName": "B"}', 400, "BAD_REQUEST"),
        (b'{"query": "{ __typename }", "variables": 3}', 400, "BAD_REQUEST"),
        (b'{"query": "query($id: ID!) { node(id: $id) { id } }", "variables": {"id": "\\ud800"}}', 400, "BAD_USER_INPUT"),
    ],
)
def test_bad_bodies_are_4xx_with_a_code(live_site, body, status, code):
    response = httpx.post(f"{live_site}/graphql", content=body, headers={"content-type": "application/json"}, timeout=30)
    assert response.status_code == status, response.text
    assert response.json()["errors"][0]["extensions"]["code"] == code


def test_a_chunked_body_over_1_mib_is_413(live_site):
    def chunks():
        yield b'{"query": "{ __typename }", "variables": {"pad": "'
        for _ in range(12):
            yield b"x" * 100_000
        yield b'"}}'

    response = httpx.post(f"{live_site}/graphql", content=chunks(), headers={"content-type": "application/json"}, timeout=30)
    assert response.status_code == 413
    assert response.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"
    # The server is fine afterwards.
    assert httpx.post(f"{live_site}/graphql", json={"query": "{ __typename }"}, timeout=30).json() == {"data": {"__typename": "Query"}}


def test_a_chunked_body_under_the_limit_is_answered(live_site):
    def chunks():
        yield b'{"query": "{ __typename }",'
        yield b' "variables": {}}'

    response = httpx.post(f"{live_site}/graphql", content=chunks(), headers={"content-type": "application/json"}, timeout=30)
    assert response.json() == {"data": {"__typename": "Query"}}


def test_fuzzed_bodies_never_break_the_server(live_site):
    client = httpx.Client(base_url=live_site, timeout=30)

    @given(request=REQUESTS | JSON_VALUES, raw=st.binary(max_size=64), as_raw=st.booleans())
    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def check(request, raw, as_raw):
        content = raw if as_raw else json.dumps(request).encode()
        _check(client.post("/graphql", content=content, headers={"content-type": "application/json"}))

    try:
        check()
    finally:
        client.close()
