"""Parse datasets-server answers and `GPUMODE/kernelbot-data` rows into typed records.

Strict about the fields the loader uses, blind to the rest (new columns stay in the snapshot).
A page is parsed in two steps so that one bad row rejects only itself: `parse_rows_page` checks
the envelope, `parse_submission` / `parse_leaderboard` each row.

Two kinds of submission rows:

- **per-shape** (e.g. `amd_successful_submissions`): `run_result` holds `benchmark-count` and,
  per case N, `benchmark.N.{spec,mean,std,err,best,worst,runs}` (times in ns; the values may be
  numbers or numeric text). `run_result` and `run_system_info` may arrive as objects or as JSON
  text.
- **flat** (e.g. `nvidia_nvfp4_submissions`): one aggregate `score` (seconds) per submission, with
  `problem_name`, `user_name`, `status`; no per-case statistics.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class ParseError(ValueError):
    """A response or row that does not have the shape we rely on; the message says why."""


class SourceModel(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


def _problems(error: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'row'}: {e['msg']}" for e in error.errors())


def _json(body: bytes, what: str) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ParseError(f"malformed JSON in {what}: {error}") from None


def _utc(value: Any) -> Any:
    if isinstance(value, str):
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)  # the source's times are UTC
    return value


# ---------------------------------------------------------------- GET /splits


def parse_splits(body: bytes) -> list[str]:
    """The configs that have a `train` split, in the source's order."""
    data = _json(body, "GET /splits")
    splits = data.get("splits") if isinstance(data, dict) else None
    if not isinstance(splits, list):
        raise ParseError("GET /splits: no `splits` list")
    configs = []
    for item in splits:
        if isinstance(item, dict) and item.get("split") == "train" and isinstance(item.get("config"), str):
            configs.append(item["config"])
    return list(dict.fromkeys(configs))


# ---------------------------------------------------------------- GET /rows


@dataclass(frozen=True)
class Row:
    index: int
    data: dict[str, Any]
    truncated: tuple[str, ...]


@dataclass(frozen=True)
class RowsPage:
    rows: list[Row]
    total: int


def parse_rows_page(body: bytes) -> RowsPage:
    data = _json(body, "page")
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise ParseError("page: no `rows` list")
    total = data.get("num_rows_total")
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise ParseError("page: `num_rows_total` is not a count")
    rows = []
    for position, item in enumerate(data["rows"]):
        if not isinstance(item, dict) or not isinstance(item.get("row"), dict) or not isinstance(item.get("row_idx"), int):
            raise ParseError(f"page: rows[{position}] has no `row_idx` and `row`")
        rows.append(Row(item["row_idx"], item["row"], tuple(item.get("truncated_cells") or ())))
    return RowsPage(rows, total)


# ---------------------------------------------------------------- config `leaderboards`


class Leaderboard(SourceModel):
    id: int
    name: str = Field(min_length=1)
    deadline: datetime | None = None
    description: str | None = None
    gpu_types: list[str] = Field(default_factory=list)

    _deadline_utc = field_validator("deadline", mode="before")(classmethod(lambda cls, v: _utc(v)))

    @field_validator("gpu_types", mode="before")
    @classmethod
    def _gpu_list(cls, value: Any) -> Any:
        if isinstance(value, str):  # some exports hold the list as text
            names = (g.strip().strip("'\"") for g in re.split(r"[,;]", value.strip().strip("[]")))
            return [name for name in names if name]
        return value if value is not None else []


def parse_leaderboard(row: Row) -> Leaderboard:
    try:
        return Leaderboard.model_validate(row.data)
    except ValidationError as error:
        raise ParseError(_problems(error)) from None


# ---------------------------------------------------------------- submission rows


@dataclass(frozen=True)
class Case:
    index: int
    spec: str  # as the source wrote it: "k: 7168; m: 1024; n: 1536; seed: 8135"
    axes: dict[str, int]  # the integer parameters of the spec
    mean: float
    std: float | None
    err: float | None
    best: float | None
    worst: float | None
    runs: int | None


class SystemInfo(SourceModel):
    gpu: str = Field(min_length=1)
    cpu: str | None = None
    platform: str | None = None
    torch: str | None = None


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise ValueError("is text but not JSON") from None
    return value


