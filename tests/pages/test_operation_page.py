"""/operations/{name}: the definition, its suites as a case table, its groups and controlled jobs."""

from store.keys import Scope
from tests.jobs import support

JSON = {"accept": "application/json"}
HTML = {"accept": "text/html"}


async def test_operation_page_lists_suites_groups_and_controlled_jobs(api, db):
    objects = await support.registry_with_controlled_definition(db)
    maintainer = await support.key(db, Scope.maintainer)
    job = (await support.request(api, maintainer, objects))["job"]
    assert job["state"] == "queued"

    twin = (await api.http.get("/operations/controlled-op", headers=JSON)).json()
    definition = twin["definition"]
    assert definition["name"] == "controlled-op" and definition["description"] == "A synthetic operation: y = x + 1."
    assert [(t["name"], t["shape"], t["dtype"]) for t in definition["inputs"]] == [("x", ["n"], "fp32")]
    assert [w["caseCount"] for w in definition["workloads"]] == [3] and definition["cost"] == {}
    assert [(j["implementationName"], j["gpu"], j["state"]) for j in twin["jobs"]] == [("ext", "NVIDIA H200", "queued")]

    page = await api.http.get("/operations/controlled-op", headers=HTML)
    assert page.status_code == 200
    html = page.text
    assert "<title>Synthetic controlled-op · operation · KernelIndex</title>" in html
    assert '<table id="jobs">' in html and "<td>ext</td><td>NVIDIA H200</td><td>queued</td>" in html
    assert html.count('<tr><td class="num">') >= 3  # the suite's three cases
    assert "The definition publishes no FLOPs or bytes formula." in html
