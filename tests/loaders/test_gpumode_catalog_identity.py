"""GPU MODE rows → the KernelIndex catalog's identity (loaders/gpumode/catalog_identity.py).

The GPU MODE rows here are RECONSTRUCTED from what the bundled catalog export (real rows) says of
each of its GPU MODE runs — the submission id, user id and name, time, score, runner or reported
GPU, per-case statistics and the case's spec as its axes — in the shapes of `GPUMODE/kernelbot-data`
(loaders/gpumode/README.md cites each field). They are not rows read from the dataset. One thing
cannot be reconstructed: a submission's `code` (the export holds its sha256 and length, not its
text), so those two facts are handed to the mapping as they are; `code_of` is checked on its own.
Then every run the mapping builds must have the export's run, workload, implementation, protocol,
environment and operation digests and cohort keys."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from functools import cache

import pytest

from loaders.gpumode import catalog_identity as ci
from loaders.gpumode.normalize import Rejected
from loaders.gpumode.parse import FlatRow, PerShapeRow, Row, parse_submission
from registry.format import format_digest
from tests.loaders import gpumode_catalog_problems
from tests.loaders.catalog_exports import bundled_lines


@cache
def catalog() -> dict[str, dict[str, dict]]:
    tables: dict[str, dict[str, dict]] = defaultdict(dict)
    for item in bundled_lines():
        row = item["row"]
        tables[item["table"]][row.get("id", str(len(tables[item["table"]])))] = row
    return tables


@cache
def gpumode_runs() -> list[dict]:
    source = next(row["id"] for row in catalog()["sources"].values() if row["slug"] == ci.SOURCE)
    return [row for row in catalog()["benchmark_runs"].values() if row["sourceId"] == source]


def _user(run: dict) -> tuple[str, str]:
    """(user_id, user_name as the export writes it: "" when unknown) from the run's project."""
    implementation = catalog()["implementations"][run["implementationId"]]
    spec = catalog()["projects"][implementation["projectId"]]["manifest"]["spec"]
    user_id = spec["host"]["id"].removeprefix(f"{ci.SOURCE}/user/")
    return user_id, "" if spec["name"] == f"KernelBot user {user_id}" else spec["name"]


def _code(run: dict) -> ci.Code:
    source = catalog()["implementations"][run["implementationId"]]["manifest"]["spec"]["source"]
    return ci.Code(source["contentDigest"], source["sizeBytes"], source.get("fileName"))


def reconstructed_flat_row(run: dict) -> dict:
    """A RECONSTRUCTED hf_export.py row (flat config) of a catalog run."""
    spec = run["manifest"]["run"]["spec"]
    user_id, user_name = _user(run)
    return {
        "submission_id": int(spec["sourceNative"]["externalId"].removeprefix("submission/")),
        "leaderboard_id": None,  # not in the export
        "problem_name": spec["sourceNative"]["benchmark"],
        "user_id": user_id,
        "user_name": user_name,
        "code_id": None,  # not in the export
        "file_name": _code(run).file_name,
        "submission_time": spec["observedAt"],
        "status": "succeeded",
        "score": spec["sourceNative"]["metrics"]["leaderboard_score_s"],
        "passed": True,
        "mode": "leaderboard",
        "runner": run["manifest"]["environment"]["spec"]["hardware"]["formFactor"].removeprefix("runner:"),
    }


