"""Turn parsed SOL-ExecBench records into KernelIndex manifests.

| source                         | manifest                                                    |
|--------------------------------|-------------------------------------------------------------|
| kernel (GET /kernels/{id})     | OperationSpec (axes, inputs, outputs, tags; the baseline     |
|                                | code only as `spec.reference.referenceDigest`)               |
| kernel.workloads               | WorkloadSuite (case axes; per-case `sol_ms` and              |
|                                | `baseline_latency_ms` as the source gave them)               |
| evaluation_stack_version       | BenchmarkProtocol, one per stack version                     |
| (gpu_type, stack version)      | ExecutionEnvironment                                         |
| submission                     | ImplementationRevision + BenchmarkRun                        |

Everything here is pure: no I/O, same input → same manifests → same digests. Per-kernel and
per-stack manifests are built once and shared by all the kernel's submissions.

Decisions (also in README.md):
- Status: disqualified wins over everything; COMPLETED + is_correct → passed / incorrect;
  FAILED, ERROR → failed; REJECTED (refused by the source's review) → disqualified;
  PENDING_RESULT, RUNNING → pending; CANCELLED → cancelled.
- observedAt: `finished_at` (no zone in the API → UTC), in milliseconds with `Z`. A submission
  without `finished_at` uses `submitted_at` (the only time the source vouches for) and says so in
  the run's annotation `observedAtFrom`.
- A submission without `latency_ms` (pending, most failures) cannot be a BenchmarkRun: the schema
  requires a value for the primary statistic. It is skipped, with the reason, not rejected.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from functools import cache
from typing import Any

from loaders.common.source_records import code_fingerprint, record_fingerprint
from loaders.sol_execbench import SOURCE
from loaders.sol_execbench.parse import Kernel, Submission
from registry.digest import manifest_digest
from registry.format import FormatManifest, format_digest, make_format_manifest
from registry.manifests import Manifest, RunStatus, make_manifest
from registry.sources import HARNESS_NOTES

HARNESS = "SOL-ExecBench evaluation stack"
FAMILY = "sol_execbench_leaderboard"
COMPARATOR = "sol_execbench_eval"
PRIMARY_STATISTIC = "mean"  # what the source calls its number (see the protocol's annotations)
COMPARABILITY_NOTES = (
    "Suite-mean latency and SOL-Score as published by the SOL-ExecBench leaderboard. "
    "Comparable only within one definition, GPU type, and evaluation stack version."
)
SUITE_CORRECTNESS = "Correctness must pass on every case in the SOL evaluation stack."
# What we know about how a stack version times kernels, beyond what the source labels it.
STATISTIC_NOTES = {version: note for (harness, version), note in HARNESS_NOTES.items() if harness == HARNESS}
# GPU type as the API names it → (vendor, product, architecture).
GPUS = {
    "B200": ("nvidia", "NVIDIA B200", "sm_100"),
    "GB200": ("nvidia", "NVIDIA GB200", "sm_100"),
    "B300": ("nvidia", "NVIDIA B300", "sm_103"),
    "H100": ("nvidia", "NVIDIA H100", "sm_90"),
    "H200": ("nvidia", "NVIDIA H200", "sm_90"),
}
METRICS = ("sol_score", "latency_ms", "avg_speedup", "fast_1_count", "fast_1_total")


class Rejected(ValueError):
    """The record is wrong or inconsistent: reported as rejected."""


class Skipped(ValueError):
    """The record is fine but cannot be represented as a run (yet): reported as skipped."""


def slug(text: str) -> str:
    """A metadata name: lower case, [a-z0-9._-] only."""
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")[:200] or "unnamed"


def text_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- per kernel


@dataclass(frozen=True)
class KernelManifests:
    kernel_id: int
    name: str
    definition: Manifest
    workload: Manifest
    definition_digest: str
    workload_digest: str


def normalize_kernel(kernel: Kernel) -> KernelManifests:
    """OperationSpec and WorkloadSuite of one kernel; raises Rejected when they do not validate."""
    reference = {"source": SOURCE, "benchmark": kernel.name, "externalId": f"kernel/{kernel.id}"}
    if kernel.baseline:
        # The baseline is the source's code: we keep only its digest, never the text.
        reference["referenceDigest"] = text_digest(kernel.baseline)
    definition_spec = {
        "name": kernel.name,
        "description": kernel.description or kernel.title or kernel.name,
        "axes": {name: axis.model_dump(exclude_none=True) for name, axis in kernel.axes.items()},
        "inputs": {name: tensor.model_dump(exclude_none=True) for name, tensor in kernel.inputs.items()},
        "outputs": {name: tensor.model_dump(exclude_none=True) for name, tensor in kernel.outputs.items()},
        "tags": list(kernel.tags),
        "reference": reference,
    }
    for tensors in (definition_spec["inputs"], definition_spec["outputs"]):
        for tensor in tensors.values():
            tensor.setdefault("shape", None)  # null shape = scalar; keep it explicit
    title = kernel.title or kernel.name
    try:
        definition = make_manifest("OperationSpec", f"sol-{slug(kernel.name)}", definition_spec, title=title)
        definition_digest = manifest_digest(definition)
        workload_spec = {
            "definitionDigest": definition_digest,
            "cases": [
                {
                    "index": index,
                    "axes": dict(case.axes),
                    "sourceNative": {
                        "sol_ms": case.sol_ms,
                        "baseline_latency_ms": case.baseline_latency_ms,
                    },
                }
                for index, case in enumerate(kernel.workloads)
            ],
            "aggregation": "mean latency",
            "correctness": {"comparator": COMPARATOR, "description": SUITE_CORRECTNESS},
            "source": {"source": SOURCE, "benchmark": kernel.name, "externalId": f"kernel/{kernel.id}"},
        }
        workload = make_manifest(
            "WorkloadSuite",
            f"sol-{slug(kernel.name)}-cases",
            workload_spec,
            title=f"{title} · {len(kernel.workloads)} cases",
        )
    except ValueError as error:
        raise Rejected(f"kernel {kernel.id} does not make a valid manifest: {error}") from None
    return KernelManifests(kernel.id, kernel.name, definition, workload, definition_digest, manifest_digest(workload))


# ---------------------------------------------------------------- per stack version and GPU


@cache
def protocol_for(stack_version: str) -> tuple[Manifest, str]:
    """The BenchmarkProtocol of one evaluation stack version, and its digest."""
    annotations = {}
    if stack_version in STATISTIC_NOTES:
        annotations["primaryStatisticNote"] = STATISTIC_NOTES[stack_version]
    manifest = make_manifest(
        "BenchmarkProtocol",
        f"sol-execbench-leaderboard-{slug(stack_version.replace('.', '-'))}",
        {
            "harness": {"name": HARNESS, "version": stack_version},
            "correctness": {"reference": "definition reference implementation", "comparator": COMPARATOR},
            "measurement": {"timer": "harness_reported", "primaryStatistic": PRIMARY_STATISTIC},
            "comparability": {"notes": COMPARABILITY_NOTES, "family": FAMILY},
        },
        title=f"{HARNESS} {stack_version}",
        annotations=annotations,
    )
    return manifest, manifest_digest(manifest)


@cache
def environment_for(gpu_type: str, stack_version: str) -> tuple[Manifest, str]:
    """The ExecutionEnvironment of one (GPU type, stack version), and its digest."""
    if gpu_type not in GPUS:
        raise Rejected(f"gpu_type {gpu_type!r} is not a GPU we know the architecture of")
    vendor, product, architecture = GPUS[gpu_type]
    manifest = make_manifest(
        "ExecutionEnvironment",
        f"sol-execbench-{slug(gpu_type)}-{slug(stack_version.replace('.', '-'))}",
        {
            "hardware": {"vendor": vendor, "product": product, "architecture": architecture},
            "software": {"libraries": {"evaluation_stack": stack_version}},
        },
        title=f"SOL-ExecBench {product}, stack {stack_version}",
    )
    return manifest, manifest_digest(manifest)


# ---------------------------------------------------------------- per submission


@dataclass(frozen=True)
class RunManifests:
    """A submission's run and everything it references."""

    external_id: str
    kernel: KernelManifests
    run: Manifest
    implementation: Manifest
    protocol: Manifest
    environment: Manifest
    source_record: str | None = None  # the record's fingerprint, kept beside the run (not in it)


