"""Record history: ComparisonGroup.records and recordChanges, written with each change of #1
(synthetic runs: tests only). Each cause happens once, in the order a group lives them."""

from store.publish import publish
from tests import factories

RECORDS = """query($id: ID!) { comparisonGroup(id: $id) { records { seq at cause runDigest previousDigest
  run { digest current } previous { digest } group { id } } } }"""
CHANGES = """query($since: DateTime, $op: String) { recordChanges(first: 10, since: $since, operation: $op) {
  seq cause runDigest group { id } } }"""


async def test_each_cause_is_recorded_in_order(api, db):
    a = await publish(db, factories.run_bundle("a", score=0.5, user="a"))
    group_id = (await api.data('{ runByExternalId(source: "synthetic-bench", externalId: "a") { group { id } } }'))["runByExternalId"][
        "group"
    ]["id"]
    b = await publish(db, factories.run_bundle("b", score=0.8, user="b"))  # better: a new run takes #1
    await publish(db, factories.run_bundle("c", score=0.1, user="c"))  # worse: no record
    b2 = await publish(db, factories.run_bundle("b", score=0.9, user="b"))  # b corrected, still #1
    b3 = await publish(db, factories.run_bundle("b", score=0.2, user="b"))  # b corrected below a: a is #1 again
    a2 = await publish(db, factories.run_bundle("a", score=0.5, user="a", status="failed"))  # a withdrawn: b3 is #1

    records = (await api.data(RECORDS, {"id": group_id}))["comparisonGroup"]["records"]
    assert [(r["cause"], r["runDigest"], r["previousDigest"]) for r in records] == [
        ("NEW_RUN", a.run_digest, None),
        ("NEW_RUN", b.run_digest, a.run_digest),
        ("CORRECTION", b2.run_digest, b.run_digest),
        ("SUPERSESSION", a.run_digest, b2.run_digest),
        ("RETRACTION", b3.run_digest, a.run_digest),
    ]
    assert [r["seq"] for r in records] == sorted(r["seq"] for r in records)
    assert records[-1]["run"] == {"digest": b3.run_digest, "current": True} and records[1]["previous"] == {"digest": a.run_digest}
    assert a2.run_digest not in {r["runDigest"] for r in records}

    changes = (await api.data(CHANGES, {"op": "synthetic-op"}))["recordChanges"]
    assert [c["seq"] for c in changes] == sorted((r["seq"] for r in records), reverse=True)
    assert all(c["group"]["id"] == group_id for c in changes)
    # Changes after the correction's time: the two after it (each publish is its own transaction, milliseconds apart).
    later = (await api.data(CHANGES, {"since": records[2]["at"]}))["recordChanges"]
    assert [c["seq"] for c in later] == [records[4]["seq"], records[3]["seq"]]
    body = await api.post(CHANGES, {"op": "no-such-op"})
    assert body["errors"][0]["extensions"]["code"] == "NOT_FOUND"


async def _history(db):
    """Three changes of #1 in one group, and one run in another operation's group."""
    a = await publish(db, factories.run_bundle("a", score=0.5, user="a"))
    b = await publish(db, factories.run_bundle("b", score=0.8, user="b"))
    b2 = await publish(db, factories.run_bundle("b", score=0.9, user="b"))
    other = factories.definition("synthetic-other")
    o = await publish(db, factories.run_bundle("o", score=0.4, user="o", defn=other))
    return a, b, b2, o


async def test_group_page_draws_the_staircase_and_lists_each_change(api, db):
    a, b, b2, _ = await _history(db)
    group_id = (await api.data('{ runByExternalId(source: "synthetic-bench", externalId: "a") { group { id } } }'))["runByExternalId"][
        "group"
    ]["id"]
    html = (await api.http.get(f"/groups/{group_id}", headers={"accept": "text/html"})).text
    assert html.count('<circle class="step"') == 3 and 'class="chart staircase"' in html
    rows = html.split('<table id="record-changes">')[1].split("</table>")[0]
    assert [cause in rows for cause in ("new run", "correction")] == [True, True]
    assert rows.index(a.run_digest) < rows.index(b.run_digest) < rows.index(b2.run_digest)
    twin = (await api.http.get(f"/groups/{group_id}", headers={"accept": "application/json"})).json()
    assert [r["cause"] for r in twin["group"]["records"]] == ["NEW_RUN", "NEW_RUN", "CORRECTION"]


async def test_atom_feeds_parse_and_narrow(api, db):
    import feedparser

    a, b, b2, o = await _history(db)
    response = await api.http.get("/records/feed.xml")
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/atom+xml")
    feed = feedparser.parse(response.content)
    assert feed.bozo == 0 and feed.version == "atom10"
    assert feed.feed.title == "KernelIndex records" and feed.feed.links[0]["rel"] == "self"
    # Newest first: the other operation's first run, then b's correction, b, a.
    assert [e.link.rsplit("/", 1)[1] for e in feed.entries] == [o.run_digest, b2.run_digest, b.run_digest, a.run_digest]
    assert "(correction)" in feed.entries[1].title and feed.entries[1].tags[0]["term"] == "correction"
    assert all(e.id.startswith("tag:kernelindex.dev,2026:record:") and e.updated_parsed for e in feed.entries)
    assert len({e.id for e in feed.entries}) == 4

    one = feedparser.parse((await api.http.get("/records/feed.xml", params={"operation": "synthetic-other"})).content)
    assert one.bozo == 0 and [e.link.rsplit("/", 1)[1] for e in one.entries] == [o.run_digest]
    group_id = (await api.data('{ runByExternalId(source: "synthetic-bench", externalId: "a") { group { id } } }'))["runByExternalId"][
        "group"
    ]["id"]
    cohort = feedparser.parse((await api.http.get("/records/feed.xml", params={"group": group_id})).content)
    assert cohort.bozo == 0 and len(cohort.entries) == 3 and cohort.feed.title.startswith("KernelIndex records · ")
    assert (await api.http.get("/records/feed.xml", params={"operation": "nope"})).status_code == 404
    assert (await api.http.get("/records/feed.xml", params={"group": "not-an-id"})).status_code == 404
