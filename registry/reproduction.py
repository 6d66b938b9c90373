"""The reproduction predicate: a partner's own measurement of a run, as signed in an attestation.

An in-toto Statement v1 whose subject is the run's digest and whose predicateType is
`https://kernelindex.dev/attestation/reproduction/v1` carries this predicate. The model is strict
(an unknown field is an error naming it); durations are integer nanoseconds.

    {
      "protocol":    {"name": "my-harness", "version": "2.1"}   (or {"digest": "sha256:..."}),
      "environment": {"gpu": "NVIDIA H200", "architecture": "sm_90", "driver": "580.65",
                      "cuda": "13.0", "libraries": {"torch": "2.11"}},
      "cases":       [{"index": 0, "latencyNs": 20311, "status": "passed", "samplesNs": [...]}, ...],
      "aggregate":   {"statistic": "median", "valueNs": 20311},
      "measuredAt":  "2026-12-01T10:00:00Z",            (optional)
      "notes":       "free text, at most 2000 chars"    (optional)
    }
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from registry.manifests import Digest, Strict

MAX_CASES = 4096
MAX_SAMPLES = 10_000
Name = Annotated[str, Field(min_length=1, max_length=200)]
LibraryName = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_+-][A-Za-z0-9_.+-]*$")]
PositiveNs = Annotated[int, Field(gt=0, lt=2**63)]


class ReproductionProtocol(Strict):
    """The protocol the partner measured under: a name and version, or a registered digest."""

    name: Name | None = None
    version: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    digest: Digest | None = None
    timer: Annotated[str, Field(max_length=200)] | None = None

    @model_validator(mode="after")
    def _named(self) -> ReproductionProtocol:
        if self.digest is None and (self.name is None or self.version is None):
            raise ValueError("give name and version, or digest")
        return self


class ReproductionEnvironment(Strict):
    gpu: Name = Field(description='GPU product, e.g. "NVIDIA H200".')
    architecture: Annotated[str, Field(min_length=1, max_length=50)]
    driver: Annotated[str, Field(max_length=100)] | None = None
    cuda: Annotated[str, Field(max_length=100)] | None = None
    host: Annotated[str, Field(max_length=200)] | None = None
    libraries: dict[LibraryName, Annotated[str, Field(max_length=200)]] = Field(default_factory=dict, max_length=50)


class ReproductionCase(Strict):
    index: Annotated[int, Field(ge=0)]
    latencyNs: PositiveNs
    status: Literal["passed", "incorrect", "failed"] = "passed"
    samplesNs: list[PositiveNs] | None = Field(default=None, max_length=MAX_SAMPLES)


class ReproductionAggregate(Strict):
    statistic: Annotated[str, Field(min_length=1, max_length=50)]
    valueNs: PositiveNs


class ReproductionPredicate(Strict):
    protocol: ReproductionProtocol
    environment: ReproductionEnvironment
    cases: list[ReproductionCase] = Field(min_length=1, max_length=MAX_CASES)
    aggregate: ReproductionAggregate
    measuredAt: datetime | None = None
    notes: Annotated[str, Field(max_length=2000)] | None = None

    @field_validator("cases")
    @classmethod
    def _distinct(cls, cases: list[ReproductionCase]) -> list[ReproductionCase]:
        seen: set[int] = set()
        for case in cases:
            if case.index in seen:
                raise ValueError(f"case index {case.index} appears twice")
            seen.add(case.index)
        return cases

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=False)


class PredicateError(ValueError):
    """The predicate does not match the schema; `problems` holds (field path, reason) pairs."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{path}: {reason}" for path, reason in problems))


def parse_predicate(data: Any) -> ReproductionPredicate:
    try:
        return ReproductionPredicate.model_validate(data)
    except ValidationError as error:
        problems = []
        for item in error.errors():
            path = ".".join(str(part) for part in ("predicate", *item["loc"]))
            reason = "unknown field" if item["type"] == "extra_forbidden" else item["msg"]
            problems.append((path, reason))
        raise PredicateError(problems) from None


def signed_reproduction(run_digest: str, run_name: str, predicate: ReproductionPredicate, private_key) -> dict[str, Any]:
    """The DSSE envelope (as a dict) of an in-toto statement about `run_digest`, signed with an
    ed25519 private key: what `kernelindex attest` submits."""
    from registry.dsse import REPRODUCTION_PREDICATE, sign_envelope, statement_bytes

    payload = statement_bytes(run_name, run_digest, REPRODUCTION_PREDICATE, predicate.to_json())
    return sign_envelope(payload, private_key)
