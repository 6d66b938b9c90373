"""Parse datasets-server answers and `GPUMODE/kernelbot-data` rows into typed records.

Strict about the fields the loader uses, blind to the rest (new columns stay in the snapshot).
A page is parsed in two steps so that one bad row rejects only itself: `parse_rows_page` checks
the envelope (the same for `/rows` and `/filter`), `parse_submission` / `parse_leaderboard` each
row. Where each field comes from is in README.md ("What is read").

Two kinds of submission rows:

- **per-shape** (`amd_successful_submissions`: gpu-mode/kernelbot-data `export.py`): one row per
  run; `run_result` holds `benchmark-count` and, per case N, `benchmark.N.{spec,mean,std,err,
  best,worst,runs}` (times in ns, as KernelBot's `examples/eval.py` logs them; numbers or numeric
  text); `run_system_info` is KernelBot's `SystemInfo` (`gpu`, `device_count`, ...). Both may
  arrive as objects or as JSON text.
- **flat** (`nvidia_nvfp4_submissions`, `amd_1_1m_competition`, `trimul_submissions`,
  `helion_b200_nebius`: gpu-mode/kernelbot `hf_export.py` SUBMISSIONS_SCHEMA and
  `sql/get_hf_export_rows.sql`): one row per (board, user, code, runner) with KernelBot's
  `score` (seconds), `status`, `passed`, `mode` and `runner`; no per-case statistics.
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
    partial: bool = False  # /filter: the index covers only part of the split (docs: filter.md)


def parse_rows_page(body: bytes) -> RowsPage:
    """A `/rows` or `/filter` answer: `{"rows": [{"row_idx", "row", "truncated_cells"}],
    "num_rows_total", "num_rows_per_page", "partial"}` (dataset-viewer docs: rows.md, filter.md)."""
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
    return RowsPage(rows, total, data.get("partial") is True)


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
    axes: dict[str, int]  # the positive integer parameters of the spec, but its seed
    seed: int | None
    mean: float
    std: float | None
    err: float | None
    best: float | None
    worst: float | None
    runs: int | None


class SystemInfo(SourceModel):
    """KernelBot's `run_eval.SystemInfo`: `gpu` is `torch.cuda.get_device_name()` ('' when no GPU
    was found), `device_count` the GPUs the run had."""

    gpu: str = ""
    device_count: int | None = None
    cpu: str | None = None
    runtime: str | None = None
    platform: str | None = None
    torch: str | None = None


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise ValueError("is text but not JSON") from None
    return value


def _id_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _name_or_none(value: Any) -> Any:
    # hf_export.rows_to_parquet_bytes writes a missing user name as "": no name, not a name.
    return None if isinstance(value, str) and not value.strip() else value


class PerShapeRow(SourceModel):
    submission_id: int
    leaderboard_id: int
    user_id: str = Field(min_length=1)  # export.py: anonymized integers
    user_name: str | None = None
    submission_time: datetime
    code_id: int | None = None
    run_id: int | None = None
    run_mode: str
    run_score: float | None = None
    run_passed: bool
    run_system_info: SystemInfo
    run_result: dict[str, Any]
    file_name: str | None = None
    code: str | None = None  # the submission's source; None when absent or truncated (parse_submission)

    _time_utc = field_validator("submission_time", mode="before")(classmethod(lambda cls, v: _utc(v)))
    _decode = field_validator("run_system_info", "run_result", mode="before")(classmethod(lambda cls, v: _decoded(v)))
    _user_id = field_validator("user_id", mode="before")(classmethod(lambda cls, v: _id_text(v)))
    _user_name = field_validator("user_name", mode="before")(classmethod(lambda cls, v: _name_or_none(v)))

    def cases(self) -> list[Case]:
        return parse_cases(self.run_result)


class FlatRow(SourceModel):
    """A row of hf_export.py's SUBMISSIONS_SCHEMA (gpu-mode/kernelbot): the columns of
    sql/get_hf_export_rows.sql. `status`, `score`, `passed`, `mode` and `runner` come from a LEFT
    JOIN, so all but `status` may be null on a row that did not pass."""

    submission_id: int
    leaderboard_id: int | None = None
    problem_name: str = Field(min_length=1)
    user_id: str | None = None
    user_name: str | None = None
    code_id: int | None = None
    file_name: str | None = None
    code: str | None = None  # the submission's source; None when absent or truncated (parse_submission)
    submission_time: datetime | None = None
    status: str | None = None
    score: float | None = None
    passed: bool | None = None
    mode: str | None = None
    runner: str | None = None

    _time_utc = field_validator("submission_time", mode="before")(classmethod(lambda cls, v: _utc(v)))
    _user_id = field_validator("user_id", mode="before")(classmethod(lambda cls, v: _name_or_none(_id_text(v))))
    _user_name = field_validator("user_name", mode="before")(classmethod(lambda cls, v: _name_or_none(v)))


Submission = PerShapeRow | FlatRow


def parse_submission(row: Row) -> Submission:
    """A per-shape row (it has `run_result`) or a flat one (`problem_name`); ParseError names
    the fields that are missing or wrong."""
    data = row.data
    if "code" in row.truncated:
        # The datasets-server cut the cell: what is left is not the submission's code, so it has
        # no code digest (the catalog's importer drops a truncated code cell the same way).
        data = {key: value for key, value in data.items() if key != "code"}
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
    if submission.user_id is None and submission.user_name is None:
        raise ParseError("user_id: missing, and user_name is empty: the row names no user")
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


SEED = "seed"  # examples/eval.py: a case's RNG seed (combined with the secret seed when ranked)


def parse_spec(spec: str) -> dict[str, int]:
    """`"k: 7168; m: 1024; seed: 8135"` → its positive integer parameters but the seed: the sizes
    (others, and the seed, stay in the text; the seed is `spec_seed`)."""
    return dict(_spec_parts(spec)[0])  # a copy: callers may keep it


def spec_seed(spec: str) -> int | None:
    return _spec_parts(spec)[1]


@lru_cache(maxsize=4096)  # a board's few specs repeat on every one of its rows
def _spec_parts(spec: str) -> tuple[dict[str, int], int | None]:
    """KernelBot's examples/eval.py reads a case as `name: value` pieces split on `;`, a value
    being a word or a signed integer."""
    axes, seed = {}, None
    for piece in filter(None, (p.strip() for p in spec.split(";"))):
        name, colon, value = piece.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not name:
            raise ParseError(f"run_result: spec {spec!r} is not 'name: value; …'")
        if name == SEED:
            if re.fullmatch(r"[+-]?\d+", value):
                seed = int(value)
            continue
        # Axes are sizes (registry.manifests.Size): a zero or negative parameter is no size, and
        # stays in the spec's text only.
        if re.fullmatch(r"\d+", value) and int(value) > 0:
            axes[name] = int(value)
    return axes, seed


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
                seed=spec_seed(spec),
                mean=_number(result, prefix + "mean", required=True),
                std=_number(result, prefix + "std", required=False),
                err=_number(result, prefix + "err", required=False),
                best=_number(result, prefix + "best", required=False),
                worst=_number(result, prefix + "worst", required=False),
                runs=int(runs) if runs is not None else None,
            )
        )
    return cases