def reconstructed_per_shape_row(runs: list[dict]) -> dict:
    """A RECONSTRUCTED export.py row (amd_successful_submissions) from a submission's per-case
    catalog runs: `benchmark.N.*` from run N (its workload's axes as the spec)."""
    first = runs[0]["manifest"]
    spec = first["run"]["spec"]
    result: dict = {"benchmark-count": len(runs)}
    for run in runs:
        case_spec = run["manifest"]["run"]["spec"]
        index = int(case_spec["sourceNative"]["benchmark"].rsplit("/", 1)[1])
        axes = catalog()["workloads"][run["workloadId"]]["manifest"]["spec"]["axes"]
        prefix = f"benchmark.{index}."
        result[prefix + "spec"] = "; ".join(f"{name}: {value}" for name, value in axes.items())
        result[prefix + "mean"] = case_spec["sourceNative"]["metrics"]["mean_ns"]
        if "best_ns" in case_spec["sourceNative"]["metrics"]:
            result[prefix + "best"] = case_spec["sourceNative"]["metrics"]["best_ns"]
        if "maximum" in case_spec["timing"]["latencyNs"]:
            result[prefix + "worst"] = case_spec["timing"]["latencyNs"]["maximum"]
        for measurement in case_spec.get("measurements", ()):
            if measurement["statistic"] == "std":
                result[prefix + "std"] = measurement["value"]
        if "samples" in case_spec["timing"]:
            result[prefix + "runs"] = case_spec["timing"]["samples"]
    user_id, _ = _user(runs[0])
    labels = first["run"]["metadata"].get("labels", {})
    return {
        "submission_id": int(spec["sourceNative"]["externalId"].removeprefix("submission/")),
        "leaderboard_id": 0,  # not in the export: the board is known by name (the leaderboards config)
        "user_id": int(user_id),  # export.py: an anonymized integer
        "submission_time": spec["observedAt"],
        "file_name": _code(runs[0]).file_name,
        "code_id": None,
        "run_id": None,
        "run_mode": "leaderboard",
        "run_score": spec["sourceNative"]["metrics"].get("leaderboard_score_s"),
        "run_passed": True,
        "run_system_info": {
            "gpu": first["environment"]["spec"]["hardware"]["product"],
            "device_count": 1,
            "torch": labels.get("torch"),
            "platform": labels.get("platform"),
        },
        "run_result": result,
    }


def _expected(run: dict) -> dict[str, str]:
    spec = run["manifest"]["run"]["spec"]
    workload = catalog()["workloads"][run["workloadId"]]
    return {
        "run": run["runDigest"],
        "workload": spec["workloadDigest"],
        "implementation": spec["implementationDigest"],
        "protocol": spec["protocolDigest"],
        "environment": spec["environmentDigest"],
        "operation": workload["manifest"]["spec"]["operationSpecDigest"],
        "comparisonKey": run["comparisonKey"],
        "protocolKey": run["protocolKey"],
        "environmentKey": run["environmentKey"],
        "correctnessKey": run["correctnessKey"],
    }


def _ours(built: ci.CatalogRun) -> dict[str, str]:
    cohort = built.cohort()
    return {
        **built.digests,
        "comparisonKey": cohort.comparisonKey,
        "protocolKey": cohort.protocolKey,
        "environmentKey": cohort.environmentKey,
        "correctnessKey": cohort.correctnessKey,
    }


def _consistent(built: ci.CatalogRun) -> None:
    """The digests a CatalogRun carries are its manifests' own."""
    parts = ("run", "workload", "implementation", "protocol", "environment", "operation")
    assert {part: format_digest(getattr(built, part)) for part in parts} == {part: built.digests[part] for part in parts}


def _per_shape_submissions() -> dict[str, list[dict]]:
    by_submission: dict[str, list[dict]] = defaultdict(list)
    for run in gpumode_runs():
        if catalog()["workloads"][run["workloadId"]]["manifest"]["kind"] == "WorkloadCase":
            by_submission[run["manifest"]["run"]["spec"]["sourceNative"]["externalId"]].append(run)
    return by_submission


def build_per_shape(runs: list[dict]) -> list[ci.CatalogRun]:
    row = parse_submission(Row(0, reconstructed_per_shape_row(runs), ()))
    assert isinstance(row, PerShapeRow)
    board = runs[0]["manifest"]["run"]["spec"]["sourceNative"]["benchmark"].rsplit("/", 1)[0]
    return ci.per_shape_runs(row, ci.problem_for(board), code=_code(runs[0]))


def build_flat(run: dict) -> ci.CatalogRun:
    row = parse_submission(Row(0, reconstructed_flat_row(run), ()))
    assert isinstance(row, FlatRow)
    return ci.flat_run(row, ci.problem_for(row.problem_name), code=_code(run))


def test_submission_30771_of_amd_fp8_mm_is_the_catalogs_18_runs():
    runs = _per_shape_submissions()["submission/30771"]
    assert len(runs) == 18
    built = {b.benchmark: b for b in build_per_shape(runs)}
    assert sorted(built) == sorted(f"amd-fp8-mm/{i}" for i in range(18))
    for run in runs:
        ours = built[run["manifest"]["run"]["spec"]["sourceNative"]["benchmark"]]
        assert _ours(ours) == _expected(run)
        _consistent(ours)
        assert ours.external_id == "submission/30771" and ours.run.spec.sourceNative.source == "gpumode-kernelbot"
        assert ours.run.to_json()["metadata"] == run["manifest"]["run"]["metadata"]  # the editorial part too