def format_source_record(kernel: FormatKernel, record: Any) -> str:
    """The fingerprint of a submission record as the format's conversion (`format_submission`)
    makes it with its kernel's manifests: equal fingerprints make runs with equal digests."""
    from loaders.sol_execbench import normalize, parse

    return record_fingerprint(code_fingerprint(normalize, parse), kernel.operation_digest, kernel.suite_digest, record)


def source_record(kernel: KernelManifests, record: Any) -> str:
    """The fingerprint of a submission record as this code normalizes it with its kernel's
    manifests: equal fingerprints make runs with equal digests, so a current run with this
    fingerprint is unchanged without building it (loaders/common/source_records.py). The page it
    was read from is left out: it is only the run's `sourceSnapshot` annotation, which a digest
    does not cover and an unchanged run keeps from its first import."""
    from loaders.sol_execbench import normalize, parse

    return record_fingerprint(code_fingerprint(normalize, parse), kernel.definition_digest, kernel.workload_digest, record)


def run_status(submission: Submission) -> RunStatus:
    if submission.is_disqualified:
        return RunStatus.disqualified
    status = submission.status.upper()
    if status == "COMPLETED":
        if submission.is_correct is None:
            raise Rejected("status COMPLETED but is_correct is null")
        return RunStatus.passed if submission.is_correct else RunStatus.incorrect
    if status in ("FAILED", "ERROR"):
        return RunStatus.failed
    if status == "REJECTED":
        return RunStatus.disqualified
    if status in ("PENDING_RESULT", "PENDING", "QUEUED", "RUNNING"):
        return RunStatus.pending
    if status in ("CANCELLED", "CANCELED"):
        return RunStatus.cancelled
    raise Rejected(f"unknown status {submission.status!r}")


