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
from registry.manifests import Manifest, RunStatus, make_manifest

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
STATISTIC_NOTES = {
    "v1.1": "stack v1.1 computes the median of CUPTI spans although the documentation says mean",
}
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