@pytest.mark.parametrize(
    ("board", "runner"),
    [
        ("nvfp4_gemv", "NVIDIA"),  # the NVFP4 competition's own runner
        ("modal_nvfp4_dual_gemm", "B200"),  # a second board name of one operation, Modal's B200
        ("trimul", "MI300"),  # the mixed-GPU board on its AMD runner
        ("causal_conv1d", "B200_Nebius"),  # Helion: B200_Nebius, its own environment
        ("conv2d_v2", "L4"),  # a board whose suite's statistic is `unspecified`
        ("amd-mxfp4-mm", "MI355X"),
    ],
)
def test_flat_rows_are_the_catalogs_runs(board, runner):
    runs = [
        r
        for r in gpumode_runs()
        if r["manifest"]["run"]["spec"]["sourceNative"]["benchmark"] == board
        and r["manifest"]["environment"]["spec"]["hardware"].get("formFactor") == f"runner:{runner}"
    ]
    assert runs
    for run in runs[:5]:
        built = build_flat(run)
        assert _ours(built) == _expected(run), run["id"]
        _consistent(built)


def test_every_gpumode_run_of_the_export_is_rebuilt_with_its_digests_and_keys():
    """All 5,215: 2,080 per-shape case runs of 3 boards, 3,135 aggregate runs of 22 board names."""
    per_shape, flat, mismatched = 0, 0, []
    for runs in _per_shape_submissions().values():
        built = {b.benchmark: b for b in build_per_shape(runs)}
        for run in runs:
            per_shape += 1
            if _ours(built[run["manifest"]["run"]["spec"]["sourceNative"]["benchmark"]]) != _expected(run):
                mismatched.append(run["id"])
    for run in gpumode_runs():
        if catalog()["workloads"][run["workloadId"]]["manifest"]["kind"] == "WorkloadSuite":
            flat += 1
            if _ours(build_flat(run)) != _expected(run):
                mismatched.append(run["id"])
    assert (per_shape, flat, mismatched) == (2080, 3135, [])


def test_a_users_project_is_the_catalogs():
    for run in gpumode_runs()[::97]:
        implementation = catalog()["implementations"][run["implementationId"]]
        project = catalog()["projects"][implementation["projectId"]]["manifest"]
        user_id, user_name = _user(run)
        assert ci.project(user_id, user_name).to_json()["spec"] == project["spec"]


def test_code_is_its_utf8_sha256_and_length():
    text = "# SYNTHETIC submission\nprint('µs')\n"
    data = text.encode()
    assert ci.code_of(text, "submission.py") == ci.Code("sha256:" + hashlib.sha256(data).hexdigest(), len(data), "submission.py")
    assert len(data) == len(text) + 1  # µ is two bytes: the length is in bytes
    assert ci.code_of("", "submission.py") is None and ci.code_of(None, None) is None


def test_a_truncated_code_cell_is_no_code():
    run = next(r for r in gpumode_runs() if r["manifest"]["run"]["spec"]["sourceNative"]["benchmark"] == "nvfp4_gemv")
    data = reconstructed_flat_row(run) | {"code": "import torch  # SYNTHETIC, cut"}
    cut = parse_submission(Row(0, data, ("code",)))
    whole = parse_submission(Row(0, data, ()))
    assert cut.code is None and whole.code == data["code"]
    assert "source" not in ci.flat_run(cut, ci.problem_for("nvfp4_gemv")).implementation.spec.to_json()
    assert ci.flat_run(whole, ci.problem_for("nvfp4_gemv")).implementation.spec.source.sizeBytes == len(data["code"])


def test_what_has_no_catalog_identity_is_said():
    assert ci.problem_for("synthetic-fp8-mm") is None  # a board the catalog does not curate
    with pytest.raises(Rejected, match="'seed: x' is not 'name: integer'"):
        ci.case_axes("k: 7168; seed: x")
    assert ci.case_axes("K: 64; seed: -3") == {"k": 64, "seed": -3}
    assert ci.evaluate("((dhidden + 255) // 256) * 256", {"dhidden": 7168}) == 7168
    assert ci.evaluate("kv_lora_rank + qk_rope_head_dim", {"kv_lora_rank": 512, "qk_rope_head_dim": 64}) == 576
    with pytest.raises(Rejected, match="cannot evaluate"):
        ci.evaluate("__import__('os')", {})


def test_the_boards_file_is_cut_from_the_bundled_export():
    import json

    assert json.loads(gpumode_catalog_problems.TARGET.read_text(encoding="utf-8")) == gpumode_catalog_problems.extract()
    assert len(ci.problems()) == 25 and {p.scoring for p in ci.problems().values()} == {"per-shape", "aggregate"}