class PerShapeRow(SourceModel):
    submission_id: int
    leaderboard_id: int
    user_id: str
    user_name: str | None = None
    submission_time: datetime
    code_id: int | None = None
    run_id: int | None = None
    run_mode: str
    run_score: float | None = None
    run_passed: bool
    run_system_info: SystemInfo
    run_result: dict[str, Any]

    _time_utc = field_validator("submission_time", mode="before")(classmethod(lambda cls, v: _utc(v)))
    _decode = field_validator("run_system_info", "run_result", mode="before")(classmethod(lambda cls, v: _decoded(v)))

    @field_validator("user_id", mode="before")
    @classmethod
    def _id_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    def cases(self) -> list[Case]:
        return parse_cases(self.run_result)


class FlatRow(SourceModel):
    submission_id: int
    problem_name: str = Field(min_length=1)
    user_name: str = Field(min_length=1)
    user_id: str | None = None
    score: float | None = None
    status: str | None = None
    gpu_type: str | None = None
    submission_time: datetime | None = None

    _time_utc = field_validator("submission_time", mode="before")(classmethod(lambda cls, v: _utc(v)))

    @field_validator("user_id", mode="before")
    @classmethod
    def _id_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


Submission = PerShapeRow | FlatRow


def parse_submission(row: Row) -> Submission:
    """A per-shape row (it has `run_result`) or a flat one (`problem_name`); ParseError names
    the fields that are missing or wrong."""
    data = row.data
    if "run_result" in data:
        if "run_result" in row.truncated:
            raise ParseError("run_result: truncated by the datasets-server (too large to page)")
        model = PerShapeRow
    elif "problem_name" in data:
        model = FlatRow
    else:
        raise ParseError("neither a per-shape row (run_result) nor a flat row (problem_name, score)")
    try:
        submission = model.model_validate(data)
    except ValidationError as error:
        raise ParseError(_problems(error)) from None
    return submission  # run_result's cases are parsed when the row is known to rank (cases())


def row_label(row: Row) -> str:
    submission = row.data.get("submission_id")
    return f"submission {submission}" if isinstance(submission, (int, str)) else f"row {row.index}"


# ---------------------------------------------------------------- run_result


def _number(result: dict[str, Any], key: str, *, required: bool) -> float | None:
    value = result.get(key)
    if value is None or value == "":
        if required:
            raise ParseError(f"run_result: {key} is missing")
        return None
    if isinstance(value, bool):
        raise ParseError(f"run_result: {key} is not a number ({value!r})")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ParseError(f"run_result: {key} is not a number ({value!r})") from None
    if not math.isfinite(number) or number < 0:
        raise ParseError(f"run_result: {key} is not a finite non-negative number ({value!r})")
    return number


def parse_spec(spec: str) -> dict[str, int]:
    """`"k: 7168; m: 1024; seed: 8135"` → its positive integer parameters (others stay in the text)."""
    return dict(_spec_axes(spec))  # a copy: callers may keep it


@lru_cache(maxsize=4096)  # a board's few specs repeat on every one of its rows
def _spec_axes(spec: str) -> dict[str, int]:
    axes = {}
    for piece in filter(None, (p.strip() for p in spec.split(";"))):
        name, colon, value = piece.partition(":")
        if not colon or not name.strip():
            raise ParseError(f"run_result: spec {spec!r} is not 'name: value; …'")
        value = value.strip()
        # Axes are sizes (registry.manifests.Size): a zero or negative parameter (e.g. `seed: 0`)
        # is no size, and stays in the spec's text only.
        if re.fullmatch(r"\d+", value) and int(value) > 0:
            axes[name.strip()] = int(value)
    return axes


def parse_cases(result: dict[str, Any]) -> list[Case]:
    count = _number(result, "benchmark-count", required=True)
    if count != int(count) or count < 1:
        raise ParseError(f"run_result: benchmark-count is not a positive count ({result.get('benchmark-count')!r})")
    cases = []
    for index in range(int(count)):
        prefix = f"benchmark.{index}."
        spec = result.get(prefix + "spec")
        if not isinstance(spec, str) or not spec.strip():
            raise ParseError(f"run_result: {prefix}spec is missing (benchmark-count says {int(count)})")
        runs = _number(result, prefix + "runs", required=False)
        if runs is not None and (runs != int(runs) or runs < 1):
            raise ParseError(f"run_result: {prefix}runs is not a positive count ({result.get(prefix + 'runs')!r})")
        cases.append(
            Case(
                index=index,
                spec=spec.strip(),
                axes=parse_spec(spec),
                mean=_number(result, prefix + "mean", required=True),
                std=_number(result, prefix + "std", required=False),
                err=_number(result, prefix + "err", required=False),
                best=_number(result, prefix + "best", required=False),
                worst=_number(result, prefix + "worst", required=False),
                runs=int(runs) if runs is not None else None,
            )
        )
    return cases
