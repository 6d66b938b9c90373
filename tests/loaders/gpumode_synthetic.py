"""SYNTHETIC GPU MODE KernelBot rows in the real shape, for tests, the import benchmark and the
bundled snapshot. Everything is made up and named so: boards `synthetic-*`, users
`synthetic-user-*` / ids 900000+; no real submission appears. The shapes (column names and value
formats) are the sources' (loaders/gpumode/README.md cites each):

- per-shape rows: gpu-mode/kernelbot-data `export.py` (fetch_submissions' columns; `user_id`
  anonymized to integers; no `user_name`), `run_result` keys as KernelBot's examples/eval.py logs
  them, `run_system_info` as run_eval.SystemInfo;
- flat rows: gpu-mode/kernelbot `hf_export.py` SUBMISSIONS_SCHEMA / `sql/get_hf_export_rows.sql`
  (`user_id` text, `user_name` "" when unknown, `status`, `score` in seconds, `passed`, `mode`,
  `runner`);
- times as the datasets-server writes a UTC timestamp (orjson with OPT_UTC_Z: `...Z`).

`rows_body` is the one place a datasets-server `/rows` answer is built, so the live test server
(tests/loaders/datasets_server.py) and a snapshot directory written by `write_snapshot` hold
the same bytes for the same page.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

DATASET = "GPUMODE/kernelbot-data"
PAGE_LENGTH = 100
PER_SHAPE_CONFIG = "amd_successful_submissions"
FLAT_CONFIG = "nvidia_nvfp4_submissions"
SPECS = (
    "k: 7168; m: 1024; n: 1536; seed: 8135",
    "k: 1536; m: 1024; n: 3072; seed: 6251",
    "k: 7168; m: 6144; n: 1536; seed: 1212",
    "k: 512; m: 6144; n: 4608; seed: 7122",
)


def leaderboard(board_id: int, name: str, gpus: list[str], description: str | None = None) -> dict[str, Any]:
    return {
        "id": board_id,
        "name": name,
        "deadline": "2026-06-30 23:59:59",
        "description": description or f"Synthetic board {name}: made-up rows in the KernelBot shape.",
        "gpu_types": gpus,
        "creator_id": 1,
    }


def case_result(means: list[float], *, rel_std: float = 0.01, runs: int = 100, specs: tuple[str, ...] = SPECS) -> dict[str, Any]:
    """A `run_result` with KernelBot's keys (examples/eval.py: benchmark-count, benchmark.N.*)."""
    result: dict[str, Any] = {"benchmark-count": str(len(means)), "check": "pass"}
    for index, mean in enumerate(means):
        std = mean * rel_std
        result |= {
            f"benchmark.{index}.spec": specs[index % len(specs)],
            f"benchmark.{index}.runs": str(runs),
            f"benchmark.{index}.mean": repr(mean),
            f"benchmark.{index}.std": repr(std),
            f"benchmark.{index}.err": repr(std / math.sqrt(runs)),
            f"benchmark.{index}.best": repr(mean * 0.97),
            f"benchmark.{index}.worst": repr(mean * 1.05),
        }
    return result


def kernelbot_score(means: list[float], rule: str) -> float:
    """KernelBot's submission.compute_score, in seconds: geom / mean / last of the case means."""
    scores = [m / 1e9 for m in means]
    if rule == "last":
        return scores[-1]
    if rule == "mean":
        return sum(scores) / len(scores)
    return math.pow(math.prod(scores), 1.0 / len(scores))


def per_shape_row(
    submission_id: int,
    board_id: int,
    user: int,
    *,
    means: list[float],
    rel_std: float = 0.01,
    runs: int = 100,
    gpu: str = "AMD Instinct MI300X",
    device_count: int = 1,
    run_mode: str = "leaderboard",
    passed: bool = True,
    time: str = "2026-05-01T12:00:00.000000Z",
    specs: tuple[str, ...] = SPECS,
    rule: str = "geom",
    user_name: str | None = None,
) -> dict[str, Any]:
    """A row of export.py's submissions query (SYNTHETIC values)."""
    row = {
        "submission_id": submission_id,
        "leaderboard_id": board_id,
        "user_id": 900000 + user,
        "submission_time": time,
        "file_name": "submission.py",
        "code": f"# SYNTHETIC submission {submission_id}\n",
        "code_id": 50_000 + submission_id,
        "run_id": 70_000 + submission_id,
        "run_start_time": time,
        "run_end_time": time,
        "run_mode": run_mode,
        "run_score": kernelbot_score(means, rule) if passed and run_mode == "leaderboard" else None,
        "run_passed": passed,
        "run_result": case_result(means, rel_std=rel_std, runs=runs, specs=specs),
        "run_compilation": None,
        "run_meta": {"stdout": "", "stderr": "", "success": True, "exit_code": 0, "duration": 1.5},
        "run_system_info": {
            "gpu": gpu,
            "device_count": device_count,
            "cpu": "Synthetic CPU",
            "runtime": "ROCm" if "AMD" in gpu else "CUDA",
            "platform": "Linux",
            "torch": "2.6.0",
            "hostname": "synthetic-host",
        },
    }
    if user_name is not None:
        row["user_name"] = user_name
    return row


