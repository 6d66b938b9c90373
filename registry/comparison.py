"""Comparison groups: which runs may be ranked against each other.

The key covers the definition, the workload suite, the protocol's comparability family and
version, and the GPU (product and architecture, and the form factor where the environment names
one: GPU MODE's runners B200 and B200_Nebius are two environments of one product). The
implementation is deliberately not part of it: implementations are what a group compares.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from registry.digest import digest_of
from registry.manifests import BenchmarkProtocolSpec, ExecutionEnvironmentSpec


@dataclass(frozen=True)
class GroupIdentity:
    definitionDigest: str
    workloadDigest: str
    family: str
    familyVersion: str
    gpuProduct: str
    gpuArchitecture: str
    gpuFormFactor: str | None = None

    def key(self) -> str:
        return _group_key(self)


@lru_cache(maxsize=4096)  # every run of a batch asks for its group's key; groups are few
def _group_key(identity: GroupIdentity) -> str:
    return digest_of(
        {
            "definitionDigest": identity.definitionDigest,
            "workloadDigest": identity.workloadDigest,
            "comparability": {"family": identity.family, "version": identity.familyVersion},
            "environment": {"product": identity.gpuProduct, "architecture": identity.gpuArchitecture}
            # Only where named, so that the keys of environments without one stay as they were.
            | ({"formFactor": identity.gpuFormFactor} if identity.gpuFormFactor else {}),
        }
    )


def environment_equivalence(environment: ExecutionEnvironmentSpec) -> tuple[str, str, str | None]:
    """Two environments are equivalent for ranking when the GPU product, architecture and form
    factor match; driver and library versions are recorded but do not split a group."""
    hardware = environment.hardware
    return hardware.product, hardware.architecture, hardware.formFactor


def group_identity(
    *,
    definition_digest: str,
    workload_digest: str,
    protocol: BenchmarkProtocolSpec,
    environment: ExecutionEnvironmentSpec,
) -> GroupIdentity:
    product, architecture, form_factor = environment_equivalence(environment)
    return GroupIdentity(
        definitionDigest=definition_digest,
        workloadDigest=workload_digest,
        family=protocol.comparability.family,
        familyVersion=protocol.comparability_version,
        gpuProduct=product,
        gpuArchitecture=architecture,
        gpuFormFactor=form_factor,
    )


# ---------------------------------------------------------------- cohorts, as the seed keys them
#
# The seed system (SamMausberg/KernelIndex, apps/web/src/server/policy/comparison.ts and the
# publication step in server/catalog/publication.ts) makes a run's cohort from six parts: the
# operation (the workload's operationSpecDigest), the workload, the protocol key (the protocol's
# own digest), the environment key (the environment's digest), the correctness key (a digest of
# the workload's correctness policy) and the metric key of the run's primary measurement. Every
# run of its catalog export carries these keys; bench/verify_format.py recomputes them all.


def protocol_key(protocol_digest: str) -> str:
    """Protocols are compared by identity: the key is the protocol manifest's digest."""
    return protocol_digest


def environment_key(environment_digest: str) -> str:
    """Environments too: the key is the environment manifest's digest."""
    return environment_digest


def correctness_key(correctness: Any) -> str:
    """Digest of the workload's correctness policy (`spec.correctness`, as JSON)."""
    return digest_of({"correctness": correctness})


def metric_key(metric: str, statistic: str, unit: str) -> str:
    """A measurement's definition, e.g. `latency:median:ns`."""
    return f"{metric}:{statistic}:{unit}"


@dataclass(frozen=True)
class Primary:
    """A run's primary measurement: its latency statistic when it has timing, else its first
    published measurement (the seed's rule)."""

    metric: str
    statistic: str
    unit: str
    value: float
    sampleCount: int | None

    @property
    def key(self) -> str:
        return metric_key(self.metric, self.statistic, self.unit)


def primary_measurement(run_spec: dict[str, Any]) -> Primary | None:
    """From a BenchmarkRun spec (as JSON): for timing, the mean when the primary statistic is
    the mean (else the median), falling back to the other; else the first measurement."""
    timing = run_spec.get("timing")
    if timing is not None:
        latency = timing["latencyNs"]
        first, second = ("mean", "median") if timing["primaryStatistic"] == "mean" else ("median", "mean")
        value = latency.get(first, latency.get(second))
        if value is not None:
            return Primary("latency", timing["primaryStatistic"], "ns", value, timing.get("samples"))
    measurements = run_spec.get("measurements") or []
    if measurements:
        m = measurements[0]
        return Primary(m["metric"], m["statistic"], m["unit"], m["value"], m.get("sampleCount"))
    return None


@dataclass(frozen=True)
class Cohort:
    """The keys of a run's comparison cohort; `comparisonKey` is the cohort's identity."""

    operationDigest: str
    workloadDigest: str
    protocolKey: str
    environmentKey: str
    correctnessKey: str
    metricKey: str

    @property
    def comparisonKey(self) -> str:
        return comparison_key(self)


@lru_cache(maxsize=4096)
def comparison_key(cohort: Cohort) -> str:
    return digest_of(
        {
            "v": 1,
            "operation": cohort.operationDigest,
            "workload": cohort.workloadDigest,
            "protocol": cohort.protocolKey,
            "environment": cohort.environmentKey,
            "correctness": cohort.correctnessKey,
            "metric": cohort.metricKey,
        }
    )


def cohort_of(*, run_spec: dict[str, Any], workload_spec: dict[str, Any]) -> Cohort:
    """The cohort of a run (its spec as JSON) on its workload (WorkloadCase or WorkloadSuite
    spec as JSON). The run's own protocol and environment digests are the keys of those."""
    primary = primary_measurement(run_spec)
    return Cohort(
        operationDigest=workload_spec["operationSpecDigest"],
        workloadDigest=run_spec["workloadDigest"],
        protocolKey=protocol_key(run_spec["protocolDigest"]),
        environmentKey=environment_key(run_spec["environmentDigest"]),
        correctnessKey=correctness_key(workload_spec["correctness"]),
        metricKey=primary.key if primary else "none",
    )
