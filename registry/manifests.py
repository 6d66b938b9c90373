"""Manifest models: the `kernelindex.dev/v1alpha1` envelope and the spec of each kind.

Every public object is `{apiVersion, kind, metadata, spec}`. `spec` carries identity (it is what
the digest covers); `metadata` is editorial. Models are strict: an unknown field is an error that
names the field, so a typo never silently drops data.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from registry.limits import MAX_EXTERNAL_ID_CHARS, MAX_LABEL_CHARS, MAX_LABELS, MAX_TITLE_CHARS, LimitError, check_limits

API_VERSION = "kernelindex.dev/v1alpha1"

Digest = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
# Source-native values are kept as the source gave them: scalars only.
Scalar = bool | int | float | str | None
# An axis value or a literal tensor dimension is a size, so at least 1: a zero or negative one
# describes no workload anyone could run, yet would be ranked like a real case.
Size = Annotated[int, Field(gt=0)]


def _positive_dimension(dimension: str | int) -> str | int:
    if isinstance(dimension, int) and dimension <= 0:
        raise PydanticCustomError("greater_than", "Input should be greater than 0")
    return dimension


# A shape entry: an axis name or a literal Size, checked after the union so that an error names
# the dimension once (not once per member of the union).
Dimension = Annotated[str | int, AfterValidator(_positive_dimension)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


# ---------------------------------------------------------------- envelope


LabelText = Annotated[str, Field(max_length=MAX_LABEL_CHARS)]


class Metadata(Strict):
    name: Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[a-z0-9][a-z0-9._-]*$")]
    title: Annotated[str, Field(max_length=MAX_TITLE_CHARS)] | None = None
    labels: Annotated[dict[LabelText, LabelText], Field(max_length=MAX_LABELS)] = Field(default_factory=dict)
    annotations: Annotated[dict[LabelText, str], Field(max_length=MAX_LABELS)] = Field(default_factory=dict)


# ---------------------------------------------------------------- OperationSpec


class AxisType(str, Enum):
    const = "const"
    var = "var"
    expr = "expr"


class Axis(Strict):
    type: AxisType
    value: Size | None = None
    expression: str | None = None
    description: str | None = None


class TensorSpec(Strict):
    # None is a scalar; otherwise axis names or literal sizes.
    shape: list[Dimension] | None
    dtype: str
    description: str | None = None


class SourceReference(Strict):
    """Where a definition (or its reference code) came from, by digest only when not ours."""

    source: str
    benchmark: str | None = None
    externalId: Annotated[str, Field(max_length=MAX_EXTERNAL_ID_CHARS)] | None = None
    referenceDigest: Digest | None = None
    url: str | None = None


class DefinitionRelation(Strict):
    """A definition that computes the same math as another one (e.g. ours vs the source's)."""

    relation: Literal["same_math", "subset_of", "superset_of"]
    definitionDigest: Digest | None = None
    source: str | None = None
    benchmark: str | None = None
    notes: str | None = None


class OperationSpecSpec(Strict):
    name: str
    description: str
    axes: dict[str, Axis]
    inputs: dict[str, TensorSpec]
    outputs: dict[str, TensorSpec]
    tags: list[str] = Field(default_factory=list)
    semantics: str | None = None
    reference: SourceReference | None = None
    relations: list[DefinitionRelation] = Field(default_factory=list)


# ---------------------------------------------------------------- WorkloadSuite


class WorkloadCase(Strict):
    index: int = Field(ge=0)
    axes: dict[str, Size]
    # e.g. SOL-ExecBench's per-case B200 SOL and baseline latencies, as the source gave them.
    sourceNative: dict[str, Scalar] = Field(default_factory=dict)


class WorkloadCorrectness(Strict):
    comparator: str
    description: str | None = None


class WorkloadSuiteSpec(Strict):
    definitionDigest: Digest
    cases: list[WorkloadCase] = Field(min_length=1)
    aggregation: str = "mean latency"
    correctness: WorkloadCorrectness | None = None
    source: SourceReference | None = None

    @field_validator("cases")
    @classmethod
    def _cases_indexed_in_order(cls, cases: list[WorkloadCase]) -> list[WorkloadCase]:
        for position, case in enumerate(cases):
            if case.index != position:
                raise ValueError(f"case at position {position} has index {case.index}")
        return cases


# ---------------------------------------------------------------- ImplementationRevision


class CodeReference(Strict):
    """Enough to fetch the exact code again; its presence is what makes a run reproducible.
    With `commit`, `paths` and `variant`, `digest` can be recomputed from git (registry/code.py)."""

    repository: str | None = None
    commit: str | None = None
    path: str | None = None
    paths: list[str] | None = None
    entryPoint: str | None = None
    variant: dict[str, Any] | None = None
    digest: Digest | None = None
    language: str | None = None


class ImplementationRevisionSpec(Strict):
    name: str
    project: str
    revision: str
    definitionDigest: Digest
    source: SourceReference | None = None
    code: CodeReference | None = None
    # GPU architectures the code runs on, as patterns ("sm_90", "sm_100", "sm_*", "*"); absent on
    # revisions published before they were declared (registry/architectures.py: legacy rule).
    architectures: list[Annotated[str, Field(pattern=r"^(\*|sm_[0-9*]+[a-z]?)$")]] | None = None


# ---------------------------------------------------------------- BenchmarkProtocol


class Harness(Strict):
    name: str
    version: str


class ProtocolCorrectness(Strict):
    reference: str
    comparator: str
    rounds: int | None = None
    atol: float | None = None
    rtol: float | None = None
    minMatchedRatio: float | None = None
    policy: str | None = None  # None: the source did not publish its policy


class Measurement(Strict):
    timer: str
    primaryStatistic: str
    warmups: int | None = None
    samples: int | None = None
    l2Flush: bool | None = None
    notes: str | None = None


class Comparability(Strict):
    family: str
    notes: str | None = None
    # Versions of the family are comparable only among themselves; defaults to harness version.
    version: str | None = None


class BenchmarkProtocolSpec(Strict):
    harness: Harness
    correctness: ProtocolCorrectness
    measurement: Measurement
    comparability: Comparability

    @property
    def comparability_version(self) -> str:
        return self.comparability.version or self.harness.version


# ---------------------------------------------------------------- ExecutionEnvironment


class Hardware(Strict):
    vendor: str
    product: str
    architecture: str
    # v1alpha1's hardware.formFactor, e.g. "runner:B200_Nebius": a host that is its own
    # environment although the GPU is the same product (registry/comparison.py).
    formFactor: str | None = Field(default=None, max_length=100)
    count: int | None = None
    memoryBytes: int | None = None


class Software(Strict):
    driver: str | None = None
    cuda: str | None = None
    os: str | None = None
    libraries: dict[str, str] = Field(default_factory=dict)


class ExecutionEnvironmentSpec(Strict):
    hardware: Hardware
    software: Software = Field(default_factory=Software)


# ---------------------------------------------------------------- BenchmarkRun


class RunStatus(str, Enum):
    passed = "passed"
    incorrect = "incorrect"
    failed = "failed"
    disqualified = "disqualified"
    pending = "pending"
    cancelled = "cancelled"


class Timing(Strict):
    primaryStatistic: str
    # Integer nanoseconds, keyed by statistic name ("mean", "median", "geomean", ...).
    latencyNs: dict[str, int]

    @field_validator("latencyNs")
    @classmethod
    def _non_negative(cls, values: dict[str, int]) -> dict[str, int]:
        for name, value in values.items():
            if value < 0:
                raise ValueError(f"latencyNs.{name} must be >= 0")
        return values


class SourceNative(Strict):
    source: str
    benchmark: str | None = None
    externalId: Annotated[str, Field(max_length=MAX_EXTERNAL_ID_CHARS)]
    metrics: dict[str, Scalar] = Field(default_factory=dict)


class OutputCheck(Strict):
    matchedRatio: float
    maxAbsError: float | None = None
    passed: bool


class CaseCorrectness(Strict):
    rounds: int
    passed: bool
    outputs: dict[str, OutputCheck] = Field(default_factory=dict)
    failure: str | None = None


class CaseResult(Strict):
    index: int = Field(ge=0)
    axes: dict[str, Size]
    status: RunStatus
    latencyNs: dict[str, int] = Field(default_factory=dict)
    samplesNs: list[int] = Field(default_factory=list)
    # How many timed runs the case's statistics summarize, when only statistics are published
    # (e.g. GPU MODE's mean/std/err/best/worst over `runs`).
    sampleCount: int | None = Field(default=None, ge=1)
    referenceLatencyNs: int | None = None
    eagerLatencyNs: int | None = None
    solNs: int | None = None
    solScore: float | None = None
    correctness: CaseCorrectness | None = None


class Artifact(Strict):
    name: str
    mediaType: str | None = None
    uri: str | None = None
    digest: Digest | None = None


class BenchmarkRunSpec(Strict):
    status: RunStatus
    timing: Timing
    observedAt: str
    protocolDigest: Digest
    workloadDigest: Digest
    environmentDigest: Digest
    implementationDigest: Digest
    sourceNative: SourceNative | None = None
    cases: list[CaseResult] = Field(default_factory=list)
    aggregates: dict[str, Scalar] = Field(default_factory=dict)
    artifacts: list[Artifact] = Field(default_factory=list)

    @field_validator("observedAt")
    @classmethod
    def _iso_utc(cls, value: str) -> str:
        if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z", value):
            raise ValueError("must be an ISO 8601 UTC time like 2026-08-16T10:44:34.394Z")
        return value

    @field_validator("timing")
    @classmethod
    def _primary_present(cls, timing: Timing) -> Timing:
        if timing.primaryStatistic not in timing.latencyNs:
            raise ValueError(f"latencyNs has no value for primaryStatistic {timing.primaryStatistic!r}")
        return timing


# ---------------------------------------------------------------- Attestation


class AttestationAuthor(Strict):
    name: str
    keyId: str | None = None


class AttestationSpec(Strict):
    """A signed statement about a run (a reproduction). Never changes the run's evidence level."""

    subjectDigest: Digest
    predicateType: str
    author: AttestationAuthor
    verified: bool
    attestedAt: str
    measurement: dict[str, Any] = Field(default_factory=dict)
    envelope: dict[str, Any]


# ---------------------------------------------------------------- the kinds

SPEC_BY_KIND: dict[str, type[Strict]] = {
    "OperationSpec": OperationSpecSpec,
    "WorkloadSuite": WorkloadSuiteSpec,
    "ImplementationRevision": ImplementationRevisionSpec,
    "BenchmarkProtocol": BenchmarkProtocolSpec,
    "ExecutionEnvironment": ExecutionEnvironmentSpec,
    "BenchmarkRun": BenchmarkRunSpec,
    "Attestation": AttestationSpec,
}
Kind = Literal[
    "OperationSpec",
    "WorkloadSuite",
    "ImplementationRevision",
    "BenchmarkProtocol",
    "ExecutionEnvironment",
    "BenchmarkRun",
    "Attestation",
]


class Manifest(Strict):
    apiVersion: Literal["kernelindex.dev/v1alpha1"]
    kind: Kind
    metadata: Metadata
    spec: Any

    def identity(self) -> dict[str, Any]:
        """What the digest covers: {apiVersion, kind, spec} as plain JSON."""
        return {"apiVersion": self.apiVersion, "kind": self.kind, "spec": spec_json(self.spec)}

    def to_json(self) -> dict[str, Any]:
        return {
            "apiVersion": self.apiVersion,
            "kind": self.kind,
            "metadata": self.metadata.model_dump(mode="json", exclude_defaults=True),
            "spec": spec_json(self.spec),
        }


def spec_json(spec: BaseModel) -> dict[str, Any]:
    # Defaults are left out so that a manifest written by hand and the same manifest parsed and
    # re-serialized have one canonical form (and one digest).
    return spec.model_dump(mode="json", exclude_defaults=True)


class ManifestError(ValueError):
    """A manifest failed validation; `problems` holds (field path, reason) pairs."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{path}: {reason}" for path, reason in problems))


def _problems(error: ValidationError, prefix: str) -> list[tuple[str, str]]:
    out = []
    for item in error.errors():
        path = ".".join(str(part) for part in (prefix, *item["loc"]) if part != "")
        reason = item["msg"]
        if item["type"] == "extra_forbidden":
            reason = "unknown field"
        out.append((path, reason))
    return out


def parse_manifest(data: Any) -> Manifest:
    """Validate a manifest of any kind; raise ManifestError naming each bad field."""
    if not isinstance(data, dict):
        raise ManifestError([("", "a manifest must be a JSON object")])
    try:
        check_limits(data)
    except LimitError as error:
        raise ManifestError([(error.path, error.reason)]) from None
    try:
        envelope = Manifest.model_validate({**data, "spec": data.get("spec")})
    except ValidationError as error:
        raise ManifestError(_problems(error, "")) from None
    spec_model = SPEC_BY_KIND[envelope.kind]
    if not isinstance(data.get("spec"), dict):
        raise ManifestError([("spec", "must be an object")])
    try:
        spec = spec_model.model_validate(data["spec"])
    except ValidationError as error:
        raise ManifestError(_problems(error, "spec")) from None
    return envelope.model_copy(update={"spec": spec})


def make_manifest(kind: str, name: str, spec: dict[str, Any] | BaseModel, **metadata: Any) -> Manifest:
    """Build and validate a manifest in code (loaders, the harness)."""
    if isinstance(spec, BaseModel):
        spec = spec_json(spec)
    return parse_manifest({"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name, **metadata}, "spec": spec})
