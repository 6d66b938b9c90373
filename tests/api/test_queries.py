"""The read API over HTTP through the real ASGI app and a real database."""

import base64
from datetime import UTC, datetime

from registry.digest import manifest_digest
from resolvers import ids
from store import queries
from store.publish import manifest_document, publish_many
from tests import factories

RUN_FIELDS = """
  id digest title rank status evidenceLevel current
  primaryMeasurement { statistic valueNs display }
  group { id size rankedSize leader { digest rank } }
  protocol { harness { name version } }
  environment { gpu { display } }
"""


async def _publish(db, n, **kw):
    bundles = [factories.run_bundle(str(i), score=round(i / (n + 1), 6), user=f"user{i}", **kw) for i in range(n)]
    return await publish_many(db, bundles)


async def test_run_by_id_and_by_external_id(api, db):
    outcomes = await _publish(db, 3)
    digest = outcomes[2].run_digest
    data = await api.data(
        'query($id: ID!) { run(id: $id) { %s } runByExternalId(source: "synthetic-bench", externalId: "2") { digest } }' % RUN_FIELDS,
        {"id": ids.encode("Run", digest)},
    )
    run = data["run"]
    assert run["digest"] == digest == data["runByExternalId"]["digest"]
    assert run["rank"] == 1 and run["group"]["size"] == 3 and run["group"]["leader"]["digest"] == digest
    assert run["primaryMeasurement"] == {"statistic": "mean", "valueNs": 100000, "display": "100.0 µs"}
    assert run["environment"]["gpu"]["display"] == "NVIDIA B200 (sm_100)"
    assert run["evidenceLevel"] == "REPORTED"


async def test_node_and_nodes(api, db):
    outcomes = await _publish(db, 2)
    bundle = factories.run_bundle("0", score=0.0, user="user0")
    wanted = [
        ids.encode("Run", outcomes[0].run_digest),
        ids.encode("Definition", manifest_digest(bundle.definition)),
        ids.encode("Protocol", manifest_digest(bundle.protocol)),
        ids.encode("Run", "sha256:" + "0" * 64),
    ]
    data = await api.data(
        'query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } node(id: "%s") { ... on Definition { name } } }' % wanted[1],
        {"ids": wanted},
    )
    assert [n and n["__typename"] for n in data["nodes"]] == ["Run", "Definition", "Protocol", None]
    assert data["nodes"][0]["id"] == wanted[0]
    assert data["node"] == {"name": "synthetic-op"}


async def test_bad_global_id_is_a_clear_error(api, db):
    body = await api.post('{ node(id: "not-an-id") { id } }')
    assert body["errors"][0]["extensions"]["code"] == "BAD_ID"
    assert "not a valid ID" in body["errors"][0]["message"]
    wrong_type = ids.encode("Definition", "sha256:" + "1" * 64)
    body = await api.post("query($id: ID!) { run(id: $id) { id } }", {"id": wrong_type})
    assert "expected a Run ID" in body["errors"][0]["message"]
    forged = base64.urlsafe_b64encode(b"Secret:x").decode()
    body = await api.post("query($id: ID!) { node(id: $id) { id } }", {"id": forged})
    assert body["errors"][0]["extensions"]["code"] == "BAD_ID"


