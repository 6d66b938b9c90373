"""GraphiQL runs from local assets; pages refuse bad input with a message naming the field."""

import pytest

from store.publish import publish_many
from tests import factories

JSON = {"accept": "application/json"}


async def test_graphiql_loads_locally_and_runs_a_query(db, site, page):
    await publish_many(db, [factories.run_bundle("a", user="alice")])
    posts = []
    page.on("response", lambda r: posts.append(r.status) if r.url.endswith("/graphql") and r.request.method == "POST" else None)
    await page.goto(f"{site}/graphiql")
    await page.wait_for_selector(".graphiql-container", timeout=20_000)
    await page.click(".graphiql-execute-button")
    # A locator, not a JavaScript predicate: the page's CSP forbids evaluating strings.
    await page.locator(".result-window", has_text="synthetic-op").wait_for(timeout=20_000)
    assert posts and set(posts) == {200}
    # The page fixture checks that no request left the server under test (no CDN).


@pytest.mark.bundled
async def test_compare_refuses_runs_of_different_workloads(site, page, graphql):
    found = await graphql(
        """{ searchDefinitions(text: "", first: 5) { nodes { comparisonGroups {
        leader { digest title } workload { name } } } } }"""
    )
    every = [g for d in found["searchDefinitions"]["nodes"] for g in d["comparisonGroups"]]
    # the #1s of two groups (of different operations on the first page) that measured different workloads
    groups = [every[0], next(g for g in every if g["workload"]["name"] != every[0]["workload"]["name"])]
    a, b = groups[0]["leader"], groups[1]["leader"]
    response = await page.goto(f"{site}/compare?runs={a['digest']},{b['digest']}")
    assert response.status == 422
    assert await page.inner_text("h1") == "Cannot compare these runs"
    message = await page.inner_text("#error")
    assert message.startswith("runs: these runs measured different workloads")
    assert f"{a['title']} ran {groups[0]['workload']['name']}" in message and f"{b['title']} ran {groups[1]['workload']['name']}" in message


async def test_bad_parameters_are_refused_by_name(db, site, graphql):
    await publish_many(db, [factories.run_bundle("a", user="alice")])
    group = (await graphql("{ definitions(first: 1) { comparisonGroups { id } } }"))["definitions"][0]["comparisonGroups"][0]["id"]
    http = graphql.http
    cases = [
        (f"/compare?runs=sha256:{'0' * 64}", 400, "runs: give two or three run digests"),
        ("/compare?runs=abc,def", 400, "runs: 'abc' is not a run digest"),
        (f"/compare?runs=sha256:{'0' * 64},sha256:{'1' * 64}", 404, f"runs: no run with digest sha256:{'0' * 64}"),
        (f"/groups/{group}?after=not-a-cursor", 400, "after: 'not-a-cursor' is not a valid cursor"),
        ("/?after=not-a-cursor", 400, "after: 'not-a-cursor' is not a valid cursor"),
        ("/?q=" + "x" * 201, 400, "q: 201 characters; at most 200"),
        (f"/groups/{group}?sort=colour", 400, "sort: unknown column 'colour'"),
        ("/groups/bm9wZQ", 404, "No comparison group with ID bm9wZQ."),
        ("/operations/no-such-op", 404, "No operation named no-such-op."),
    ]
    for path, status, message in cases:
        response = await http.get(path, headers=JSON)
        body = response.json()
        assert response.status_code == status, (path, body)
        assert (body.get("detail") or body["error"]).startswith(message), (path, body)
        html = await http.get(path, headers={"accept": "text/html"})
        assert html.status_code == status and "Traceback" not in html.text
