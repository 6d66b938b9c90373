"""`kernelindex search|show|compare|runs|records` as a user runs them (the installed entry point)
against a real `kernelindex serve`: tables by default, `--json` / `--jsonl` in the documented
shape (each the document of the MCP tool of the same question), exit codes 0 / 1 / 2."""

from __future__ import annotations

import json

OP = "kernelindex-051-qkv-qknorm-backward"
RUN_KEYS = {
    "id", "digest", "title", "name", "status", "current", "rank", "evidenceLevel", "observedAt", "publishedAt",
    "primaryMeasurement", "implementation", "environment", "group", "permalink",
}  # fmt: skip


def _ok(done) -> str:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def test_runs_json_jsonl_and_table(stack):
    api = stack.data("query($n: String!) { definition(name: $n) { id } }", {"n": OP})["definition"]["id"]
    expected = stack.data(
        "query($d: ID!) { runs(filter: {definition: $d}, first: 5) { pageInfo { hasNextPage endCursor } nodes { digest } } }", {"d": api}
    )["runs"]
    document = json.loads(_ok(stack.cli("runs", "--operation", OP, "--first", "5", "--json", "--api", stack.url)))
    assert set(document) == {"pageInfo", "runs"} and document["pageInfo"] == expected["pageInfo"]
    assert [r["digest"] for r in document["runs"]] == [n["digest"] for n in expected["nodes"]]
    assert all(set(r) == RUN_KEYS for r in document["runs"])
    assert document["runs"][0]["permalink"] == f"{stack.base}/runs/{document['runs'][0]['digest']}"

    lines = _ok(stack.cli("runs", "--operation", OP, "--first", "5", "--jsonl", "--api", stack.url)).splitlines()
    assert [json.loads(line) for line in lines] == document["runs"]

    page2 = json.loads(
        _ok(
            stack.cli("runs", "--operation", OP, "--first", "5", "--after", expected["pageInfo"]["endCursor"], "--json", "--api", stack.url)
        )
    )
    assert not {r["digest"] for r in page2["runs"]} & {r["digest"] for r in document["runs"]}

    table = _ok(stack.cli("runs", "--operation", OP, "--first", "5", "--api", stack.url))
    assert "5 runs" in table and document["runs"][0]["implementation"]["name"][:20] in table


def test_search_show_compare_records(stack):
    found = json.loads(_ok(stack.cli("search", "qkv", "--json", "--api", stack.url)))
    assert OP in [o["name"] for o in found["operations"]]
    assert OP in _ok(stack.cli("search", "qkv", "--api", stack.url))

    op = json.loads(_ok(stack.cli("show", "operation", OP, "--json", "--api", stack.url)))
    assert op["name"] == OP and op["permalink"].endswith(f"/operations/{OP}")
    group = op["comparisonGroups"][0]
    board = json.loads(_ok(stack.cli("show", "group", group["id"], "--json", "--api", stack.url)))
    first, second = board["runs"]["nodes"][:2]
    assert "leaderboard" in _ok(stack.cli("show", "group", group["id"], "--api", stack.url))
    run = json.loads(_ok(stack.cli("show", "run", first["id"], "--json", "--api", stack.url)))
    assert run["digest"] == first["digest"] and run["citation"]["permalink"] == run["permalink"]

    compared = json.loads(_ok(stack.cli("compare", first["id"], second["id"], "--json", "--api", stack.url)))
    assert compared["sameGroup"] is True and [r["digest"] for r in compared["runs"]] == [first["digest"], second["digest"]]
    assert "same comparison group" in _ok(stack.cli("compare", first["id"], second["id"], "--api", stack.url))

    records = json.loads(_ok(stack.cli("records", "--operation", OP, "--json", "--api", stack.url)))
    assert {r["group"]["id"] for r in records["records"]} == {g["id"] for g in op["comparisonGroups"]}
    changes = [
        json.loads(line) for line in _ok(stack.cli("records", "--changes", "--operation", OP, "--jsonl", "--api", stack.url)).splitlines()
    ]
    api = stack.data("query($n: String!) { recordChanges(operation: $n) { seq } }", {"n": OP})["recordChanges"]
    assert [c["seq"] for c in changes] == [c["seq"] for c in api]


def test_exit_codes(stack):
    missing = stack.cli("show", "operation", "no-such-op", "--api", stack.url)
    assert missing.returncode == 1 and missing.stderr.startswith("error: NOT_FOUND: ") and missing.stdout == ""
    bad_id = stack.cli("show", "run", "not-an-id", "--json", "--api", stack.url)
    assert bad_id.returncode == 2 and bad_id.stderr.startswith("error: BAD_ID: ")
    one = stack.cli("compare", "only-one", "--api", stack.url)
    assert one.returncode == 2 and "between 2 and 8" in one.stderr
    usage = stack.cli("runs", "--json", "--jsonl", "--api", stack.url)
    assert usage.returncode == 2 and "not allowed with" in usage.stderr
    away = stack.cli("runs", "--api", "http://127.0.0.1:9/graphql", "--timeout", "2")
    assert away.returncode == 1 and "cannot reach" in away.stderr and "Traceback" not in away.stderr


def test_serving_json_and_table(stack):
    expected = stack.data('{ servingRuns(filter: {scenario: "offline", round: "v6.0"}, first: 5) { totalCount nodes { digest } } }')[
        "servingRuns"
    ]
    args = ("serving", "--scenario", "offline", "--round", "v6.0", "--first", "5")
    document = json.loads(_ok(stack.cli(*args, "--json", "--api", stack.url)))
    assert document["totalCount"] == expected["totalCount"] == 154
    assert [r["digest"] for r in document["servingRuns"]] == [n["digest"] for n in expected["nodes"]]
    assert not any("rank" in key.lower() for r in document["servingRuns"] for key in r)
    table = _ok(stack.cli(*args, "--api", stack.url))
    # (rich folds long cells such as a digest over lines: the title and a short cell are checked)
    assert "5 of 154 serving runs" in table and table.count("offline") == 5
    bad = stack.cli("serving", "--first", "500", "--api", stack.url)
    assert bad.returncode == 2 and bad.stderr.startswith("error: BAD_USER_INPUT: first:") and "Traceback" not in bad.stderr
