"""The seed record's page has every line of the seed's page (the record page the founders gave
us for submission 37369): "Add a reproduction or note", "Report an issue with this run" (a real, stored, rate-limited report), "Published …", "All results for … →", the JSON
link, and the canonical manifest of run + protocol + environment. Reproductions say what they
measured (GPU, statistic, value, ratio to the run) and are marked when measured elsewhere; notes
from runAddNote are shown. Every assertion here failed on the page before these changes."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from registry.dsse import REPRODUCTION_PREDICATE
from server.bootstrap import bootstrap
from server.settings import Settings
from store.issue_reports import RUN_LIMIT
from store.keys import Scope
from tests.command import kernelindex
from tests.partners.support import ADD_NOTE, SUBMIT, bearer, envelope, key, partner, predicate

DATA = Path(__file__).resolve().parents[2] / "data"


async def _seed(db, mongo_uri) -> str:
    await bootstrap(mongo_uri, Settings(database=db.name), DATA)
    return (await db.runs.find_one({"externalId": "37369"}))["_id"]


@pytest.mark.bundled
async def test_the_seed_page_has_every_line_of_the_seed(bundled_db, site, page):
    db = bundled_db
    digest = (await db.runs.find_one({"externalId": "37369"}))["_id"]
    await page.goto(f"{site}/runs/{digest}")
    text = await page.inner_text("body")
    for line in ("Add a reproduction or note", "Report an issue with this run", "Canonical manifest", "Cite this record"):
        assert line in text, line
    footer = await page.inner_text("#published")
    stored = (await db.runs.find_one({"_id": digest}))["storedAt"]
    assert footer.startswith(f"Published {stored.date().isoformat()} · NVIDIA SOL-ExecBench")
    assert "All results for Attention QKV with QK norm single kernel backward →" in footer
    # The canonical manifest: the run, its protocol and its environment, as the seed shows them.
    await page.click("#manifest summary")
    shown = json.loads(await page.inner_text("#manifest pre"))
    assert list(shown) == ["run", "protocol", "environment"]
    assert shown["run"]["kind"] == "BenchmarkRun" and shown["protocol"]["kind"] == "BenchmarkProtocol"
    assert shown["environment"]["spec"]["hardware"]["product"] == "NVIDIA B200"
    # "Add a reproduction or note" explains the signed path with this run's digest, and links to it.
    how = await page.inner_text("#add-reproduction")
    assert f"kernelindex attest --run {digest}" in how and "runAddNote" in how
    assert (await page.get_attribute("#add-note", "href")).startswith("/graphiql?query=")
    # The JSON link is the run's manifest; "All results for" goes to the operation's page.
    async with httpx.AsyncClient(base_url=site) as http:
        twin = await http.get(f"/runs/{digest}" + await page.get_attribute("#json", "href"))
    assert twin.json() == shown["run"]
    await page.click("#all-results")
    await page.wait_for_url(f"{site}/operations/**")
    assert await page.inner_text("h1") == "Attention QKV with QK norm single kernel backward"


async def test_report_an_issue_is_stored_and_rate_limited(db, mongo_uri, site, page):
    digest = await _seed(db, mongo_uri)
    await page.goto(f"{site}/runs/{digest}")
    await page.click("#report summary")
    await page.select_option("#report-category", "wrong_value")
    await page.fill("#report-text", "The mean does not match the leaderboard's page.")
    await page.click("#report button[type=submit]")
    await page.wait_for_selector("#report-stored")
    assert "your report is stored" in await page.inner_text("#report-stored")
    stored = await db.issue_reports.find({"runDigest": digest}).to_list()
    assert [(r["category"], r["text"], r["reporter"]) for r in stored] == [
        ("wrong_value", "The mean does not match the leaderboard's page.", None)
    ]
    # A reload does not send it again (post/redirect/get).
    await page.reload()
    assert await db.issue_reports.count_documents({"runDigest": digest}) == 1
    # Without a key, RUN_LIMIT reports an hour on one run; the next is refused, and not stored.
    for n in range(RUN_LIMIT - 1):
        await page.goto(f"{site}/runs/{digest}")
        await page.click("#report summary")
        await page.fill("#report-text", f"report {n}")
        await page.click("#report button[type=submit]")
        await page.wait_for_selector("#report-stored")
    await page.goto(f"{site}/runs/{digest}")
    await page.click("#report summary")
    await page.fill("#report-text", "one too many")
    async with page.expect_response(lambda r: r.url.endswith("/report")) as answer:
        await page.click("#report button[type=submit]")
    assert (await answer.value).status == 429
    assert "RATE_LIMITED" in await page.inner_text("#report-error")
    assert await page.input_value("#report-text") == "one too many"  # what was typed is kept
    assert await db.issue_reports.count_documents({"runDigest": digest}) == RUN_LIMIT


async def test_run_report_issue_codes(db, mongo_uri, graphql):
    digest = await _seed(db, mongo_uri)
    from resolvers import ids

    run_id = ids.encode("Run", digest)
    mutation = """mutation($input: RunReportIssueInput!) { runReportIssue(input: $input) {
      report { id category runDigest } userErrors { field message code } } }"""

    async def report(headers=None, **given):
        variables = {"input": {"run": run_id, "category": "other", "text": "x", **given}}
        body = (await graphql.http.post("/graphql", json={"query": mutation, "variables": variables}, headers=headers or {})).json()
        return body["data"]["runReportIssue"]

    assert (await report(category="nonsense"))["userErrors"][0]["code"] == "BAD_USER_INPUT"
    assert (await report(text="   "))["userErrors"][0]["code"] == "BAD_USER_INPUT"
    assert (await report(text="x" * 2001))["userErrors"][0]["code"] == "REPORT_TOO_LONG"
    assert (await report(run=ids.encode("Run", "sha256:" + "0" * 64)))["userErrors"][0]["code"] == "NOT_FOUND"
    assert (await report(headers=bearer("not-a-key")))["userErrors"][0]["code"] == "UNAUTHENTICATED"
    assert await db.issue_reports.count_documents({}) == 0  # no refused report was stored
    reader = await key(db, Scope.reader, name="a-reader")
    done = await report(headers=bearer(reader), text="signed in")
    assert done["userErrors"] == [] and done["report"]["runDigest"] == digest
    assert (await db.issue_reports.find_one({"text": "signed in"}))["reporter"]["name"] == "a-reader"
    # Maintainers read them with the installed command.
    listed = kernelindex("reports", "list", "--run", digest, env={"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name})
    assert listed.returncode == 0, listed.stderr
    assert [line.split("\t")[3:] for line in listed.stdout.splitlines()] == [["other", "a-reader", "signed in"]]


async def test_reproductions_say_what_they_measured_and_notes_are_shown(db, mongo_uri, site, page, graphql):
    digest = await _seed(db, mongo_uri)
    from resolvers import ids

    run_id = ids.encode("Run", digest)
    signer, secret = await partner(db, "my-lab")
    same_gpu = predicate(aggregate={"statistic": "mean", "valueNs": 300_272})  # the run's mean is 333,636 ns
    elsewhere = predicate(
        environment={"gpu": "NVIDIA H200", "architecture": "sm_90", "driver": "580.65", "cuda": "13.0"},
        aggregate={"statistic": "mean", "valueNs": 667_272},
        measuredAt="2026-12-01T11:00:00Z",
    )
    for pred in (same_gpu, elsewhere):
        body = (
            await graphql.http.post(
                "/graphql",
                json={"query": SUBMIT, "variables": {"run": run_id, "envelope": envelope(signer, digest, pred)}},
                headers=bearer(secret),
            )
        ).json()
        assert body["data"]["runSubmitReproduction"]["userErrors"] == [], body
    noted = (
        await graphql.http.post(
            "/graphql", json={"query": ADD_NOTE, "variables": {"run": run_id, "text": "Seen again on our B200s."}}, headers=bearer(secret)
        )
    ).json()
    assert noted["data"]["runAddNote"]["userErrors"] == []

    answer = await graphql(
        """query($id: ID!) { run(id: $id) { attestations { edges { node {
          matchesCohort environment { gpu architecture display } aggregate { statistic valueNs runValueNs ratioToRun } predicateType } } } } }""",
        {"id": run_id},
    )
    nodes = [e["node"] for e in answer["run"]["attestations"]["edges"]]
    assert [n["predicateType"] for n in nodes] == [REPRODUCTION_PREDICATE] * 2
    assert [(n["environment"]["display"], n["matchesCohort"]) for n in nodes] == [
        ("NVIDIA B200 (sm_100)", True),
        ("NVIDIA H200 (sm_90)", False),
    ]
    assert [(n["aggregate"]["statistic"], n["aggregate"]["runValueNs"], round(n["aggregate"]["ratioToRun"], 2)) for n in nodes] == [
        ("mean", 333_636, 0.90),
        ("mean", 333_636, 2.00),
    ]

    await page.goto(f"{site}/runs/{digest}")
    items = await page.locator("#attestations li").all_inner_texts()
    assert len(items) == 2
    assert "NVIDIA B200 (sm_100)" in items[0] and "mean 300.3 µs" in items[0] and "0.90× the run's mean" in items[0]
    assert "not this run's cohort" not in items[0]
    assert "NVIDIA H200 (sm_90)" in items[1] and "mean 667.3 µs" in items[1] and "2.00× the run's mean" in items[1]
    assert "⚠ not this run's cohort: measured on NVIDIA H200 (sm_90), the run on NVIDIA B200 (sm_100)" in items[1]
    assert "not a replication" in items[1]
    notes = await page.locator("#notes li").all_inner_texts()
    assert len(notes) == 1 and notes[0].startswith("Seen again on our B200s.") and "my-lab (partner)" in notes[0]
