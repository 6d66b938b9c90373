"""Synthetic SOL-ExecBench snapshot directories for tests and the import benchmark.

Everything here is made up and named so: kernels are `9xx_synthetic_*`, users `synthetic-user-*`,
no real submission appears. The files follow the snapshot layout of
loaders/sol_execbench/README.md (kernels.json, kernels/{id}.json,
submissions/{id}/offset-{n}.json), paged like the API (`{"data": {...}}`, 20 per page).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PAGE_SIZE = 20


def kernel_name(kernel_id: int) -> str:
    return f"{kernel_id:03d}_synthetic_rmsnorm_{kernel_id}"


def kernel_summary(kernel_id: int, submissions: int = 0) -> dict[str, Any]:
    return {
        "id": kernel_id,
        "name": kernel_name(kernel_id),
        "title": f"Synthetic RMSNorm {kernel_id}",
        "gpu_types": ["B200"],
        "tags": ["synthetic", "L1"],
        "submission_count": submissions,
    }


def kernel_detail(kernel_id: int, cases: int = 4) -> dict[str, Any]:
    return {
        **kernel_summary(kernel_id),
        "description": "Synthetic: y = x / sqrt(mean(x^2) + eps) * w, row by row.",
        "axes": {
            "rows": {"type": "var", "description": "rows"},
            # Each synthetic kernel its own row width: in the v1alpha1 format an operation is its
            # spec (names and descriptions are metadata), so kernels alike in every axis would be one.
            "hidden": {"type": "const", "value": 1024 + kernel_id % 100, "description": "row width"},
        },
        "inputs": {
            "x": {"shape": ["rows", "hidden"], "dtype": "bfloat16", "description": "input"},
            "w": {"shape": ["hidden"], "dtype": "bfloat16", "description": "scale"},
            "eps": {"shape": None, "dtype": "float32", "description": "epsilon"},
        },
        "outputs": {"y": {"shape": ["rows", "hidden"], "dtype": "bfloat16", "description": "output"}},
        "baseline": f"# synthetic baseline {kernel_id}\ndef run(x, w, eps): ...\n",
        "baseline_latency_ms": 0.002,
        "latency_unit": "ms",
        "sol_is_dummy": False,
        "workloads": [
            {"axes": {"rows": 128 * (index + 1)}, "sol_ms": 0.001 * (index + 1), "baseline_latency_ms": 0.01 * (index + 1)}
            for index in range(cases)
        ],
    }


def submission(
    kernel_id: int,
    submission_id: int,
    *,
    sol_score: float | None = 0.5,
    latency_ms: float | None = 0.1,
    status: str = "COMPLETED",
    is_correct: bool | None = True,
    is_disqualified: bool = False,
    gpu_type: str = "B200",
    stack: str = "v1.1",
    username: str | None = None,
    finished_at: str | None = "2026-08-01T12:00:00.123",
    **extra: Any,
) -> dict[str, Any]:
    record = {
        "id": submission_id,
        "type": "kernel",
        "user_id": 1000 + submission_id % 97,
        "username": username or f"synthetic-user-{submission_id}",
        "kernel_id": kernel_id,
        "kernel_name": kernel_name(kernel_id),
        "kernel_title": f"Synthetic RMSNorm {kernel_id}",
        "collection_id": None,
        "collection_submission_id": None,
        "collection_title": None,
        "original_filename": "kernel.py",
        "submission_mode": "release",
        "status": status,
        "is_correct": is_correct,
        "error_log": None,
        "sol_score": sol_score,
        "latency_ms": latency_ms,
        "avg_speedup": None if latency_ms is None else round(0.1 / latency_ms, 4),
        "fast_1_count": None if latency_ms is None else 2,
        "fast_1_total": None if latency_ms is None else 4,
        "benchmark_results": None,
        "gpu_type": gpu_type,
        "worker_id": "synthetic-worker-1",
        "evaluation_stack_version": stack,
        "is_disqualified": is_disqualified,
        "disqualification_reason": "synthetic: timing exploit" if is_disqualified else None,
        "disqualification_source": "synthetic-moderator" if is_disqualified else None,
        "disqualified_at": "2026-08-02T00:00:00" if is_disqualified else None,
        "submitted_at": "2026-08-01T11:59:00.000",
        "finished_at": finished_at,
    }
    record.update(extra)
    return record


def pages(kernel_id: int, records: list[dict[str, Any]], page_size: int = PAGE_SIZE) -> dict[int, dict]:
    """offset → the page body, as GET /submissions?kernel_id=&offset=&limit= answers."""
    out = {}
    for offset in range(0, max(len(records), 1), page_size):
        out[offset] = {
            "data": {
                "submissions": records[offset : offset + page_size],
                "total": len(records),
                "offset": offset,
                "limit": page_size,
            }
        }
    return out


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(json.dumps(value, separators=(",", ":")).encode())


def write_snapshot(
    root: Path,
    submissions_by_kernel: dict[int, list[dict[str, Any]]],
    *,
    page_size: int = PAGE_SIZE,
    cases: int = 4,
) -> Path:
    """A complete snapshot directory: every kernel listed, its detail and all its pages."""
    root.mkdir(parents=True, exist_ok=True)
    write_json(root / "meta.json", {"base_url": "http://synthetic.invalid/api", "note": "synthetic"})
    write_json(
        root / "kernels.json",
        {"data": {"kernels": [kernel_summary(k, len(s)) for k, s in submissions_by_kernel.items()]}},
    )
    for kernel_id, records in submissions_by_kernel.items():
        write_json(root / "kernels" / f"{kernel_id}.json", {"data": kernel_detail(kernel_id, cases)})
        for offset, body in pages(kernel_id, records, page_size).items():
            write_json(root / "submissions" / str(kernel_id) / f"offset-{offset}.json", body)
    return root


def leaderboard_kernel(kernel_id: int = 901, first_id: int = 500_000) -> list[dict[str, Any]]:
    """64 submissions on one kernel: 55 passed (with ties), 3 disqualified, 2 incorrect,
    2 failed without latency, 1 failed with latency, 1 pending. Scores descend with the id,
    except for three ties."""
    records = []
    for n in range(55):
        score = round(0.9 - n * 0.01, 5)
        records.append(submission(kernel_id, first_id + n, sol_score=score, latency_ms=round(0.05 + n * 0.001, 6)))
    # ties: 503 ties 502 (rank 3 twice), 520 and 521 tie 519 (rank 20 three times)
    records[3]["sol_score"] = records[2]["sol_score"]
    records[20]["sol_score"] = records[19]["sol_score"]
    records[21]["sol_score"] = records[19]["sol_score"]
    n = 55
    for _ in range(3):
        records.append(submission(kernel_id, first_id + n, sol_score=0.99, latency_ms=0.01, is_disqualified=True))
        n += 1
    for _ in range(2):
        records.append(submission(kernel_id, first_id + n, sol_score=0.95, latency_ms=0.02, is_correct=False))
        n += 1
    for _ in range(2):
        records.append(
            submission(
                kernel_id,
                first_id + n,
                sol_score=None,
                latency_ms=None,
                status="FAILED",
                is_correct=None,
                finished_at="2026-08-01T12:00:01",
            )
        )
        n += 1
    records.append(submission(kernel_id, first_id + n, sol_score=0.97, latency_ms=0.03, status="ERROR", is_correct=None))
    n += 1
    records.append(
        submission(kernel_id, first_id + n, sol_score=None, latency_ms=None, status="PENDING_RESULT", is_correct=None, finished_at=None)
    )
    return records