def observed_at(moment: datetime) -> str:
    """UTC, milliseconds, `Z`: 2026-08-16T10:44:34.394Z."""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def latency_ns(latency_ms: float) -> int:
    """Milliseconds as the source printed them → integer nanoseconds (decimal, no float noise)."""
    return int((Decimal(repr(latency_ms)) * 1_000_000).to_integral_value(ROUND_HALF_EVEN))


def normalize_submission(
    submission: Submission, kernel: KernelManifests, *, snapshot_digest: str | None = None, source_record: str | None = None
) -> RunManifests:
    """The ImplementationRevision and BenchmarkRun of one submission. Raises Rejected or Skipped.
    `source_record` (the record's fingerprint) goes with them to be kept on the run's document."""
    if submission.kernel_id != kernel.kernel_id:
        raise Rejected(f"kernel_id {submission.kernel_id} on a page of kernel {kernel.kernel_id}")
    status = run_status(submission)
    if submission.latency_ms is None:
        raise Skipped(f"no latency_ms (status {submission.status}): a run needs a value for its primary statistic")
    if submission.latency_ms < 0:
        raise Rejected(f"latency_ms is negative ({submission.latency_ms})")
    annotations = {}
    if submission.finished_at is not None:
        observed = submission.finished_at
    elif submission.submitted_at is not None:
        observed = submission.submitted_at
        annotations["observedAtFrom"] = "submitted_at (the source gave no finished_at)"
    else:
        raise Rejected("neither finished_at nor submitted_at is set")
    if submission.disqualification_reason:
        annotations["disqualificationReason"] = submission.disqualification_reason
    if snapshot_digest:
        annotations["sourceSnapshot"] = snapshot_digest

    stack = submission.evaluation_stack_version
    protocol, protocol_digest = protocol_for(stack)
    environment, environment_digest = environment_for(submission.gpu_type, stack)
    external_id = str(submission.id)
    try:
        implementation = make_manifest(
            "ImplementationRevision",
            f"sol-implementation-{submission.id}",
            {
                "name": submission.username,
                "project": submission.username,
                "revision": f"submission-{submission.id}",
                "definitionDigest": kernel.definition_digest,
                "source": {"source": SOURCE, "externalId": f"submission/{submission.id}"},
            },
            title=f"{submission.username} · submission {submission.id}",
        )
        run = make_manifest(
            "BenchmarkRun",
            f"sol-submission-{submission.id}",
            {
                "status": status.value,
                "timing": {
                    "latencyNs": {PRIMARY_STATISTIC: latency_ns(submission.latency_ms)},
                    "primaryStatistic": PRIMARY_STATISTIC,
                },
                "observedAt": observed_at(observed),
                "sourceNative": {
                    "source": SOURCE,
                    "metrics": {name: getattr(submission, name) for name in METRICS},
                    "benchmark": kernel.name,
                    "externalId": external_id,
                },
                "protocolDigest": protocol_digest,
                "workloadDigest": kernel.workload_digest,
                "environmentDigest": environment_digest,
                "implementationDigest": manifest_digest(implementation),
            },
            title=f"{submission.username} · {kernel.name} · {submission.gpu_type}",
            labels={"worker": submission.worker_id} if submission.worker_id else {},
            annotations=annotations,
        )
    except ValueError as error:
        raise Rejected(f"does not make a valid manifest: {error}") from None
    return RunManifests(external_id, kernel, run, implementation, protocol, environment, source_record)


