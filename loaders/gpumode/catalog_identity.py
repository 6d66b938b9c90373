"""GPU MODE rows → v1alpha1 manifests with the KernelIndex catalog's identity (pure).

The KernelIndex public catalog (data/kernelindex-catalog/, 5,215 GPU MODE runs under source
`gpumode-kernelbot`) names GPU MODE submissions its own way; a submission imported from
`GPUMODE/kernelbot-data` must be the same record, so these manifests are built the way the
catalog's runs are (read in its rows, and in SamMausberg/KernelIndex's GPU MODE importer,
apps/web/src/server/import/gpumode/: learnt from, not copied). Every digest below is the
catalog's for the same row: tests/loaders/test_gpumode_catalog_identity.py rebuilds each of the
export's GPU MODE runs from rows reconstructed from what the export says about them.

What comes from the row and what from the catalog (loaders/gpumode/README.md, "Identity with the
catalog", cites each field):

- The board's OperationSpec, whether its runs are per-shape or one aggregate score, and an
  aggregate board's WorkloadSuite are the catalog's (`catalog_problems.json`, cut from the
  bundled export): the catalog transcribed them from each board's task.yml; no row says them.
  A board the catalog does not curate has no catalog identity (`problem_for` is None).
- Per-shape rows (`amd_successful_submissions`): one BenchmarkRun per benchmark case of
  `run_result` (`benchmark.N.{spec, mean, best, worst, std, runs}`), on one WorkloadCase per case
  (`spec`'s integer parameters, the seed included, as its axes; tensors bound from the
  operation's inputs); the environment is the GPU of `run_system_info.gpu`.
- Flat rows (hf_export.py): one BenchmarkRun per submission, its `score` (seconds) as the one
  measurement, on the board's suite; the environment is the `runner` (`formFactor:
  runner:{runner}`, so each runner is its own cohort).
- The implementation is the submission (`submission_id`): its code's sha256 and byte length
  (`code`, `file_name`), the GPU it ran on, the operation's input dtypes.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import operator
import re
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from loaders.gpumode.normalize import RUNNERS, Hardware, Rejected, hardware_of, observed_at
from loaders.gpumode.parse import FlatRow, PerShapeRow
from registry.comparison import Cohort, cohort_of
from registry.format import FormatError, FormatManifest, format_digest, make_format_manifest

SOURCE = "gpumode-kernelbot"  # the catalog's source slug for GPU MODE (its `sources` row)
DATASET_URL = "https://huggingface.co/datasets/GPUMODE/kernelbot-data"
REFERENCE_KERNELS = "https://github.com/gpu-mode/reference-kernels"
PROBLEMS_FILE = Path(__file__).with_name("catalog_problems.json")
PER_SHAPE, AGGREGATE = "per-shape", "aggregate"
COMPARATOR = "kernelbot_eval"
HARNESS = {"name": "reference-kernels eval.py", "repository": REFERENCE_KERNELS}
CORRECTNESS = {"reference": "problem reference implementation", "comparator": COMPARATOR}
# The catalog's two protocols: their notes are part of their identity, so they are its words.
PER_SHAPE_NOTES = (
    "Per-case wall-clock statistics as published in the KernelBot dataset. Comparable only within one "
    "leaderboard problem and GPU type; runner software versions ride each run's labels."
)
AGGREGATE_NOTES = (
    "Aggregate leaderboard score in seconds over the problem's published benchmark suite, as computed by "
    "the upstream ranked run. Comparable only within one leaderboard problem and runner type."
)
FAMILY = "gpumode_kernelbot"


def kebab(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:100]


# ---------------------------------------------------------------- the catalog's boards


@dataclass(frozen=True, eq=False)  # one per board (problems()): compared and hashed by identity
class Problem:
    """A board the catalog curates: its OperationSpec, per-shape or aggregate, and (aggregate)
    its WorkloadSuite."""

    board: str
    scoring: str
    operation: FormatManifest
    suite: FormatManifest | None

    @cached_property
    def operation_digest(self) -> str:
        return format_digest(self.operation)

    @cached_property
    def suite_digest(self) -> str | None:
        return format_digest(self.suite) if self.suite is not None else None

    @property
    def statistic(self) -> str:
        """An aggregate board's ranking statistic (its suite's `aggregation.statistic`)."""
        return self.suite.spec.aggregation.statistic if self.suite is not None else "mean"

    @cached_property
    def dtypes(self) -> list[str]:
        return sorted({argument.tensor.dtype for argument in self.operation.spec.inputs if argument.tensor is not None})


def _validated(manifest: dict[str, Any]) -> FormatManifest:
    return make_format_manifest(manifest["kind"], manifest["metadata"], manifest["spec"])


@cache
def problems() -> dict[str, Problem]:
    data = json.loads(PROBLEMS_FILE.read_text(encoding="utf-8"))
    return {
        board: Problem(board, entry["scoring"], _validated(entry["operation"]), _validated(entry["suite"]) if entry["suite"] else None)
        for board, entry in data["boards"].items()
    }


def problem_for(board_name: str) -> Problem | None:
    return problems().get(board_name)


# ---------------------------------------------------------------- code, hardware, axes


@dataclass(frozen=True)
class Code:
    """What a submission's identity takes of its code: the sha256 of its UTF-8 text, its length
    in bytes, the file name it was submitted as."""

    content_digest: str
    size_bytes: int
    file_name: str | None = None


def code_of(code: str | None, file_name: str | None) -> Code | None:
    """None when the row has no code (absent, empty, or truncated: parse.parse_submission)."""
    if not code:
        return None
    data = code.encode("utf-8")
    return Code("sha256:" + hashlib.sha256(data).hexdigest(), len(data), file_name)


def runner_hardware(runner: str) -> tuple[Hardware, int]:
    known = RUNNERS.get(runner)
    if known is None:
        raise Rejected(f"runner: {runner!r} is none of KernelBot's runners ({', '.join(RUNNERS)})")
    return known[0], known[1]


_CASE_PART = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):\s*(-?\d+)$")


def case_axes(spec: str) -> dict[str, int]:
    """A benchmark's `spec` (`"k: 7168; m: 1024; n: 1536; seed: 8135"`) as the catalog binds a
    case: every `name: integer` piece, the seed included, names in lower case. A piece that is
    not an integer has no catalog case (the catalog leaves such a submission out)."""
    axes: dict[str, int] = {}
    for piece in spec.split(";"):
        match = _CASE_PART.match(piece.strip())
        if match is None:
            raise Rejected(f"run_result: spec {spec!r}: {piece.strip()!r} is not 'name: integer' (no catalog case)")
        axes[match.group(1).lower()] = int(match.group(2))
    return axes


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}


def evaluate(expression: str, bindings: dict[str, int]) -> int:
    """A derived axis's expression (integers, axis names, + - * // %, parentheses)."""

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and node.id in bindings:
            return bindings[node.id]
        raise Rejected(f"axis expression {expression!r}: cannot evaluate {ast.dump(node)}")

    return value(ast.parse(expression, mode="eval").body)


