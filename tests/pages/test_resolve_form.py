"""The operation page's "Fastest for a shape" form, driven in Chromium: an exact shape lists each
cohort's runs ranked on that case, as resolveKernel answers; an unmeasured one lists the nearest
measured shapes under labels that say they are not the asked shape; bad input is named."""

from tests.resolve_support import seed

ANSWER = """query($axes: [AxisValueInput!]!) { resolveKernel(operation: "synthetic-matmul", axes: $axes, gpu: "NVIDIA B200") {
  exact { runs(first: 5) { runDigest display } } nearest { label } } }"""


async def test_form_resolves_exact_and_unmeasured_shapes(db, site, page, graphql):
    await seed(db)
    await page.goto(f"{site}/operations/synthetic-matmul")
    await page.fill('#resolve input[name="m"]', "4")
    await page.fill('#resolve input[name="n"]', "512")
    await page.select_option('#resolve select[name="gpu"]', "NVIDIA B200")
    await page.click('#resolve button[type="submit"]')
    await page.wait_for_selector("#resolution")
    assert "Measured" in await page.locator("#resolution p").first.inner_text()
    expected = (await graphql(ANSWER, {"axes": [{"name": "m", "value": 4}, {"name": "n", "value": 512}]}))["resolveKernel"]
    rows = page.locator("#resolution table.resolved tbody tr")
    links = [await rows.nth(i).locator("a").get_attribute("href") for i in range(await rows.count())]
    assert links == [f"/runs/{r['runDigest']}" for r in expected["exact"][0]["runs"]]
    assert await rows.nth(0).locator("td").nth(3).inner_text() == expected["exact"][0]["runs"][0]["display"]

    await page.fill('#resolve input[name="n"]', "1000")
    await page.click('#resolve button[type="submit"]')
    await page.wait_for_selector("#resolution h3.nearest")
    assert "Not measured" in await page.locator("#resolution p").first.inner_text()
    near = (await graphql(ANSWER, {"axes": [{"name": "m", "value": 4}, {"name": "n", "value": 1000}]}))["resolveKernel"]
    labels = [await h.inner_text() for h in await page.locator("#resolution h3.nearest").all()]
    assert labels == [n["label"] for n in near["nearest"]] and all("not the asked shape" in label for label in labels)

    await page.goto(f"{site}/operations/synthetic-matmul?resolve=1&m=x&n=0")
    errors = [await e.inner_text() for e in await page.locator("p.error").all()]
    assert errors == ["m: give a whole number of at least 1", "n: give a whole number of at least 1"]
