"""`kernelindex mcp` as an agent uses it: the MCP SDK's own client starts the installed entry point
as a real stdio process against a real `kernelindex serve` (bundled data), lists every tool and
calls each one; each answer is checked against the GraphQL API's answer for the same question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from loaders.manifest_files import read_documents
from registry.dsse import private_pem, public_pem
from registry.format import EXAMPLES_DIR, format_digest, parse_format_manifest, schema_of
from tests.command import KERNELINDEX
from tests.partners import support

OP = "kernelindex-051-qkv-qknorm-backward"
TOOLS = {
    "search",
    "resolve_kernel",
    "resolve_kernels",
    "get_operation",
    "get_implementation",
    "get_run",
    "compare_runs",
    "list_runs",
    "list_serving_runs",
    "list_records",
    "list_record_changes",
    "get_group",
    "list_gpus",
    "validate_manifest",
    "get_schema",
    "verify_attestation",
    "list_reruns",
}


def connect(stack) -> Client:
    """The SDK's client, starting `kernelindex mcp` as a stdio child (entered inside each test:
    anyio's task groups must be left in the task that entered them)."""
    return Client(StdioServerParameters(command=KERNELINDEX, args=["mcp", "--api", stack.url], env={"KERNELINDEX_HOME": str(stack.home)}))


