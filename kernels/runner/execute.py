"""Executing one benchmark job on this host and signing the result.

The job names a definition, an implementation and a protocol by digest (the KernelIndex v1alpha1
format's, kernels/harness/format_manifests.py); the runner executes only
code from its own `kernels/` registry whose code digest is the job's (a different revision is
refused with the commit that holds the job's code). Nothing in the job is ever executed.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.dsse import BENCHMARK_RUN_PREDICATE, sign_envelope, statement_bytes
from registry.format import FormatError, FormatManifest, format_digest, parse_format_manifest


class JobFailure(Exception):
    """The job cannot succeed here; `code` is a BenchmarkJob failure code."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Outcome:
    envelope: dict[str, Any]
    run: FormatManifest
    environment: FormatManifest


def _log(message: str) -> None:
    # The harness logs a traceback after a failing case; the case line before it already names
    # the exception, and a runner's output never shows a traceback.
    if not message.startswith("Traceback (most recent call last)"):
        print(message, file=sys.stderr, flush=True)


def _find_operation(definition_digest: str):
    from kernels.harness import format_manifests
    from kernels.operations import OPERATIONS

    for op in OPERATIONS.values():
        if format_digest(format_manifests.operation(op)) == definition_digest:
            return op
    raise JobFailure("runtime_error", f"this runner has no operation with definition digest {definition_digest}")


def _find_implementation(wanted: dict[str, Any]):
    """This runner's entry for the job's implementation, if it holds the same code (the job's
    `code.digest`). Otherwise the refusal names the commit that holds the job's code
    (registry/code.py), for the operator to check out."""
    from kernels.implementations import IMPLEMENTATIONS

    name, digest, code = wanted["name"], wanted["digest"], wanted.get("code") or {}
    for impl in IMPLEMENTATIONS.values():
        if impl.manifest_name() != name:
            continue
        held = impl.code_digest()
        if held == code.get("digest"):
            return impl
        where = f"check out commit {code['commit']} to run it" if code.get("commit") else "no commit is recorded for it"
        raise JobFailure(
            "compile_error",
            f"this runner's {name} is another revision than {digest}: it holds code {held}, the job's code is "
            f"{code.get('digest', 'not named')}; {where}",
        )
    raise JobFailure("runtime_error", f"this runner's kernels registry has no implementation {name!r}")


def _settings_for(protocol: FormatManifest):
    """Harness settings that reproduce the job's protocol exactly (same digest), or a failure."""
    from kernels.harness import format_manifests
    from kernels.harness.protocol import Settings

    spec = protocol.spec.to_json()
    labels = protocol.metadata.to_json().get("labels") or {}
    device = "cpu" if protocol.metadata.name.endswith("-cpu") else "cuda"
    rounds = labels.get("rounds", "5")
    settings = Settings(
        device=device,
        rounds=int(rounds) if rounds.isdigit() else 5,
        warmups=spec["measurement"].get("warmupIterations") or 0,
        samples=spec["measurement"].get("samples") or 1,
    )
    if format_digest(format_manifests.protocol(settings)) != format_digest(protocol):
        raise JobFailure("runtime_error", "this runner's harness cannot measure under the job's protocol (its digest differs)")
    return settings


def _shapes(workload: FormatManifest) -> list[tuple[int, int]]:
    try:
        return [(case["axes"]["batch_size"], case["axes"]["seq_len"]) for case in workload.spec.to_json()["cases"]]
    except KeyError as missing:
        raise JobFailure("runtime_error", f"the workload's cases lack the axis {missing}") from None


def _require_passed(run: FormatManifest | None, record) -> None:
    """Only a run whose every case passed is signed; otherwise the job fails with the code the
    cases call for (an exception in a case is a runtime error, a wrong result is numerical)."""
    errors = [f"case {c.index}: {c.error}" for c in record.cases if c.error]
    if run is None or errors:
        raise JobFailure("runtime_error", ("; ".join(errors) or "no case produced a measurement")[:2000])
    status = run.spec.to_json()["status"]
    if status != "passed":
        wrong = [f"case {c.index}: {c.check.failure()}" for c in record.cases if c.check is not None and not c.check.passed]
        raise JobFailure("incorrect_numerical", ("; ".join(wrong) or f"the run is {status}")[:2000])


def execute_job(job: dict[str, Any], signing_key: Ed25519PrivateKey, log: Callable[[str], None] = _log) -> Outcome:
    """Run the job's implementation (and the reference, for T_b) and sign the run manifest (the
    KernelIndex v1alpha1 format)."""
    from kernels.harness import format_manifests
    from kernels.harness.report import run_manifest
    from kernels.harness.run import run_benchmark
    from kernels.implementations import get

    try:
        workload = parse_format_manifest(job["workload"])
        protocol = parse_format_manifest(job["protocol"])
    except (FormatError, KeyError) as error:
        raise JobFailure("runtime_error", f"the job document is not valid: {error}") from None
    if workload.kind != "WorkloadSuite":
        raise JobFailure("runtime_error", f"the job's workload is a {workload.kind}; the harness measures a WorkloadSuite")
    op = _find_operation(job["definition"]["digest"])
    impl = _find_implementation(job["implementation"])
    settings = _settings_for(protocol)
    shapes = _shapes(workload)

    reference = get("reference")
    impls = [reference] if impl.name == reference.name else [reference, impl]
    log(f"job {job['jobId']}: {impl.name} on {len(shapes)} cases, {settings.device}")
    records, _product = run_benchmark(op, impls, shapes, settings, log=log)
    record = records[impl.name]
    if record.load_error:
        raise JobFailure("compile_error", record.load_error)

    environment, operating_system = format_manifests.environment(settings.device)
    product = environment.spec.to_json()["hardware"]["product"]
    if product != job["gpu"]:
        raise JobFailure("runtime_error", f"this host is {product}, the job asks for {job['gpu']}")
    observed = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    run = run_manifest(
        record,
        records[reference.name],
        digests={
            "workload": format_digest(workload),
            "implementation": job["implementation"]["digest"],
            "protocol": format_digest(protocol),
            "environment": format_digest(environment),
        },
        suite=workload,
        observed_at=observed,
        env_slug=environment.metadata.name.removeprefix("env-")[:40],
        operating_system=operating_system,
    )
    _require_passed(run, record)
    payload = statement_bytes(
        run.metadata.name,
        format_digest(run),
        BENCHMARK_RUN_PREDICATE,
        {"job": job["jobId"], "manifests": [run.to_json(), environment.to_json()]},
    )
    return Outcome(envelope=sign_envelope(payload, signing_key), run=run, environment=environment)
