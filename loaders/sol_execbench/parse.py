"""Parse SOL-ExecBench responses into typed records.

Strict about the fields the loader uses (present, right type; `null` only where the source
really sends it), blind to everything else: fields the source adds later are ignored here and
kept verbatim in the source snapshot, never a failure. Every response is wrapped as
`{"data": ...}`.

A page of submissions is parsed in two steps so that one bad record rejects only itself:
`parse_page` checks the envelope and paging fields, `parse_submission` each record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class ParseError(ValueError):
    """A response or record that does not have the shape we rely on; the message says why."""


class SourceModel(BaseModel):
    # strict: "0.5" is not a number and true is not an integer; ignore: new source fields are
    # not our business here (the snapshot keeps them).
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


# ---------------------------------------------------------------- GET /kernels


class KernelSummary(SourceModel):
    id: int
    name: str = Field(min_length=1)
    title: str | None = None
    gpu_types: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    submission_count: int | None = None


# ---------------------------------------------------------------- GET /kernels/{id}


class SourceAxis(SourceModel):
    type: Literal["const", "var", "expr"]
    value: int | None = None
    expression: str | None = None
    description: str | None = None


class SourceTensor(SourceModel):
    shape: list[str | int] | None  # required; null means a scalar
    dtype: str
    description: str | None = None


class SourceWorkload(SourceModel):
    axes: dict[str, int]
    sol_ms: float | None
    baseline_latency_ms: float | None


class Kernel(SourceModel):
    id: int
    name: str = Field(min_length=1)
    title: str | None = None
    description: str | None = None
    # The operation family where the source states one (SamMausberg/KernelIndex
    # import/sol/types.ts names it `op_type`); else the family comes from the tags.
    op_type: str | None = None
    gpu_types: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    axes: dict[str, SourceAxis]
    inputs: dict[str, SourceTensor]
    outputs: dict[str, SourceTensor]
    # The source's reference code. Only its digest is ever stored (see normalize).
    baseline: str | None
    workloads: list[SourceWorkload] = Field(min_length=1)


# ---------------------------------------------------------------- GET /submissions


def parse_source_time(value: str) -> datetime:
    """ISO 8601; the API sends no zone, which means UTC. An explicit zone is converted."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"not an ISO 8601 time: {value!r}") from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


class Submission(SourceModel):
    id: int
    kernel_id: int
    username: str = Field(min_length=1)
    status: str
    is_correct: bool | None
    is_disqualified: bool
    disqualification_reason: str | None = None
    sol_score: float | None
    latency_ms: float | None
    avg_speedup: float | None
    fast_1_count: int | None
    fast_1_total: int | None
    gpu_type: str = Field(min_length=1)
    worker_id: str | None
    evaluation_stack_version: str = Field(min_length=1)
    finished_at: datetime | None
    submitted_at: datetime | None = None  # only a fallback for observedAt

    @field_validator("submitted_at", "finished_at", mode="plain")
    @classmethod
    def _time(cls, value: Any) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError("must be an ISO 8601 string or null")
        return parse_source_time(value)


@dataclass(frozen=True)
class Page:
    """One page of GET /submissions: paging fields checked, records still raw."""

    total: int
    offset: int
    limit: int | None
    records: list[Any]


# ---------------------------------------------------------------- parsing


def describe(error: ValidationError) -> str:
    """`field: reason` for each problem, e.g. `username: Field required`."""
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(record)"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def envelope(body: bytes) -> Any:
    """The `data` of a `{"data": ...}` response."""
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ParseError(f"malformed JSON: {error}") from None
    if not isinstance(document, dict) or "data" not in document:
        raise ParseError('not a {"data": ...} envelope')
    return document["data"]


def parse_kernel_list(body: bytes) -> tuple[list[KernelSummary], list[tuple[str, str]]]:
    """The listed kernels, and (subject, reason) for each entry that does not parse."""
    data = envelope(body)
    if not isinstance(data, dict) or not isinstance(data.get("kernels"), list):
        raise ParseError("data.kernels: must be a list")
    kernels, problems = [], []
    for position, entry in enumerate(data["kernels"]):
        try:
            kernels.append(KernelSummary.model_validate(entry))
        except ValidationError as error:
            subject = f"kernel list entry {position}"
            if isinstance(entry, dict) and "id" in entry:
                subject = f"kernel {entry['id']} (list entry)"
            problems.append((subject, describe(error)))
    return kernels, problems


def parse_kernel(body: bytes) -> Kernel:
    data = envelope(body)
    try:
        return Kernel.model_validate(data)
    except ValidationError as error:
        raise ParseError(describe(error)) from None


def parse_page(body: bytes) -> Page:
    data = envelope(body)
    if not isinstance(data, dict):
        raise ParseError("data: must be an object")
    records = data.get("submissions")
    if not isinstance(records, list):
        raise ParseError("data.submissions: must be a list")
    problems = []
    numbers: dict[str, int | None] = {}
    for name in ("total", "offset", "limit"):
        value = data.get(name)
        if name == "limit" and value is None:
            numbers[name] = None
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.append(f"data.{name}: must be a non-negative integer")
        else:
            numbers[name] = value
    if problems:
        raise ParseError("; ".join(problems))
    return Page(numbers["total"], numbers["offset"], numbers["limit"], records)


def parse_submission(record: Any) -> Submission:
    try:
        return Submission.model_validate(record)
    except ValidationError as error:
        raise ParseError(describe(error)) from None


def record_label(record: Any) -> str:
    """How a raw record is named in the report, even when it does not parse."""
    if isinstance(record, dict) and isinstance(record.get("id"), (int, str)):
        return f"submission {record['id']}"
    return "submission (no id)"
