"""`benchmarkJobs` pages on a unique key: jobs created within one millisecond are each listed
exactly once when paged through with `first: 2`."""

from datetime import UTC, datetime

from store.keys import Scope
from tests.jobs import support

JOBS = """query($first: Int!, $after: String, $filter: BenchmarkJobFilter) {
  benchmarkJobs(first: $first, after: $after, filter: $filter) {
    edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }"""


async def _all_pages(api, first: int, **variables) -> list[list[str]]:
    pages, after = [], None
    while True:
        page = (await api.data(JOBS, {"first": first, "after": after, **variables}))["benchmarkJobs"]
        pages.append([edge["node"]["id"] for edge in page["edges"]])
        if not page["pageInfo"]["hasNextPage"]:
            return pages
        after = page["pageInfo"]["endCursor"]


async def test_jobs_of_one_millisecond_are_each_paged_once(api, db):
    objects = await support.registry_with_controlled_definition(db)
    maintainer = await support.key(db, Scope.maintainer)
    made = [(await support.request(api, maintainer, objects, idem=f"k{i}"))["job"]["id"] for i in range(7)]
    # Seven jobs stamped with one instant, as a burst of requests inside one millisecond is.
    instant = datetime(2026, 12, 1, 12, 0, 0, 123000, tzinfo=UTC)
    await db.jobs.update_many({}, {"$set": {"createdAt": instant}})
    newer = (await support.request(api, maintainer, objects, idem="later"))["job"]["id"]

    pages = await _all_pages(api, 2)
    listed = [job for page in pages for job in page]
    assert [len(page) for page in pages] == [2, 2, 2, 2]
    assert listed[0] == newer  # newest first
    assert sorted(listed) == sorted([*made, newer]) and len(set(listed)) == 8


async def test_a_filtered_listing_pages_the_same_way(api, db):
    objects = await support.registry_with_controlled_definition(db)
    maintainer = await support.key(db, Scope.maintainer)
    made = [(await support.request(api, maintainer, objects, idem=f"k{i}"))["job"]["id"] for i in range(5)]
    await db.jobs.update_many({}, {"$set": {"createdAt": datetime(2026, 12, 1, tzinfo=UTC)}})
    pages = await _all_pages(api, 2, filter={"state": "queued"})
    assert sorted(job for page in pages for job in page) == sorted(made)


async def test_a_bad_cursor_is_named(api, db):
    body = await api.post(JOBS, {"first": 2, "after": "not a cursor"})
    assert body["errors"][0]["message"].startswith("after: 'not a cursor' is not a valid cursor")
