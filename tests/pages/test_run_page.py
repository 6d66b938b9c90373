"""The run dossier page in a real headless browser (Debian's Chromium driven by Playwright)."""

import pytest

from store.publish import publish_many
from tests import factories


@pytest.mark.bundled
async def test_seed_run_page_shows_the_record(bundled_db, site, page, tmp_path):
    digest = (await bundled_db.runs.find_one({"externalId": "37369"}))["_id"]
    await page.goto(f"{site}/runs/{digest}")
    assert await page.inner_text("#title") == "Geometric · 051_attention_qkv_with_qk_norm_single_kernel_backward · B200"
    assert (await page.inner_text("#primary")).startswith("333.6 µs")
    assert "Rank 4 of 4 in its comparison group · source-native comparison · observed 2026-08-16" in await page.inner_text("#rank")
    assert await page.inner_text("#summary") == "SOL 0.2851 · 0.46× reference · 2/16 cases faster"
    assert await page.inner_text("#correctness") == "Marked passed by the source; the correctness policy was not published."
    assert await page.inner_text("#gpu") == "NVIDIA B200 (sm_100)"
    assert await page.inner_text("#evidence") == "Reported"
    assert await page.inner_text("#attestations") == "No attestations yet."
    assert not await page.is_visible("#manifest pre")
    await page.click("#manifest summary")  # "Show manifest"
    assert await page.is_visible("#manifest pre") and '"latencyNs"' in await page.inner_text("#manifest pre")
    await page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
    assert (tmp_path / "run.png").stat().st_size > 10_000


async def test_number_one_link_navigates_to_the_leader(db, mongo_uri, site, page):
    outcomes = await publish_many(
        db, [factories.run_bundle("a", score=0.9, user="leader"), factories.run_bundle("b", score=0.2, user="second")]
    )
    await page.goto(f"{site}/runs/{outcomes[1].run_digest}")
    assert "Rank 2 of 2" in await page.inner_text("#rank")
    assert await page.get_attribute("#compare", "href") == f"/compare?runs={outcomes[1].run_digest},{outcomes[0].run_digest}"
    await page.click("#leader a")
    await page.wait_for_url(f"{site}/runs/{outcomes[0].run_digest}")
    assert await page.inner_text("#title") == "leader · synthetic-op · B200"
    assert "Rank 1 of 2" in await page.inner_text("#rank")
    assert await page.inner_text("#leader") == "#1: leader · synthetic-op · B200 (this run)"


async def test_unknown_run_page_is_a_404(site, page):
    response = await page.goto(f"{site}/runs/sha256:{'0' * 64}")
    assert response.status == 404 and "No run with digest" in await page.inner_text("#error")
