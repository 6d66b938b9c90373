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

import pytest

from loaders.gpumode import catalog_identity as ci
from loaders.gpumode.normalize import Rejected
from loaders.gpumode.parse import FlatRow, PerShapeRow, Row, parse_submission
from registry.format import format_digest
from tests.loaders import gpumode_catalog_problems
from tests.loaders.gpumode_reconstructed import (
    catalog,
    code_facts,
    gpumode_runs,
    reconstructed_flat_row,
    reconstructed_per_shape_row,
    user_of,
)


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
    return ci.per_shape_runs(row, ci.problem_for(board), code=code_facts(runs[0]))


def build_flat(run: dict) -> ci.CatalogRun:
    row = parse_submission(Row(0, reconstructed_flat_row(run), ()))
    assert isinstance(row, FlatRow)
    return ci.flat_run(row, ci.problem_for(row.problem_name), code=code_facts(run))


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
        user_id, user_name = user_of(run)
        assert ci.project(user_id, user_name).to_json()["spec"] == project["spec"]


def test_code_is_its_utf8_sha256_and_length():
    text = "# SYNTHETIC submission\nprint('µs')\n"
    data = text.encode()
    assert ci.code_of(text, "submission.py") == ci.Code("sha256:" + hashlib.sha256(data).hexdigest(), len(data), "submission.py")
    assert len(data) == len(text) + 1  # µ is two bytes: the length is in bytes
    assert ci.code_of("", "submission.py") is None and ci.code_of(None, None) is None


def test_a_truncated_code_cell_is_nocode_facts():
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
