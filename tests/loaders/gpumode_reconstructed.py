"""GPU MODE rows RECONSTRUCTED from what the bundled KernelIndex catalog export (real rows) says
of its GPU MODE runs, in the shapes of `GPUMODE/kernelbot-data` (loaders/gpumode/README.md cites
each field): the submission id, user id and name, time, score, runner or reported GPU, per-case
statistics, and the case's spec from its workload's axes. They are not rows read from the dataset;
the fields the export does not hold (`leaderboard_id`, `code_id`, `run_id`, and the code's text:
the export keeps its sha256 and length) are said where they are set."""

from __future__ import annotations

from collections import defaultdict
from functools import cache

from loaders.gpumode import catalog_identity as ci
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


def user_of(run: dict) -> tuple[str, str]:
    """(user_id, user_name as the export writes it: "" when unknown) from the run's project."""
    implementation = catalog()["implementations"][run["implementationId"]]
    spec = catalog()["projects"][implementation["projectId"]]["manifest"]["spec"]
    user_id = spec["host"]["id"].removeprefix(f"{ci.SOURCE}/user/")
    return user_id, "" if spec["name"] == f"KernelBot user {user_id}" else spec["name"]


def code_facts(run: dict) -> ci.Code:
    source = catalog()["implementations"][run["implementationId"]]["manifest"]["spec"]["source"]
    return ci.Code(source["contentDigest"], source["sizeBytes"], source.get("fileName"))


def reconstructed_flat_row(run: dict) -> dict:
    """A RECONSTRUCTED hf_export.py row (flat config) of a catalog run."""
    spec = run["manifest"]["run"]["spec"]
    user_id, user_name = user_of(run)
    return {
        "submission_id": int(spec["sourceNative"]["externalId"].removeprefix("submission/")),
        "leaderboard_id": None,  # not in the export
        "problem_name": spec["sourceNative"]["benchmark"],
        "user_id": user_id,
        "user_name": user_name,
        "code_id": None,  # not in the export
        "file_name": code_facts(run).file_name,
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
    user_id, _ = user_of(runs[0])
    labels = first["run"]["metadata"].get("labels", {})
    return {
        "submission_id": int(spec["sourceNative"]["externalId"].removeprefix("submission/")),
        "leaderboard_id": 0,  # not in the export: the board is known by name (the leaderboards config)
        "user_id": int(user_id),  # export.py: an anonymized integer
        "submission_time": spec["observedAt"],
        "file_name": code_facts(runs[0]).file_name,
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


def runs_of(external_id: str) -> list[dict]:
    """The export's runs of one source record, e.g. "submission/30771", in case order."""
    runs = [r for r in gpumode_runs() if r["manifest"]["run"]["spec"]["sourceNative"]["externalId"] == external_id]
    return sorted(
        runs,
        key=lambda r: (
            int(r["manifest"]["run"]["spec"]["sourceNative"]["benchmark"].rsplit("/", 1)[-1])
            if "/" in r["manifest"]["run"]["spec"]["sourceNative"]["benchmark"]
            else 0
        ),
    )