async def test_keyset_pagination_walks_every_run_once(api, db):
    await _publish(db, 7)
    seen, after = [], None
    while True:
        data = await api.data(
            "query($after: String) { runs(first: 3, after: $after) { edges { cursor node { digest } } pageInfo { hasNextPage endCursor } } }",
            {"after": after},
        )
        page = data["runs"]
        seen += [e["node"]["digest"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert len(seen) == 7 == len(set(seen))


async def test_runs_filters(api, db):
    await _publish(db, 3)
    await publish_many(db, [factories.run_bundle("h", env=factories.environment("NVIDIA H200", "sm_90"))])
    await publish_many(db, [factories.run_bundle("bad", status="failed", user="zed")])
    q = "query($f: RunFilter) { runs(filter: $f, first: 50) { edges { node { status environment { gpu { product } } } } } }"
    h200 = await api.data(q, {"f": {"gpu": "NVIDIA H200"}})
    assert [e["node"]["environment"]["gpu"]["product"] for e in h200["runs"]["edges"]] == ["NVIDIA H200"]
    failed = await api.data(q, {"f": {"status": "failed"}})
    assert len(failed["runs"]["edges"]) == 1
    reported = await api.data(q, {"f": {"evidenceLevel": "REPORTED", "source": "synthetic-bench"}})
    assert len(reported["runs"]["edges"]) == 5
    definition_id = ids.encode("Definition", manifest_digest(factories.definition()))
    by_def = await api.data(q, {"f": {"definition": definition_id}})
    assert len(by_def["runs"]["edges"]) == 5


async def test_superseded_runs_hidden_unless_asked(api, db):
    await publish_many(db, [factories.run_bundle("9", score=0.1)])
    await publish_many(db, [factories.run_bundle("9", score=0.2)])
    q = "query($f: RunFilter) { runs(filter: $f) { edges { node { current supersedes { digest } supersededBy { digest } } } } }"
    current = (await api.data(q))["runs"]["edges"]
    assert len(current) == 1 and current[0]["node"]["supersedes"] is not None
    everything = (await api.data(q, {"f": {"includeSuperseded": True}}))["runs"]["edges"]
    assert sorted(e["node"]["current"] for e in everything) == [False, True]


async def test_group_runs_best_first_and_unranked_last(api, db):
    await publish_many(
        db,
        [
            factories.run_bundle("a", score=0.2, user="a"),
            factories.run_bundle("b", score=0.9, user="b"),
            factories.run_bundle("c", score=0.5, user="c", status="incorrect"),
            factories.run_bundle("d", score=0.5, user="d"),
        ],
    )
    data = await api.data("{ runs(first: 1) { edges { node { group { id } } } } }")
    group_id = data["runs"]["edges"][0]["node"]["group"]["id"]
    names, after = [], None
    while True:
        page = (
            await api.data(
                "query($id: ID!, $after: String) { comparisonGroup(id: $id) { runs(first: 2, after: $after) { edges { node { rank sourceNative { externalId } } } pageInfo { hasNextPage endCursor } } } }",
                {"id": group_id, "after": after},
            )
        )["comparisonGroup"]["runs"]
        names += [(e["node"]["sourceNative"]["externalId"], e["node"]["rank"]) for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert names == [("b", 1), ("d", 2), ("a", 3), ("c", None)]


async def test_definitions_and_their_groups(api, db):
    await _publish(db, 2)
    data = await api.data(
        '{ definitions(first: 50) { name workloads { caseCount } comparisonGroups { size title } } definition(name: "synthetic-op") { inputs { name shape dtype } } }'
    )
    assert data["definitions"] == [
        {"name": "synthetic-op", "workloads": [{"caseCount": 3}], "comparisonGroups": [{"size": 2, "title": "SOL-ExecBench v1.1 · B200"}]}
    ]
    assert data["definition"]["inputs"] == [{"name": "x", "shape": ["n"], "dtype": "float32"}]
    body = await api.post("{ definition { name } }")
    assert "exactly one of id or name" in body["errors"][0]["message"]


async def test_a_sparse_filter_finds_old_runs_beyond_the_first_window(api, db):
    await publish_many(db, [factories.run_bundle("old-h200", env=factories.environment("NVIDIA H200", "sm_90"))])
    await publish_many(db, [factories.run_bundle(f"b{i}", score=i / 1000, user=f"u{i}") for i in range(600)])
    q = "query($f: RunFilter) { runs(filter: $f, first: 5) { edges { node { sourceNative { externalId } } } pageInfo { hasNextPage } } }"
    page = (await api.data(q, {"f": {"gpu": "NVIDIA H200"}}))["runs"]
    assert [e["node"]["sourceNative"]["externalId"] for e in page["edges"]] == ["old-h200"]
    assert page["pageInfo"]["hasNextPage"] is False


async def test_group_paging_matches_a_full_sort_with_ties_unranked_and_superseded_runs(api, db):
    # 40 runs: scores in 7 tied bands, every fifth unranked (incorrect), five corrected (their
    # old versions keep the group key but are not current). Pages of every size must list exactly
    # the current runs, ordered by (rank, publication), unranked last, each once.
    bundles = [
        factories.run_bundle(f"r{i}", score=(i % 7) / 10, user=f"u{i}", status="incorrect" if i % 5 == 0 else "passed") for i in range(40)
    ]
    await publish_many(db, bundles[:20])
    await publish_many(db, bundles[20:])
    await publish_many(db, [factories.run_bundle(f"r{i}", score=0.65, user=f"u{i}") for i in (3, 11, 12, 25, 38)])
    current = await db.runs.find({"current": True}).to_list()
    expected = [(d["externalId"], d.get("rank")) for d in sorted(current, key=lambda d: (d["rank"] is None, d["rank"] or 0, d["seq"]))]
    assert len(expected) == 40 and sum(rank is None for _, rank in expected) == 7  # r25 was corrected to passed
    assert len({rank for _, rank in expected}) < 20  # ties really happen
    group_id = (await api.data("{ runs(first: 1) { edges { node { group { id } } } } }"))["runs"]["edges"][0]["node"]["group"]["id"]
    for first in (1, 3, 7, 50):
        seen, after = [], None
        while True:
            page = (
                await api.data(
                    "query($id: ID!, $first: Int!, $after: String) { comparisonGroup(id: $id) { runs(first: $first, after: $after) { edges { node { rank current sourceNative { externalId } } } pageInfo { hasNextPage endCursor } } } }",
                    {"id": group_id, "first": first, "after": after},
                )
            )["comparisonGroup"]["runs"]
            assert all(e["node"]["current"] for e in page["edges"])
            seen += [(e["node"]["sourceNative"]["externalId"], e["node"]["rank"]) for e in page["edges"]]
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        assert seen == expected, first


async def test_search_definitions_pages_by_name_and_counts_every_match(api, db):
    names = ["attn.fwd", "attn_bwd", "gemm-fp8", "attention-decode", "rmsnorm"]
    for i, name in enumerate(names):
        await publish_many(db, [factories.run_bundle(f"s{i}", defn=factories.definition(name))])
    q = "query($t: String!, $f: Int!, $a: String) { searchDefinitions(text: $t, first: $f, after: $a) { totalCount nodes { name } pageInfo { hasNextPage endCursor } } }"

    async def every_page(text: str, first: int) -> tuple[list[str], set[int]]:
        seen, totals, after = [], set(), None
        while True:
            page = (await api.data(q, {"t": text, "f": first, "a": after}))["searchDefinitions"]
            seen += [n["name"] for n in page["nodes"]]
            totals.add(page["totalCount"])
            if not page["pageInfo"]["hasNextPage"]:
                return seen, totals
            after = page["pageInfo"]["endCursor"]

    assert await every_page("", 2) == (sorted(names), {5})
    assert await every_page("ATTN", 1) == (["attn.fwd", "attn_bwd"], {2})
    # every word must match, in the name or the title ("Synthetic <name>")
    assert await every_page("synthetic att", 10) == (["attention-decode", "attn.fwd", "attn_bwd"], {3})
    # the text is matched literally, never as a pattern
    assert await every_page("n.f", 10) == (["attn.fwd"], {1})
    assert await every_page(".*", 10) == ([], {0})
    body = await api.post(q, {"t": "x" * 201, "f": 5, "a": None})
    assert body["errors"][0]["message"] == "text: 201 characters; at most 200"
    runs_cursor = (await api.data("{ runs(first: 1) { pageInfo { endCursor } } }"))["runs"]["pageInfo"]["endCursor"]
    body = await api.post(q, {"t": "", "f": 5, "a": runs_cursor})
    assert "is a cursor of runs, not of this list (definitions)" in body["errors"][0]["message"]


async def test_search_definitions_sees_each_new_definition_and_group(api, db):
    """The listing behind searchDefinitions is kept between requests (store/queries.py): a
    definition, or a GPU of a new group, published after one search is in the next."""
    q = "query($t: String!) { searchDefinitions(text: $t, first: 50) { totalCount nodes { name } } }"
    await publish_many(db, [factories.run_bundle("n0", defn=factories.definition("op-one"))])
    assert (await api.data(q, {"t": ""}))["searchDefinitions"] == {"totalCount": 1, "nodes": [{"name": "op-one"}]}
    assert (await api.data(q, {"t": "h200"}))["searchDefinitions"]["totalCount"] == 0
    await publish_many(db, [factories.run_bundle("n1", defn=factories.definition("op-two"))])
    await publish_many(
        db, [factories.run_bundle("n2", defn=factories.definition("op-one"), env=factories.environment("NVIDIA H200", "sm_90"))]
    )
    found = (await api.data(q, {"t": ""}))["searchDefinitions"]
    assert found == {"totalCount": 2, "nodes": [{"name": "op-one"}, {"name": "op-two"}]}
    assert (await api.data(q, {"t": "h200 one"}))["searchDefinitions"] == {"totalCount": 1, "nodes": [{"name": "op-one"}]}


async def test_search_definitions_recounts_after_a_writer_killed_mid_way(api, db, monkeypatch):
    """A definition stored by a writer killed before it raised the definitions' number (here: the
    document inserted straight) is found once the kept listing is recounted (every RECOUNT_S)."""
    q = '{ searchDefinitions(text: "", first: 50) { totalCount nodes { name } } }'
    monkeypatch.setattr(queries, "RECOUNT_S", 3600.0)
    await publish_many(db, [factories.run_bundle("k0", defn=factories.definition("op-kept"))])
    assert (await api.data(q))["searchDefinitions"]["totalCount"] == 1
    lone = factories.definition("op-lone")
    await db.definitions.insert_one(manifest_document(lone, manifest_digest(lone), datetime.now(UTC)))
    assert (await api.data(q))["searchDefinitions"]["totalCount"] == 1  # the number did not move
    monkeypatch.setattr(queries, "RECOUNT_S", 0.0)
    found = (await api.data(q))["searchDefinitions"]
    assert found == {"totalCount": 2, "nodes": [{"name": "op-kept"}, {"name": "op-lone"}]}