# ---------------------------------------------------------------- the v1alpha1 format
#
# The same records as the seed system writes them (registry/format.py), so that each manifest has
# the digest the seed system computes: the seed record's page (tests/fixtures/run-record-37369.txt)
# and the catalog's operation and workload of kernel 51 are reproduced exactly. The mapping is
# learnt from SamMausberg/KernelIndex apps/web/src/server/import/sol/normalize.ts and
# import/shared.ts (read, not copied):
#
# | source                      | manifest                                                      |
# |-----------------------------|---------------------------------------------------------------|
# | kernel                      | OperationSpec (family from op_type or the first family tag;   |
# |                             | axes const/var/expr → constant/variable/derived; dtypes in    |
# |                             | the format's short names; no reference code)                  |
# | each kernel.workloads entry | WorkloadCase (every tensor's shape bound from the case axes)  |
# | kernel.workloads            | WorkloadSuite (the cases' axes; mean latency)                 |
# | submission.username         | SoftwareProject (an individual on SOL-ExecBench)              |
# | submission                  | ImplementationRevision (no source published: language         |
# |                             | unknown) + BenchmarkRun (suite mean latency, source metrics)  |
#
# Only passed submissions (COMPLETED, correct, not disqualified) make a run: the format's status
# names which way a run failed, and the leaderboard does not say.


SOURCE_URL = "https://research.nvidia.com/benchmarks/sol-execbench/api/kernels"
FORMAT_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "float64": "fp64",
    "double": "fp64",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e4m3": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
    "nvfp4": "nvfp4",
    "float4_e2m1": "fp4_e2m1",
}
SUBSET_TAGS = {"L1", "L2", "Quant", "FlashInfer-Bench"}  # difficulty subsets, not families
_AXIS_ROLES = {"const": "constant", "var": "variable", "expr": "derived"}


def kebab(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:100]


def format_dtype(dtype: str) -> str:
    return FORMAT_DTYPES.get(dtype, re.sub(r"[^a-z0-9_]", "_", dtype.lower()))