async def call(client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    # One JSON document: the structured content, and the same as text.
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def refused(client, tool: str, **arguments) -> dict:
    with pytest.raises(MCPError) as caught:
        await client.call_tool(tool, arguments)
    return {"rpc": caught.value.error.code, "message": caught.value.error.message, **(caught.value.error.data or {})}


async def test_every_tool_is_listed_read_only_with_a_schema(stack):
    async with connect(stack) as mcp:
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
        assert TOOLS <= set(tools)
        for tool in tools.values():
            assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False
            assert tool.description and tool.input_schema["type"] == "object"


async def test_search_operation_group_and_gpus_match_the_api(stack):
    async with connect(stack) as mcp:
        found = await call(mcp, "search", text="qkv norm")
        api = stack.data('{ searchDefinitions(text: "qkv norm", first: 10) { totalCount nodes { id name comparisonGroups { id } } } }')
        assert found["totalCount"] == api["searchDefinitions"]["totalCount"] >= 1
        assert [o["name"] for o in found["operations"]] == [n["name"] for n in api["searchDefinitions"]["nodes"]]
        assert all(o["permalink"] == f"{stack.base}/operations/{o['name']}" for o in found["operations"])

        op = await call(mcp, "get_operation", name=OP)
        api = stack.data(
            "query($n: String!) { definition(name: $n) { id workloads { digest } comparisonGroups { id title size } } }", {"n": OP}
        )
        assert op["id"] == api["definition"]["id"]
        assert [w["digest"] for w in op["workloads"]] == [w["digest"] for w in api["definition"]["workloads"]]
        assert [(g["id"], g["size"]) for g in op["comparisonGroups"]] == [
            (g["id"], g["size"]) for g in api["definition"]["comparisonGroups"]
        ]
        group = op["comparisonGroups"][0]
        assert group["permalink"] == f"{stack.base}/groups/{group['id']}"

        board = await call(mcp, "get_group", id=group["id"], first=5)
        api = stack.data("query($id: ID!) { comparisonGroup(id: $id) { runs(first: 5) { nodes { digest rank } } } }", {"id": group["id"]})
        assert [(r["digest"], r["rank"]) for r in board["runs"]["nodes"]] == [
            (r["digest"], r["rank"]) for r in api["comparisonGroup"]["runs"]["nodes"]
        ]

        gpus = await call(mcp, "list_gpus")
        products = {g["product"]: g for g in gpus["gpus"]}
        assert {"NVIDIA H200", "NVIDIA B200"} <= set(products)
        assert OP in products["NVIDIA H200"]["operations"] and products["NVIDIA H200"]["runs"] >= 27

        records = await call(mcp, "list_records", operation=OP)
        leaders = {
            g["id"]: g["leader"]
            for g in stack.data("query($n: String!) { definition(name: $n) { comparisonGroups { id leader { digest } } } }", {"n": OP})[
                "definition"
            ]["comparisonGroups"]
        }
        assert {r["group"]["id"]: r["record"]["digest"] for r in records["records"]} == {k: v["digest"] for k, v in leaders.items()}

        changes = await call(mcp, "list_record_changes", operation=OP)
        api = stack.data("query($n: String!) { recordChanges(operation: $n) { seq cause runDigest } }", {"n": OP})["recordChanges"]
        assert [(c["seq"], c["cause"], c["runDigest"]) for c in changes["changes"]] == [(c["seq"], c["cause"], c["runDigest"]) for c in api]
        # The bundled import makes each group's #1 at least once; the newest change names today's #1.
        assert api and {c["runDigest"] for c in api} >= {v["digest"] for v in leaders.values()} - {None}
        bad = await refused(mcp, "list_record_changes", since="yesterday")
        assert bad["code"] == "BAD_USER_INPUT"


RESOLVE = (
    """query($axes: [AxisValueInput!]!) { resolveKernel(operation: "%s", axes: $axes, gpu: "H200") {
  measured exact { caseIndex runs(first: 10) { runDigest caseRank latencyNs } } nearest { kind axis axes { name value } } } }"""
    % OP
)


async def test_resolve_kernel_one_and_batch_match_the_api(stack):
    async with connect(stack) as mcp:
        exact = await call(mcp, "resolve_kernel", operation=OP, axes={"batch_size": 4, "seq_len": 128}, gpu="H200")
        api = stack.data(RESOLVE, {"axes": [{"name": "batch_size", "value": 4}, {"name": "seq_len", "value": 128}]})["resolveKernel"]
        assert exact["measured"] is True
        assert [(r["runDigest"], r["caseRank"], r["latencyNs"]) for r in exact["exact"][0]["runs"]] == [
            (r["runDigest"], r["caseRank"], r["latencyNs"]) for r in api["exact"][0]["runs"]
        ]
        assert exact["exact"][0]["runs"][0]["permalink"] == f"{stack.base}/runs/{api['exact'][0]['runs'][0]['runDigest']}"

        near = await call(mcp, "resolve_kernel", operation=OP, axes={"batch_size": 4, "seq_len": 200}, gpu="H200")
        api = stack.data(RESOLVE, {"axes": [{"name": "batch_size", "value": 4}, {"name": "seq_len", "value": 200}]})["resolveKernel"]
        assert near["measured"] is False and near["exact"] == []
        assert [(n["kind"], n["axis"], n["axes"]) for n in near["nearest"]] == [(n["kind"], n["axis"], n["axes"]) for n in api["nearest"]]
        assert all("not the asked shape" in n["label"] for n in near["nearest"])

        batch = await call(
            mcp,
            "resolve_kernels",
            requests=[{"operation": OP, "axes": {"batch_size": 4, "seq_len": 128}, "gpu": "H200"}, {"operation": "no-such-op", "axes": {}}],
        )
        assert [r["ok"] for r in batch["results"]] == [True, False]
        assert batch["results"][1]["error"]["code"] == "NOT_FOUND" and batch["results"][1]["error"]["field"] == "requests[1].operation"
        too_many = await refused(mcp, "resolve_kernels", requests=[{"operation": OP, "axes": {}}] * 21)
        assert too_many["code"] == "BAD_USER_INPUT" and too_many["field"] == "requests" and too_many["rpc"] == -32602

        bad_axis = await refused(mcp, "resolve_kernel", operation=OP, axes={"batch_size": 4, "seq_len": 128, "colour": 3})
        assert bad_axis["code"] == "BAD_USER_INPUT" and bad_axis["field"] == "axes.colour"
        missing = await refused(mcp, "resolve_kernel", operation="no-such-op", axes={"n": 1})
        assert missing["code"] == "NOT_FOUND" and missing["field"] == "operation"


async def test_runs_run_compare_implementation_and_reruns_match_the_api(stack):
    async with connect(stack) as mcp:
        runs = await call(mcp, "list_runs", operation=OP, evidence_level="kernelindex_verified", first=10)
        def_id = stack.data("query($n: String!) { definition(name: $n) { id } }", {"n": OP})["definition"]["id"]
        api = stack.data(
            "query($d: ID!) { runs(filter: {definition: $d, evidenceLevel: KERNELINDEX_VERIFIED}, first: 10) {"
            " nodes { id digest group { title } } } }",
            {"d": def_id},
        )["runs"]["nodes"]
        # The four reruns signed over the format's digests: the H200's three (data/verified/h200-*),
        # one group, and the H100's (h100-*-2026-12-05.json).
        assert [r["digest"] for r in runs["runs"]] == [r["digest"] for r in api] and len(api) == 4
        h200 = {r["digest"] for r in api if r["group"]["title"] == "kernelindex-controlled v1 · H200"}
        assert len(h200) == 3
        first, second = [r for r in runs["runs"] if r["digest"] in h200][:2]

        run = await call(mcp, "get_run", id=first["id"])
        api = stack.data(
            "query($id: ID!) { run(id: $id) { digest evidenceLevel primaryMeasurement { valueNs } cases { index } } }", {"id": first["id"]}
        )["run"]
        assert run["digest"] == api["digest"] and run["evidenceLevel"] == api["evidenceLevel"] == "KERNELINDEX_VERIFIED"
        assert run["primaryMeasurement"]["valueNs"] == api["primaryMeasurement"]["valueNs"] and len(run["cases"]) == len(api["cases"]) == 16
        assert run["permalink"] == f"{stack.base}/runs/{run['digest']}"

        compared = await call(mcp, "compare_runs", ids=[first["id"], second["id"]])
        assert compared["sameGroup"] is True and [r["digest"] for r in compared["runs"]] == [first["digest"], second["digest"]]
        assert len(compared["cases"]) == 16 and set(compared["cases"][0]["latencyNs"]) == {first["digest"], second["digest"]}
        assert (await refused(mcp, "compare_runs", ids=[first["id"]]))["code"] == "BAD_USER_INPUT"

        impl = await call(mcp, "get_implementation", id=run["implementation"]["id"])
        assert impl["digest"] == run["implementation"]["digest"] and impl["code"]["digest"]
        wrong = await refused(mcp, "get_implementation", id=first["id"])
        assert wrong["code"] == "BAD_ID" and wrong["field"] == "id"
        garbage = await refused(mcp, "get_run", id="not-an-id")
        assert garbage["code"] == "BAD_ID" and garbage["rpc"] == -32602

        reruns = await call(mcp, "list_reruns", id=first["id"])
        api = stack.data(
            "query($id: ID!) { run(id: $id) { implementation { jobs(first: 50) { nodes { id definition { name } } } } attestations(first: 100) { nodes { id } } } }",
            {"id": first["id"]},
        )["run"]
        assert [j["id"] for j in reruns["controlledReruns"]] == [
            j["id"] for j in api["implementation"]["jobs"]["nodes"] if j["definition"]["name"] == OP
        ]
        assert reruns["reproductions"] == [] == api["attestations"]["nodes"]


async def test_serving_runs_match_the_api_and_are_never_ranked(stack):
    async with connect(stack) as mcp:
        listed = await call(mcp, "list_serving_runs", model="mlperf-llama2-70b", scenario="interactive", first=50)
        api = stack.data(
            '{ servingRuns(filter: {model: "mlperf-llama2-70b", scenario: "interactive"}, first: 50) { totalCount nodes { digest } } }'
        )["servingRuns"]
        assert listed["totalCount"] == api["totalCount"] == 78
        assert [r["digest"] for r in listed["servingRuns"]] == [n["digest"] for n in api["nodes"]]
        following = await call(
            mcp, "list_serving_runs", model="mlperf-llama2-70b", scenario="interactive", first=50, after=listed["pageInfo"]["endCursor"]
        )
        assert len(following["servingRuns"]) == 28 and not following["pageInfo"]["hasNextPage"]
        run = listed["servingRuns"][0]
        assert {m["kind"] for m in run["manifests"]} == {
            "ServingRun",
            "ModelRevision",
            "ServingConfiguration",
            "ServingStackRevision",
            "ServingWorkload",
        }
        assert run["provenance"][0]["source"] == "mlperf-inference" and run["model"]["name"] == "mlperf-llama2-70b"
        assert not [key for key in json.dumps(run).lower().split('"') if "rank" in key]
        bad = await refused(mcp, "list_serving_runs", first=500)
        assert bad["code"] == "BAD_USER_INPUT" and bad["field"] == "first"


async def test_validate_manifest_and_schema_without_the_database(stack):
    async with connect(stack) as mcp:
        example = read_documents(EXAMPLES_DIR / "benchmark-run.yaml")[0]  # timestamps stay text, as the format reads YAML
        checked = await call(mcp, "validate_manifest", manifest=example)
        assert checked == {
            "valid": True,
            "kind": "BenchmarkRun",
            "name": example["metadata"]["name"],
            "digest": format_digest(parse_format_manifest(example)),
        }
        as_text = await call(mcp, "validate_manifest", manifest=(EXAMPLES_DIR / "benchmark-run.yaml").read_text())
        assert as_text["digest"] == checked["digest"]
        broken = await refused(mcp, "validate_manifest", manifest={**example, "spec": {**example["spec"], "colour": "red"}})
        assert broken["code"] == "INVALID_MANIFEST" and broken["field"] == "manifest.spec.colour"
        assert {"field": "manifest.spec.colour", "reason": "unknown field"} in broken["problems"]
        huge = await refused(mcp, "validate_manifest", manifest="x" * (1 << 20 + 1))
        assert huge["code"] == "PAYLOAD_TOO_LARGE"

        schema = await call(mcp, "get_schema", kind="BenchmarkRun")
        assert schema["schema"] == schema_of("BenchmarkRun")
        assert (await refused(mcp, "get_schema", kind="Nope"))["field"] == "kind"


async def test_verify_attestation_checks_subject_and_signature(stack, tmp_path: Path):
    async with connect(stack) as mcp:
        signing = Ed25519PrivateKey.generate()
        (tmp_path / "key.pem").write_bytes(private_pem(signing))
        (tmp_path / "key.pub.pem").write_text(public_pem(signing.public_key()))
        (tmp_path / "result.json").write_text(json.dumps(support.predicate()))
        created = stack.cli("keys", "create", "--name", "mcp-partner", "--scope", "partner", "--public-key", str(tmp_path / "key.pub.pem"))
        assert created.returncode == 0, created.stderr
        run = stack.data("query($n: String!) { definition(name: $n) { comparisonGroups { leader { id digest } } } }", {"n": OP})
        leader = run["definition"]["comparisonGroups"][0]["leader"]
        done = stack.cli(
            "attest",
            "--run",
            leader["id"],
            "--result",
            str(tmp_path / "result.json"),
            "--signing-key",
            str(tmp_path / "key.pem"),
            "--api",
            stack.url,
            "--api-key",
            created.stdout.strip(),
        )
        assert done.returncode == 0, done.stderr

        reruns = await call(mcp, "list_reruns", id=leader["id"])
        [attestation] = reruns["reproductions"]
        checked = await call(mcp, "verify_attestation", id=attestation["id"], public_key_pem=public_pem(signing.public_key()))
        assert checked["subjectMatches"] is True and checked["subjectDigest"] == leader["digest"] and checked["registryVerified"] is True
        assert checked["signature"]["valid"] is True and checked["run"]["permalink"] == f"{stack.base}/runs/{leader['digest']}"
        other = await call(
            mcp, "verify_attestation", id=attestation["id"], public_key_pem=public_pem(Ed25519PrivateKey.generate().public_key())
        )
        assert other["signature"] == {"checked": True, "valid": False, "code": "SIGNATURE_INVALID", "reason": other["signature"]["reason"]}
        unchecked = await call(mcp, "verify_attestation", id=attestation["id"])
        assert unchecked["signature"]["checked"] is False and unchecked["subjectMatches"] is True


async def test_an_unreachable_api_is_an_mcp_error(stack):
    params = StdioServerParameters(command=KERNELINDEX, args=["mcp", "--api", "http://127.0.0.1:9/graphql", "--timeout", "2"])
    async with Client(params) as client:
        failure = await refused(client, "list_gpus")
    assert failure["code"] == "UNAVAILABLE" and failure["rpc"] == -32603 and "cannot reach" in failure["message"]