def flat_row(
    submission_id: int,
    problem: str,
    user: int,
    *,
    score: float | None,
    status: str = "succeeded",
    runner: str | None = "B200",
    time: str = "2026-05-02T08:30:00.000000Z",
    board_id: int | None = None,
    user_name: str | None = None,
) -> dict[str, Any]:
    """A row of hf_export.py's SUBMISSIONS_SCHEMA (SYNTHETIC values): a submission that did not
    finish or pass has no run joined (`score`, `passed`, `mode`, `runner` null)."""
    ran = status in ("succeeded", "failed", "hacked", "timed_out") and runner is not None
    return {
        "submission_id": submission_id,
        "leaderboard_id": board_id,
        "problem_name": problem,
        "user_id": f"{900000 + user}",
        "user_name": f"synthetic-user-{user}" if user_name is None else user_name,
        "code_id": 50_000 + submission_id,
        "file_name": "submission.py",
        "submission_time": time,
        "status": status,
        "score": score if status == "succeeded" else None,
        "passed": (status == "succeeded") if ran else None,
        "mode": "leaderboard" if status == "succeeded" else None,
        "runner": runner if ran or status == "succeeded" else None,
        "code": f"# SYNTHETIC submission {submission_id}\n",
    }


def splits_body(configs: list[str]) -> bytes:
    splits = [{"dataset": DATASET, "config": c, "split": "train"} for c in configs]
    return json.dumps({"splits": splits, "pending": [], "failed": []}).encode()


def rows_body(rows: list[dict[str, Any]], offset: int, length: int) -> bytes:
    page = rows[offset : offset + length]
    body = {
        "features": [{"feature_idx": i, "name": name} for i, name in enumerate(rows[0])] if rows else [],
        "rows": [{"row_idx": offset + i, "row": row, "truncated_cells": []} for i, row in enumerate(page)],
        "num_rows_total": len(rows),
        "num_rows_per_page": PAGE_LENGTH,
        "partial": False,
    }
    return json.dumps(body, separators=(",", ":")).encode()


def write_snapshot(
    root: Path, configs: dict[str, list[dict[str, Any]]], meta: dict[str, Any] | None = None, length: int = PAGE_LENGTH
) -> Path:
    """The snapshot layout of loaders/gpumode/README.md: splits.json, {config}/offset-{n}.json."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "splits.json").write_bytes(splits_body(list(configs)))
    for config, rows in configs.items():
        (root / config).mkdir(exist_ok=True)
        for offset in range(0, max(len(rows), 1), length):
            (root / config / f"offset-{offset}.json").write_bytes(rows_body(rows, offset, length))
    if meta is not None:
        (root / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return root


# ---------------------------------------------------------------- the bundled snapshot

BUNDLE_META = {
    "base_url": "https://datasets-server.huggingface.co",
    "dataset": DATASET,
    "fetched_at": "2026-12-01T00:00:00Z",
    "synthetic": True,
    "note": (
        "SYNTHETIC rows in the shape of GPUMODE/kernelbot-data as the datasets-server serves it "
        "(configs leaderboards, amd_successful_submissions, nvidia_nvfp4_submissions). Boards are "
        "named synthetic-*, users synthetic-user-*; no row is a real KernelBot submission. Written by "
        "tests/loaders/gpumode_synthetic.py:write_bundle (this machine cannot reach Hugging Face)."
    ),
    "shape_from": "GPU MODE KernelBot dataset (GPUMODE/kernelbot-data), Researcher Reciprocity License v1.0",
}


def bundle_dataset() -> dict[str, list[dict[str, Any]]]:
    """Three boards: a per-shape one with 10 users (two of them tied from samples, one with two
    submissions, a failed and a non-leaderboard run), a second per-shape board, a flat one."""
    boards = [
        leaderboard(9399, "synthetic-fp8-mm", ["MI300X"], "Synthetic FP8 block-scaled GEMM board. Rows are made up."),
        leaderboard(9430, "synthetic-moe", ["MI300X"], "Synthetic mixture-of-experts board. Rows are made up."),
        leaderboard(9595, "synthetic-nvfp4-gemv", ["B200"], "Synthetic NVFP4 GEMV board (flat scores). Rows are made up."),
    ]
    base = [20_000.0, 45_000.0, 90_000.0, 160_000.0]
    rows = []
    for user in range(1, 11):
        factor = {2: 1.050, 3: 1.051}.get(user, 1.0 + user * 0.08)
        std = 0.05 if user in (2, 3) else 0.01
        rows.append(
            per_shape_row(
                100 + user, 9399, user, means=[round(m * factor, 3) for m in base], rel_std=std, time=f"2026-05-{user:02d}T12:00:00.000"
            )
        )
    rows.append(per_shape_row(120, 9399, 1, means=[round(m * 0.95, 3) for m in base], time="2026-05-20T09:15:00.000"))
    rows.append(per_shape_row(121, 9399, 11, means=base, passed=False))
    rows.append(per_shape_row(122, 9399, 12, means=base, run_mode="benchmark"))
    moe_specs = ("e: 256; t: 512; d: 7168; seed: 91", "e: 256; t: 2048; d: 7168; seed: 92")
    for user in range(1, 6):
        rows.append(
            per_shape_row(
                200 + user,
                9430,
                user,
                means=[300_000.0 * (1 + user / 10), 900_000.0 * (1 + user / 10)],
                specs=moe_specs,
                time=f"2026-06-{user:02d}T08:00:00.000",
            )
        )
    flat = [
        flat_row(300 + user, "synthetic-nvfp4-gemv", user, score=round(2.2e-5 * (1 + user / 20), 9), board_id=9595) for user in range(1, 7)
    ]
    flat.append(flat_row(307, "synthetic-nvfp4-gemv", 7, score=None, status="failed", board_id=9595))
    return {"leaderboards": boards, PER_SHAPE_CONFIG: rows, FLAT_CONFIG: flat}


def write_bundle(root: Path) -> Path:
    return write_snapshot(root, bundle_dataset(), BUNDLE_META)