def _argument_key(name: str) -> str:
    lowered = re.sub(r"[^a-z0-9_]", "_", name.lower())
    return lowered if re.match(r"[a-z]", lowered) else f"x_{lowered}"


def _dimension(value: str | int) -> str | int:
    if isinstance(value, int):
        return value
    return int(value) if value.isdigit() else value.lower()


def family_of(kernel: Kernel) -> str:
    if kernel.op_type:
        return kebab(kernel.op_type)
    tag = next((t for t in kernel.tags if t not in SUBSET_TAGS and not t.startswith("model:")), None)
    return kebab(tag) if tag else "uncategorized"


def case_key(axes: dict[str, int]) -> str:
    """A case's identity when the source gives no uuid: 12 hex of sha256 over its axes as compact
    JSON with sorted keys."""
    text = json.dumps(dict(sorted(axes.items())), separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def evaluate_axis(expression: str, bindings: dict[str, int]) -> int:
    """The format's axis grammar: integers, axis names, + - * % // and parentheses."""
    tokens = re.findall(r"\d+|[a-z_][a-z0-9_]*|//|[+\-*%()]", expression)
    position = 0

    def take() -> str:
        nonlocal position
        if position >= len(tokens):
            raise Rejected(f"unexpected end of axis expression {expression!r}")
        position += 1
        return tokens[position - 1]

    def factor() -> int:
        token = take()
        if token == "(":
            value = total()
            if take() != ")":
                raise Rejected(f"missing ')' in axis expression {expression!r}")
            return value
        if token.isdigit():
            return int(token)
        if token not in bindings:
            raise Rejected(f"unbound axis {token!r} in {expression!r}")
        return bindings[token]

    def product() -> int:
        value = factor()
        while position < len(tokens) and tokens[position] in ("*", "//", "%"):
            op, rhs = take(), factor()
            value = value * rhs if op == "*" else value % rhs if op == "%" else value // rhs
        return value

    def total() -> int:
        value = product()
        while position < len(tokens) and tokens[position] in ("+", "-"):
            op, rhs = take(), product()
            value = value + rhs if op == "+" else value - rhs
        return value

    result = total()
    if position != len(tokens):
        raise Rejected(f"trailing tokens in axis expression {expression!r}")
    return result


def _format(kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> FormatManifest:
    try:
        return make_format_manifest(kind, metadata, spec)
    except ValueError as error:
        raise Rejected(f"does not make a valid {kind}: {error}") from None


@dataclass(frozen=True)
class FormatKernel:
    kernel_id: int
    name: str
    operation: FormatManifest
    cases: tuple[FormatManifest, ...]
    suite: FormatManifest
    operation_digest: str
    suite_digest: str
    input_dtypes: tuple[str, ...]
    title: str | None = None  # the source's display title of the kernel (kept beside the manifest)


def format_kernel(kernel: Kernel) -> FormatKernel:
    """OperationSpec, one WorkloadCase per case and the WorkloadSuite of a kernel."""

    def argument(name: str, tensor) -> dict[str, Any]:
        if not tensor.shape:  # null (or empty): a scalar
            return {"name": _argument_key(name), "scalar": {"dtype": format_dtype(tensor.dtype)}}
        shape = [_dimension(d) for d in tensor.shape]
        return {"name": _argument_key(name), "tensor": {"shape": shape, "dtype": format_dtype(tensor.dtype)}}

    axes = {}
    for name, axis in kernel.axes.items():
        spec: dict[str, Any] = {"role": _AXIS_ROLES[axis.type], "type": "integer"}
        if axis.type == "const" and axis.value is not None:
            spec["value"] = axis.value
        if axis.type == "expr" and axis.expression:
            spec["expression"] = axis.expression.lower()
        axes[name.lower()] = spec
    metadata = {"name": kebab(kernel.name), "title": kernel.name, "sourceRefs": [{"url": SOURCE_URL}]}
    if kernel.description:
        metadata["description"] = kernel.description
    operation = _format(
        "OperationSpec",
        metadata,
        {
            "family": family_of(kernel),
            "axes": axes,
            "inputs": [argument(n, t) for n, t in kernel.inputs.items()],
            "outputs": [argument(n, t) for n, t in kernel.outputs.items()],
            # The source states semantics only through its reference code: no stronger claim.
            "semantics": {"mutation": "none", "determinism": "unspecified"},
        },
    )
    operation_digest = format_digest(operation)

    cases = []
    for entry in kernel.workloads:
        entry_axes = {name.lower(): value for name, value in entry.axes.items()}
        bindings = dict(entry_axes)
        for name, axis in kernel.axes.items():
            if axis.type == "const" and axis.value is not None:
                bindings[name.lower()] = axis.value
        for name, axis in kernel.axes.items():
            if axis.type == "expr" and axis.expression and name.lower() not in bindings:
                bindings[name.lower()] = evaluate_axis(axis.expression.lower(), bindings)

        def bound(dimension: str | int, bindings=bindings) -> int:
            value = _dimension(dimension)
            if isinstance(value, int):
                return value
            if value not in bindings:
                raise Rejected(f"kernel {kernel.id}: unbound axis {value!r} in a case")
            return bindings[value]

        tensors = {
            _argument_key(name): {"shape": [bound(d) for d in tensor.shape], "dtype": format_dtype(tensor.dtype)}
            for name, tensor in kernel.inputs.items()
            if tensor.shape
        }
        title = f"{kernel.name} · " + ", ".join(f"{axis}={value}" for axis, value in entry.axes.items())
        cases.append(
            _format(
                "WorkloadCase",
                {"name": f"{kebab(kernel.name)}-{case_key(entry.axes)[:8]}", "title": title if len(title) <= 200 else title[:199] + "…"},
                {
                    "operationSpecDigest": operation_digest,
                    "axes": entry_axes,
                    "tensors": tensors,
                    # The API publishes no per-case tolerances: the comparator names the stack.
                    "correctness": {"comparator": COMPARATOR},
                },
            )
        )
    suite = _format(
        "WorkloadSuite",
        {"name": f"{kebab(kernel.name)}-suite", "title": f"SOL workload suite: {kernel.name}"},
        {
            "operationSpecDigest": operation_digest,
            "cases": [
                {"externalId": case_key(entry.axes), "axes": {name.lower(): value for name, value in entry.axes.items()}}
                for entry in kernel.workloads
            ],
            "correctness": {"comparator": COMPARATOR, "description": SUITE_CORRECTNESS},
            "aggregation": {"metric": "latency", "statistic": PRIMARY_STATISTIC},
        },
    )
    dtypes = tuple(format_dtype(t.dtype) for t in kernel.inputs.values())
    return FormatKernel(
        kernel.id, kernel.name, operation, tuple(cases), suite, operation_digest, format_digest(suite), dtypes, kernel.title
    )


@cache
def format_protocol(stack_version: str) -> FormatManifest:
    return _format(
        "BenchmarkProtocol",
        {"name": f"sol-execbench-leaderboard-{kebab(stack_version)}", "title": f"{HARNESS} {stack_version}"},
        {
            "harness": {"name": HARNESS, "version": stack_version},
            # The leaderboard publishes a suite-mean latency; no further timing method is public.
            "measurement": {"timer": "harness_reported", "primaryStatistic": PRIMARY_STATISTIC},
            "correctness": {"reference": "definition reference implementation", "comparator": COMPARATOR},
            "comparability": {"family": FAMILY, "notes": COMPARABILITY_NOTES},
        },
    )


@cache
def format_environment(gpu_type: str, stack_version: str) -> FormatManifest:
    if gpu_type not in GPUS:
        raise Rejected(f"gpu_type {gpu_type!r} is not a GPU we know the architecture of")
    vendor, product, architecture = GPUS[gpu_type]
    return _format(
        "ExecutionEnvironment",
        {"name": f"sol-execbench-{kebab(gpu_type)}-{kebab(stack_version)}", "title": f"SOL-ExecBench {product}, stack {stack_version}"},
        {
            "hardware": {"vendor": vendor, "product": product, "architecture": architecture},
            "software": {"libraries": {"evaluation_stack": stack_version}},
        },
    )


@dataclass(frozen=True)
class FormatRun:
    """A passed submission's run and everything it references, in the format."""

    external_id: str
    kernel: FormatKernel
    project: FormatManifest
    implementation: FormatManifest
    protocol: FormatManifest
    environment: FormatManifest
    run: FormatManifest


def format_submission(submission: Submission, kernel: FormatKernel) -> FormatRun:
    """The manifests of one submission; Skipped unless it passed, Rejected when inconsistent."""
    if submission.kernel_id != kernel.kernel_id:
        raise Rejected(f"kernel_id {submission.kernel_id} on a page of kernel {kernel.kernel_id}")
    status = run_status(submission)
    if status is not RunStatus.passed:
        raise Skipped(f"status {status.value}: only passed submissions make a run in the format")
    if submission.latency_ms is None or submission.latency_ms < 0:
        raise Rejected(f"a passed submission with latency_ms {submission.latency_ms}")
    observed = submission.finished_at or submission.submitted_at
    if observed is None:
        raise Rejected("neither finished_at nor submitted_at is set")
    stack = submission.evaluation_stack_version
    protocol, environment = format_protocol(stack), format_environment(submission.gpu_type, stack)
    _, product, architecture = GPUS[submission.gpu_type]
    project = _format(
        "SoftwareProject",
        {"name": f"sol-user-{kebab(submission.username)}"},
        {"name": submission.username, "host": {"kind": "other", "id": f"sol-execbench/user/{submission.username}"}},
    )
    implementation = _format(
        "ImplementationRevision",
        {
            "name": f"sol-submission-{submission.id}",
            "title": f"{submission.username} · {kernel.name}",
            "authors": [{"name": submission.username}],
        },
        {
            # The leaderboard publishes no source: an explicit no-source, unknown-licence revision.
            "projectRevision": {"version": f"submission-{submission.id}"},
            "operation": {"specDigest": kernel.operation_digest},
            "callable": {"language": "unknown"},
            "support": {"hardwareArchitectures": [architecture], "productsTested": [product], "dtypes": list(kernel.input_dtypes)},
            "licensing": {},
        },
    )
    metrics = {"latency_ms": submission.latency_ms}
    for name in ("sol_score", "avg_speedup", "fast_1_count", "fast_1_total"):
        if getattr(submission, name) is not None:
            metrics[name] = getattr(submission, name)
    metadata: dict[str, Any] = {
        "name": f"sol-submission-{submission.id}",
        "title": f"{submission.username} · {kernel.name} · {submission.gpu_type}",
    }
    if submission.worker_id:
        metadata["labels"] = {"worker": submission.worker_id}
    run = _format(
        "BenchmarkRun",
        metadata,
        {
            "implementationDigest": format_digest(implementation),
            "workloadDigest": kernel.suite_digest,
            "protocolDigest": format_digest(protocol),
            "environmentDigest": format_digest(environment),
            "status": "passed",
            # The suite mean in integer nanoseconds (half up, as the seed rounds); the source's
            # milliseconds stay in sourceNative.metrics.
            "timing": {
                "primaryStatistic": PRIMARY_STATISTIC,
                "latencyNs": {PRIMARY_STATISTIC: math.floor(submission.latency_ms * 1e6 + 0.5)},
            },
            "sourceNative": {"source": SOURCE, "benchmark": kernel.name, "externalId": str(submission.id), "metrics": metrics},
            "observedAt": observed_at(observed),
        },
    )
    return FormatRun(str(submission.id), kernel, project, implementation, protocol, environment, run)
