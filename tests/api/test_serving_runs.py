"""servingRuns over the bundled data: the KernelIndex catalog's 722 MLPerf serving runs, listed
(keyset pages, filters, manifests' digests, measurements, provenance) and never ranked.

Expectations are computed from the export file's own rows (data/kernelindex-catalog/), by its
columns (`scenario`, `acceleratorModel`, `modelDigest`, ...), not from what the API stores."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest
import zstandard

from registry.format import format_digest, parse_format_manifest

SERVING_TABLES = {"model_revisions", "serving_stack_revisions", "serving_configurations", "serving_workloads", "serving_runs"}
BUNDLED = Path(__file__).resolve().parents[2] / "data" / "kernelindex-catalog"

RUN_FIELDS = """
  id digest name title status observedAt round scenario benchmark externalId qualityPolicy
  harness { name version }
  topology { acceleratorVendor acceleratorModel acceleratorsPerNode nodeCount totalAccelerators }
  measurements { metric statistic unit value sampleCount display }
  manifests { kind digest name }
  model { digest name model }
  configuration { digest system dtype stack { digest project version } }
  workload { digest name streaming loadGeneration slo { display } }
  provenance { exportFile exportSha256 source sourceName license attribution text }
  sourceUrls manifest
"""
PAGE = "query($filter: ServingRunFilter, $first: Int, $after: String) { servingRuns(filter: $filter, first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { %s } } }"


@pytest.fixture(scope="module")
def export() -> dict[str, dict[str, dict]]:
    (path,) = sorted(BUNDLED.glob("catalog-*.jsonl.zst"))
    tables: dict[str, dict[str, dict]] = {}
    with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
        for line in io.TextIOWrapper(reader, encoding="utf-8"):
            item = json.loads(line)
            if item["table"] in SERVING_TABLES:
                tables.setdefault(item["table"], {})[item["row"]["id"]] = item["row"]
    return tables


async def _all(api, filter: dict | None = None, fields: str = "digest observedAt") -> tuple[list[dict], int]:
    nodes, after, total = [], None, None
    while True:
        page = (await api.data(PAGE % fields, {"filter": filter, "first": 100, "after": after}))["servingRuns"]
        total = page["totalCount"] if total is None else total
        assert page["totalCount"] == total
        nodes += page["nodes"]
        if not page["pageInfo"]["hasNextPage"]:
            return nodes, total
        after = page["pageInfo"]["endCursor"]


async def test_every_serving_run_is_listed_once_newest_first(bundled_api, export):
    nodes, total = await _all(bundled_api)
    expected = {row["runDigest"] for row in export["serving_runs"].values()}
    assert total == len(expected) == 722
    assert [n["digest"] for n in nodes] == sorted({n["digest"] for n in nodes}, key=[n["digest"] for n in nodes].index)
    assert {n["digest"] for n in nodes} == expected and len(nodes) == 722
    keys = [(n["observedAt"], n["digest"]) for n in nodes]
    assert keys == sorted(keys, key=lambda k: (_inverse(k[0]), k[1]))


def _inverse(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)


async def test_filters_are_the_exports_columns(bundled_api, export):
    runs = list(export["serving_runs"].values())
    models = {row["id"]: row["slug"] for row in export["model_revisions"].values()}
    systems = {row["id"]: row["manifest"]["spec"]["options"]["system"] for row in export["serving_configurations"].values()}
    cases = [
        (
            {"model": "mlperf-llama2-70b", "scenario": "interactive"},
            lambda r: models[r["modelRevisionId"]] == "mlperf-llama2-70b" and r["scenario"] == "interactive",
        ),
        ({"accelerator": "NVIDIA B200-SXM-180GB"}, lambda r: r["acceleratorModel"] == "NVIDIA B200-SXM-180GB"),
        (
            {"acceleratorVendor": "amd", "round": "v6.0"},
            lambda r: r["acceleratorVendor"] == "amd" and r["protocolKey"].startswith("mlperf_loadgen/v6.0/"),
        ),
        ({"system": "Supermicro AS-8125GS-TNMR2"}, lambda r: systems[r["configurationId"]] == "Supermicro AS-8125GS-TNMR2"),
        ({"model": "no-such-model"}, lambda r: False),
    ]
    for filter, wanted in cases:
        expected = {r["runDigest"] for r in runs if wanted(r)}
        nodes, total = await _all(bundled_api, filter)
        assert total == len(expected) and {n["digest"] for n in nodes} == expected, filter
    assert len({r["runDigest"] for r in runs if cases[0][1](r)}) == 78  # llama2-70b-99 · Interactive


async def test_facets_count_the_exports_values(bundled_api, export):
    facets = (
        await bundled_api.data(
            "{ servingRunFacets { totalCount scenarios { value count } rounds { value count } models { value title count } accelerators { value count } systems { value } } }"
        )
    )["servingRunFacets"]
    runs = list(export["serving_runs"].values())
    assert facets["totalCount"] == 722
    assert (
        {f["value"]: f["count"] for f in facets["scenarios"]}
        == dict(Counter(r["scenario"] for r in runs))
        == {"offline": 308, "server": 304, "interactive": 110}
    )
    assert {f["value"]: f["count"] for f in facets["accelerators"]} == dict(Counter(r["acceleratorModel"] for r in runs))
    assert {f["value"]: f["count"] for f in facets["rounds"]} == {"v5.1": 362, "v6.0": 360}
    assert {f["value"]: f["title"] for f in facets["models"]}["mlperf-llama2-70b"] == "Llama-2-70B (MLPerf reference)"
    assert len(facets["systems"]) == len(
        {
            row["manifest"]["spec"]["options"]["system"]
            for row in export["serving_configurations"].values()
            if any(r["configurationId"] == row["id"] for r in runs)
        }
    )


async def test_one_run_with_its_manifests_measurements_and_provenance(bundled_api, export):
    # MLPerf v5.1 entry 5.1-0001's Interactive result (its name is shared by the entry's other scenarios).
    (row,) = [
        r
        for r in export["serving_runs"].values()
        if r["runDigest"] == "sha256:cf776f5ecc9fb9ba277b1d29e9edc322fb8f87d6b5880b9c4cfcc8244cd8d206"
    ]
    config = next(c for c in export["serving_configurations"].values() if c["id"] == row["configurationId"])
    stack = next(s for s in export["serving_stack_revisions"].values() if s["id"] == config["stackRevisionId"])
    model = next(m for m in export["model_revisions"].values() if m["id"] == row["modelRevisionId"])
    workload = next(w for w in export["serving_workloads"].values() if w["id"] == row["workloadId"])
    nodes, _ = await _all(
        bundled_api,
        {"model": model["slug"], "scenario": "interactive", "system": config["manifest"]["spec"]["options"]["system"]},
        RUN_FIELDS,
    )
    (run,) = [n for n in nodes if n["digest"] == row["runDigest"]]

    assert run["title"] == "AMD · llama2-70b-99 · Interactive" and run["externalId"] == "v5.1/5.1-0001"
    assert (run["scenario"], run["round"], run["benchmark"]) == ("interactive", "v5.1", "llama2-70b-99")
    assert run["topology"] == {
        "acceleratorVendor": "amd",
        "acceleratorModel": "AMD Instinct MI300X 192GB HBM3",
        "acceleratorsPerNode": 8,
        "nodeCount": 1,
        "totalAccelerators": 8,
    }
    assert run["measurements"] == [
        {
            "metric": "output_token_throughput_tps",
            "statistic": "reported",
            "unit": "tokens_s",
            "value": 8840.42,
            "sampleCount": None,
            "display": "8,840.42 tokens_s (reported)",
        }
    ]
    assert {m["kind"]: m["digest"] for m in run["manifests"]} == {
        "ServingRun": row["runDigest"],
        "ModelRevision": model["modelDigest"],
        "ServingConfiguration": config["configurationDigest"],
        "ServingStackRevision": stack["stackDigest"],
        "ServingWorkload": workload["workloadDigest"],
    }
    # The manifest served is the one exported, and its digest (computed by us) is the run's.
    assert run["manifest"] == row["manifest"]
    assert format_digest(parse_format_manifest(run["manifest"])) == run["digest"]
    assert run["configuration"]["stack"]["project"] == "AMD (MLPerf submitter)"
    assert [o["display"] for o in run["workload"]["slo"]] == ["p99 ttft_ms <= 450 ms", "p99 tpot_ms <= 40 ms"]
    (provenance,) = run["provenance"]
    assert provenance["exportFile"] == "catalog-2026-08-16-0022af0b.jsonl.zst"
    assert provenance["exportSha256"] == "0022af0bfbed96c53e2a2a2315a3e46f0c362c11d1ea1fefd95daac368638f6b"
    assert (provenance["source"], provenance["sourceName"], provenance["license"]) == ("mlperf-inference", "MLPerf Inference", "Apache-2.0")
    assert provenance["attribution"] == "MLPerf™ Inference results by MLCommons; MLPerf™ is a trademark of MLCommons"
    assert run["sourceUrls"] == ["https://github.com/mlcommons/inference_results_v5.1/tree/main/closed/AMD/results/8xMI300X_2xEPYC_9575F"]

    # The same run by its global ID.
    again = (await bundled_api.data("query($id: ID!) { node(id: $id) { ... on ServingRun { digest } } }", {"id": run["id"]}))["node"]
    assert again == {"digest": row["runDigest"]}


async def test_no_rank_anywhere(bundled_api):
    names = {
        t: {
            f["name"]
            for f in (await bundled_api.data("query($t: String!) { __type(name: $t) { fields { name } } }", {"t": t}))["__type"]["fields"]
        }
        for t in ("ServingRun", "ServingRunPage", "ServingConfiguration", "ServingWorkload", "ModelRevision", "ServingStackRevision")
    }
    for type_name, fields in names.items():
        assert not {f for f in fields if any(w in f.lower() for w in ("rank", "leader", "group", "best", "fastest"))}, type_name


@pytest.mark.parametrize(
    "variables, message",
    [
        ({"after": "bm9wZQ"}, "after: 'bm9wZQ' is not a valid cursor"),
        ({"first": 101}, "first: 101 is above the maximum page size of 100"),
        ({"filter": {"model": "x" * 201}}, "filter.model: 201 characters; at most 200"),
        ({"after": "cnVuczoxMA=="}, "is a cursor of runs, not of this list (serving)"),
        ({"after": "c2VydmluZzp4"}, "is not a valid cursor"),
    ],
)
async def test_bad_input_is_one_named_error(bundled_api, variables, message):
    body = await bundled_api.post(PAGE % "digest", variables)
    (error,) = body["errors"]
    assert message in error["message"] and error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "Traceback" not in json.dumps(body)


async def test_round_trips_do_not_grow_with_the_page(bundled_api, bundled_db):
    """A page of serving runs with everything they name: one find for the page and one per kind
    named (model, configuration, stack, workload), plus the three counts that say the listing is
    still whole (store/serving.py; the server counts them as queries): 8, for 5 runs or 100."""
    fields = (
        "digest model { name } configuration { system stack { project } } workload { name } manifests { digest } provenance { license }"
    )

    async def finds(first: int) -> int:
        before = (await bundled_db.client.admin.command("serverStatus"))["opcounters"]["query"]
        page = (await bundled_api.data(PAGE % fields, {"first": first}))["servingRuns"]
        assert len(page["nodes"]) == first
        return (await bundled_db.client.admin.command("serverStatus"))["opcounters"]["query"] - before

    await finds(1)  # the listing and the import record, read once per process
    assert await finds(5) == await finds(100) == 8
