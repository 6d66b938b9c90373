"""`definitions` through Hive Gateway with the bundled catalog (449 operations): counted as the
list it answers, so the issue's 5.7 MB `{ definitions { workloads { manifest } } }` is refused
before it runs, at the gateway and at the subgraph, while a page of it is answered."""

from __future__ import annotations

import httpx


def test_every_workload_manifest_of_every_definition_is_refused_a_slice_is_answered(stack):
    body = httpx.post(stack.url, json={"query": "{ definitions { workloads { manifest } } }"}, timeout=60).json()
    assert body.get("data") is None and body["errors"][0]["extensions"]["code"] == "COST_LIMIT", body
    names = stack.data("{ definitions { name } }")["definitions"]
    assert len(names) >= 449
    page = stack.data("{ definitions(first: 3) { name workloads { digest } } }")["definitions"]
    assert [d["name"] for d in page] == [d["name"] for d in names[:3]]