def _round(value: float) -> int:
    """Half up, as the catalog rounds a nanosecond time (JavaScript's Math.round)."""
    return math.floor(value + 0.5)


# ---------------------------------------------------------------- manifests


def make(kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> FormatManifest:
    try:
        return make_format_manifest(kind, {k: v for k, v in metadata.items() if v is not None}, spec)
    except FormatError as error:
        problems_ = "; ".join(f"{path}: {reason}" for path, reason in error.problems[:3])
        raise Rejected(f"does not make a valid {kind}: {problems_}") from None


@cache
def digest_of_shared(kind: str, *key: Any) -> str:
    """The digest of a shared manifest (a protocol, an environment), made once per process."""
    return format_digest(
        per_shape_protocol() if kind == "per-shape" else aggregate_protocol(*key) if kind == "aggregate" else environment(*key)
    )


@cache
def per_shape_protocol() -> FormatManifest:
    return make(
        "BenchmarkProtocol",
        {"name": "gpumode-kernelbot-eval", "title": "GPU MODE KernelBot evaluation harness"},
        {
            "harness": HARNESS,
            "measurement": {"timer": "wall_clock", "primaryStatistic": "mean"},
            "correctness": CORRECTNESS,
            "comparability": {"family": FAMILY, "notes": PER_SHAPE_NOTES},
        },
    )


@cache
def aggregate_protocol(statistic: str) -> FormatManifest:
    return make(
        "BenchmarkProtocol",
        {"name": kebab(f"gpumode-kernelbot-leaderboard-{statistic}"), "title": "GPU MODE KernelBot ranked leaderboard run"},
        {
            "harness": HARNESS,
            "measurement": {"timer": "wall_clock", "primaryStatistic": statistic},
            "correctness": CORRECTNESS,
            "comparability": {"family": FAMILY, "notes": AGGREGATE_NOTES},
        },
    )


@cache
def environment(name: str, hardware: Hardware, count: int = 1, runner: str | None = None) -> FormatManifest:
    """`name`: the GPU as the run reported it (per-shape) or the runner (flat); a runner is its
    own environment (`formFactor: runner:{name}`)."""
    spec: dict[str, Any] = {"vendor": hardware.vendor, "product": hardware.product, "architecture": hardware.architecture}
    if count > 1:
        spec["count"] = count
    if runner is not None:
        spec["formFactor"] = f"runner:{runner}"
    return make(
        "ExecutionEnvironment",
        {"name": kebab(f"gpumode-kernelbot-{name}"), "title": f"KernelBot runner · {hardware.product}"},
        {"hardware": spec, "software": {}},
    )


def project(user_id: str, user_name: str | None) -> FormatManifest:
    """One SoftwareProject per KernelBot user, as the catalog's rows hold them."""
    return make(
        "SoftwareProject",
        {"name": f"kernelbot-user-{kebab(user_id)}"},
        {"name": (user_name or "").strip() or f"KernelBot user {user_id}", "host": {"kind": "other", "id": f"{SOURCE}/user/{user_id}"}},
    )


def implementation(problem: Problem, submission_id: int, hardware: Hardware, code: Code | None, user_name: str | None) -> FormatManifest:
    spec: dict[str, Any] = {
        "projectRevision": {"version": f"submission-{submission_id}"},
        "operation": {"specDigest": problem.operation_digest},
        "callable": {"language": "python"},
        "support": {"hardwareArchitectures": [hardware.architecture], "productsTested": [hardware.product], "dtypes": problem.dtypes},
        "licensing": {},
    }
    if code is not None:
        spec["source"] = {"contentDigest": code.content_digest, "sizeBytes": code.size_bytes} | (
            {"fileName": code.file_name} if code.file_name is not None else {}
        )
    return make(
        "ImplementationRevision",
        {
            "name": f"kernelbot-submission-{submission_id}",
            "title": f"{problem.board} · submission {submission_id}",
            "description": code.file_name if code is not None else None,
            "authors": [{"name": user_name}] if user_name else None,
            "sourceRefs": [{"url": DATASET_URL}],
        },
        spec,
    )


@cache
def workload_case(problem: Problem, axes_items: tuple[tuple[str, int], ...]) -> tuple[FormatManifest, str]:
    """A benchmark's WorkloadCase (and its digest): its axes, and each input's shape bound from
    them, the operation's constants and its derived axes."""
    axes = dict(axes_items)
    operation = problem.operation.spec
    bindings = dict(axes)
    for name, axis in operation.axes.items():
        if axis.role == "constant":
            bindings[name] = axis.value
    for name, axis in operation.axes.items():
        if axis.role == "derived" and name not in bindings:
            bindings[name] = evaluate(axis.expression, bindings)

    def bound(dim: Any) -> int:
        if isinstance(dim, int):
            return dim
        if dim not in bindings:
            raise Rejected(f"run_result: the case binds no {dim!r} (board {problem.board})")
        return bindings[dim]

    tensors = {
        argument.name: {"shape": [bound(d) for d in argument.tensor.shape], "dtype": argument.tensor.dtype}
        for argument in operation.inputs
        if argument.tensor is not None
    }
    key = "-".join(f"{name}{value}" for name, value in sorted(axes.items()))
    title = f"{problem.operation.metadata.title} · " + ", ".join(f"{name}={value}" for name, value in axes.items())
    manifest = make(
        "WorkloadCase",
        {"name": kebab(f"{problem.operation.metadata.name}-{key}"), "title": title if len(title) <= 200 else title[:199] + "…"},
        {"operationSpecDigest": problem.operation_digest, "axes": axes, "tensors": tensors, "correctness": {"comparator": COMPARATOR}},
    )
    return manifest, format_digest(manifest)


# ---------------------------------------------------------------- runs


@dataclass(frozen=True)
class CatalogRun:
    """One run with everything it names, as the catalog holds it."""

    external_id: str  # `submission/{id}`: the source record (several per-case runs share it)
    benchmark: str  # `{board}/{case}` (per-shape) or `{board}`
    run: FormatManifest
    protocol: FormatManifest
    environment: FormatManifest
    workload: FormatManifest
    implementation: FormatManifest
    operation: FormatManifest
    project: FormatManifest
    digests: dict[str, str]  # run, workload, implementation, protocol, environment, operation

    @property
    def digest(self) -> str:
        return self.digests["run"]

    def cohort(self) -> Cohort:
        return cohort_of(run_spec=self.run.spec.to_json(), workload_spec=self.workload.spec.to_json())


def _digests(workload: str, implementation_: str, protocol: str, env: str) -> dict[str, str]:
    return {"implementationDigest": implementation_, "workloadDigest": workload, "protocolDigest": protocol, "environmentDigest": env}


def _all_digests(run: FormatManifest, spec: dict[str, Any], problem: Problem) -> dict[str, str]:
    return {
        "run": format_digest(run),
        "workload": spec["workloadDigest"],
        "implementation": spec["implementationDigest"],
        "protocol": spec["protocolDigest"],
        "environment": spec["environmentDigest"],
        "operation": problem.operation_digest,
    }


def _positive(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) and value > 0 else None


def per_shape_runs(row: PerShapeRow, problem: Problem, *, code: Code | None = None) -> list[CatalogRun]:
    """A passing leaderboard-mode per-shape row → one run per benchmark case. `code` defaults
    to the row's own (`code`, `file_name`)."""
    if problem.scoring != PER_SHAPE:
        raise Rejected(f"board {problem.board}: the catalog holds one aggregate score per submission, not per-shape runs")
    code = code if code is not None else code_of(row.code, row.file_name)
    gpu = row.run_system_info.gpu.strip()
    if not gpu:
        raise Rejected("run_system_info.gpu: empty (KernelBot found no GPU)")
    hardware = hardware_of(gpu)
    env, env_digest = environment(gpu, hardware), digest_of_shared("environment", gpu, hardware)
    protocol, protocol_digest = per_shape_protocol(), digest_of_shared("per-shape")
    owner = project(row.user_id, row.user_name)
    impl = implementation(problem, row.submission_id, hardware, code, row.user_name)
    impl_digest = format_digest(impl)
    labels = {key: value for key, value in (("torch", row.run_system_info.torch), ("platform", row.run_system_info.platform)) if value}
    runs = []
    for case in row.cases():
        axes = case_axes(case.spec)
        workload, workload_digest = workload_case(problem, tuple(axes.items()))
        best, worst = _positive(case.best), _positive(case.worst)
        latency = {"mean": _round(case.mean)} | ({"minimum": _round(best)} if best else {}) | ({"maximum": _round(worst)} if worst else {})
        timing: dict[str, Any] = {"primaryStatistic": "mean", "latencyNs": latency}
        if case.runs:
            timing["samples"] = case.runs
        metrics: dict[str, Any] = {"mean_ns": case.mean} | ({"best_ns": best} if best else {})
        if row.run_score is not None:
            metrics["leaderboard_score_s"] = row.run_score
        spec: dict[str, Any] = {
            **_digests(workload_digest, impl_digest, protocol_digest, env_digest),
            "status": "passed",
            "timing": timing,
            "sourceNative": {
                "source": SOURCE,
                "benchmark": f"{problem.board}/{case.index}",
                "externalId": f"submission/{row.submission_id}",
                "metrics": metrics,
            },
            "observedAt": observed_at(row.submission_time),
        }
        if case.std is not None and math.isfinite(case.std):
            std = {"metric": "latency", "unit": "ns", "statistic": "std", "value": case.std}
            spec["measurements"] = [std | ({"sampleCount": case.runs} if case.runs else {})]
        key = "-".join(f"{name}{value}" for name, value in sorted(axes.items()))
        run = make(
            "BenchmarkRun",
            {
                "name": kebab(f"kernelbot-{row.submission_id}-{key}"),
                "title": f"{problem.board} · submission {row.submission_id} · case {case.index}",
                "labels": labels or None,
            },
            spec,
        )
        external_id, benchmark = f"submission/{row.submission_id}", f"{problem.board}/{case.index}"
        digests = _all_digests(run, spec, problem)
        runs.append(CatalogRun(external_id, benchmark, run, protocol, env, workload, impl, problem.operation, owner, digests))
    return runs


def flat_run(row: FlatRow, problem: Problem, *, code: Code | None = None) -> CatalogRun:
    """A succeeded flat row → its one aggregate run on the board's suite."""
    if problem.scoring != AGGREGATE or problem.suite is None:
        raise Rejected(f"board {problem.board}: the catalog holds per-shape runs for it, and a flat row has no cases")
    if row.score is None or row.runner is None or row.submission_time is None or row.user_id is None:
        raise Rejected("score, runner, submission_time, user_id: a succeeded row has each")
    code = code if code is not None else code_of(row.code, row.file_name)
    runner = row.runner.strip()
    hardware, count = runner_hardware(runner)
    env, env_digest = environment(runner, hardware, count, runner), digest_of_shared("environment", runner, hardware, count, runner)
    protocol, protocol_digest = aggregate_protocol(problem.statistic), digest_of_shared("aggregate", problem.statistic)
    owner = project(row.user_id, row.user_name)
    impl = implementation(problem, row.submission_id, hardware, code, row.user_name)
    spec = {
        **_digests(problem.suite_digest, format_digest(impl), protocol_digest, env_digest),
        "status": "passed",
        "measurements": [{"metric": "score", "unit": "s", "statistic": problem.statistic, "value": row.score}],
        "sourceNative": {
            "source": SOURCE,
            "benchmark": problem.board,
            "externalId": f"submission/{row.submission_id}",
            "metrics": {"leaderboard_score_s": row.score},
        },
        "observedAt": observed_at(row.submission_time),
    }
    run = make(
        "BenchmarkRun",
        {
            "name": kebab(f"kernelbot-{row.submission_id}-leaderboard"),
            "title": f"{problem.board} · submission {row.submission_id} · leaderboard score",
        },
        spec,
    )
    digests = _all_digests(run, spec, problem)
    return CatalogRun(
        f"submission/{row.submission_id}", problem.board, run, protocol, env, problem.suite, impl, problem.operation, owner, digests
    )
