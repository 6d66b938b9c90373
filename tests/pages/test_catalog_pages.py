"""A fresh stack as `make serve` starts it shows the real KernelIndex catalog: the home page, a GPU
MODE board, a FlashInfer-Bench operation, and the 051 B200 cohort of SOL-ExecBench with its
provenance; a restart imports nothing again."""

from __future__ import annotations

import shutil

import pytest

from tests.federation.test_stack import Stack
from tests.pages.conftest import Visits

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

RUN = """query($id: String!) { runByExternalId(source: "sol-execbench", externalId: $id) {
  digest rank group { key size catalogRuns leader { digest } } provenance { exportFile source attribution }
  identity { workloadDigest implementationDigest } } }"""
DEFINITION = """query($name: String!) { definition(name: $name) { name title comparisonGroups { id title size } } }"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    started = Stack(tmp_path_factory.mktemp("catalog-stack") / "home").wait_ready()  # the bundled data
    yield started
    started.stop()


def data(stack: Stack, query: str, variables: dict) -> dict:
    body = stack.post(query, variables)
    assert "errors" not in body, body
    return body["data"]


async def test_the_home_page_lists_the_catalogs_operations(stack, browser):
    site = f"http://127.0.0.1:{stack.port}"
    page = await browser.new_page()
    visits = Visits(page)
    await page.goto(f"{site}/?q=gqa paged decode")
    titles = await page.locator("#operations h3").all_inner_texts()
    assert any("gqa_paged_decode" in t for t in titles), (await page.content())[:4000] + stack.output()[-3000:]
    assert visits.foreign(site) == []


async def test_a_gpu_mode_board_ranks_the_catalogs_submissions(stack, browser):
    site = f"http://127.0.0.1:{stack.port}"
    definition = data(stack, DEFINITION, {"name": "gpumode-fp8-quant"})["definition"]
    group = max(definition["comparisonGroups"], key=lambda g: g["size"])
    assert group["size"] > 1
    page = await browser.new_page()
    await page.goto(f"{site}/groups/{group['id']}")
    rows = await page.locator("#leaderboard tbody tr").count()
    assert rows == min(group["size"], 50)
    assert await page.locator("#leaderboard tbody tr:first-child td:first-child").inner_text() == "1"
    await page.click("#leaderboard tbody tr:first-child a[href^='/runs/']")
    await page.wait_for_url(f"{site}/runs/**")
    provenance = await page.inner_text("#provenance")
    assert "catalog-2026-08-16-0022af0b.jsonl.zst" in provenance and "attribution: GPU Mode and the KernelBot dataset" in provenance


async def test_a_flashinfer_bench_operation(stack, browser):
    site = f"http://127.0.0.1:{stack.port}"
    page = await browser.new_page()
    await page.goto(f"{site}/operations/gemm-fp4-fp8-n2048-k2048")
    assert "gemm_fp4_fp8_n2048_k2048" in await page.inner_text("#title")
    assert "FlashInfer" in await page.inner_text("#groups") or await page.locator("#groups a[href^='/groups/']").count() >= 1


async def test_the_051_b200_cohort_and_its_page(stack, browser):
    site = f"http://127.0.0.1:{stack.port}"
    runs = {external: data(stack, RUN, {"id": external})["runByExternalId"] for external in ("32664", "32555", "33003", "37369")}
    keys = {run["group"]["key"] for run in runs.values()}
    assert len(keys) == 1  # one cohort: the seed record (our SOL-ExecBench importer) beside the catalog's three
    cohort = runs["32664"]["group"]
    assert (cohort["catalogRuns"], cohort["size"]) == (3, 4)
    # The seed page's identity (tests/fixtures/run-record-37369.txt): run, comparison key, and its
    # manifest block's workload and implementation.
    seed = runs["37369"]
    assert seed["digest"].startswith("sha256:3c2100b045792938b030dc9")
    assert seed["group"]["key"].startswith("sha256:407b8c453f0c0ea5")
    assert seed["identity"] == {
        "workloadDigest": "sha256:f391b6616becb7df06e483a3a561c67e7449af3b30e990939dcb02e8a25e4acf",
        "implementationDigest": "sha256:aab8eded4cabe3c7f9ddb694c9a1ee88bc02ffd533450462d331dab0820b610c",
    }
    assert seed["provenance"] == []  # not from the catalog: the bundled SOL-ExecBench snapshot
    # Ranked by SOL-ExecBench's own score among the four held here (the seed, with its whole board, says 50).
    assert {external: run["rank"] for external, run in runs.items()} == {"32664": 1, "32555": 2, "33003": 3, "37369": 4}
    assert cohort["leader"]["digest"] == runs["32664"]["digest"]
    assert runs["32664"]["provenance"][0]["source"] == "sol-execbench"
    page = await browser.new_page()
    await page.goto(f"{site}/runs/{runs['32664']['digest']}")
    text = await page.inner_text("#cohort-size")
    assert f"{cohort['size']} runs in this cohort, {cohort['catalogRuns']} of them from the bundled KernelIndex catalog" == text
    assert "original source NVIDIA SOL-ExecBench" in await page.inner_text("#provenance")


def test_a_restart_imports_nothing(stack):
    before = data(stack, "{ runs(first: 1) { edges { node { digest } } } }", {})
    stack.stop()
    again = Stack(stack.home).wait_ready()
    try:
        assert data(again, "{ runs(first: 1) { edges { node { digest } } } }", {}) == before
    finally:
        again.stop()
