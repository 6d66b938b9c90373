"""resolveKernel / resolveKernels: the ranked runs of an exact workload shape in every matching
comparison group, else the nearest measured shapes on each side of every variable axis, marked
as such (registry/resolution.py decides; store/resolution.py reads)."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import strawberry
from strawberry.federation.schema_directives import ListSize

from registry.controlled_format import cases_of, is_controlled
from registry.resolution import (
    MAX_BATCH,
    CaseEntry,
    MeasuredCase,
    ResolutionError,
    exact_cases,
    gpu_matches,
    nearest_cases,
    rank_case,
    requested_shape,
    shape_of,
)
from resolvers.context import Info
from resolvers.cost_limit import assumed_size
from resolvers.errors import ClientError
from resolvers.types.common import Long, RunStatus, format_ns
from resolvers.types.definition import Definition
from resolvers.types.group import ComparisonGroup
from resolvers.types.workload import AxisBinding
from resolvers.user_errors import UserError
from resolvers.v1alpha1 import workload_cases
from store.read_models import ComparisonGroupDocument
from store.resolution import group_case_results, operation_cohorts

if TYPE_CHECKING:
    from resolvers.types.run import Run

MAX_RUNS = 100
# The cost limit's list sizes (resolvers/cost_limit.py): a shape is measured by a few groups of one
# operation (the bundled data: 1 or 2), and a shape has two neighbours per variable axis.


@strawberry.input(description="One axis of the asked workload shape.")
class AxisValueInput:
    name: str
    value: int


@strawberry.input(description="One request of resolveKernels.")
class KernelRequest:
    operation: str
    axes: list[AxisValueInput]
    gpu: str | None = None
    statistic: str | None = None


@strawberry.enum(description="Whether a shape was measured as asked or lies near it.")
class MatchKind(Enum):
    EXACT = "exact"
    NEAREST_BELOW = "nearest_below"
    NEAREST_ABOVE = "nearest_above"


@strawberry.type(description="One run's result on the matched case, ranked among the cohort's runs on that case.")
class ResolvedRun:
    case_rank: int | None = strawberry.field(
        description="Rank on this case by the statistic (fastest is 1, equal values share a rank); null: not passed or no value."
    )
    group_rank: int | None = strawberry.field(description="The run's rank in its comparison group (over the whole suite).")
    status: RunStatus = strawberry.field(description="The case's status.")
    statistic: str
    latency_ns: Long | None
    display: str | None
    run_digest: str
    permalink: str

    @strawberry.field
    async def run(self, info: Info) -> Annotated[Run, strawberry.lazy("resolvers.types.run")] | None:
        from resolvers.types.run import Run

        doc = await info.context.loaders.runs.load(self.run_digest)
        return Run.from_doc(doc) if doc else None


@strawberry.type(description="A comparison group's runs on one measured case.")
class CohortMatch:
    group: ComparisonGroup
    workload_digest: str
    case_index: int
    statistic: str = strawberry.field(description="What the runs are ranked by: the asked statistic, else the protocol's primary one.")
    run_count: int
    all_runs: strawberry.Private[list[ResolvedRun]]

    @strawberry.field(
        description="Fastest first on this case; runs without a value for the statistic last.",
        directives=[ListSize(slicing_arguments=["first"], require_one_slicing_argument=False)],
    )
    def runs(self, first: int = 10) -> list[ResolvedRun]:
        if not 0 <= first <= MAX_RUNS:
            raise ClientError(f"first: must be between 0 and {MAX_RUNS}")
        return self.all_runs[:first]


@strawberry.type(description="A measured shape: the asked one (EXACT) or the nearest one on one side of one axis (not the asked shape).")
class ShapeMatch:
    kind: MatchKind
    axis: str | None = strawberry.field(description="The variable axis on which it differs from the asked shape (null for EXACT).")
    axes: list[AxisBinding] = strawberry.field(description="The measured shape's variable axes.")
    others_match: bool = strawberry.field(description="Every variable axis but `axis` equals the asked value.")
    label: str = strawberry.field(description='e.g. "measured at seq_len=512 (asked 1000): nearest below, not the asked shape"')
    cohorts: list[CohortMatch] = strawberry.field(directives=[assumed_size(3)])


@strawberry.type(description="The answer to: which evidenced implementation is fastest for this exact shape on this GPU?")
class KernelResolution:
    operation: Definition | None
    asked: list[AxisBinding] = strawberry.field(description="The asked shape's variable axes.")
    gpu: str | None
    measured: bool = strawberry.field(description="True when at least one cohort measured the asked shape (then `exact` is set).")
    exact: list[CohortMatch] = strawberry.field(directives=[assumed_size(5)])
    nearest: list[ShapeMatch] = strawberry.field(
        description="When nothing measured the asked shape: the nearest measured shapes, on each side of each variable axis.",
        directives=[assumed_size(4)],
    )
    user_errors: list[UserError]


def _bindings(shape: tuple[tuple[str, int], ...]) -> list[AxisBinding]:
    return [AxisBinding(name=name, value=value) for name, value in shape]


def _refusal(field: str, message: str, code: str = "BAD_USER_INPUT", gpu: str | None = None) -> KernelResolution:
    return KernelResolution(
        operation=None,
        asked=[],
        gpu=gpu,
        measured=False,
        exact=[],
        nearest=[],
        user_errors=[UserError(field=field, message=message, code=code)],
    )


async def _cohort(
    info: Info, group: ComparisonGroupDocument, case: MeasuredCase, statistic: str, cache: dict[str, list[dict[str, Any]]]
) -> CohortMatch:
    key = group.key
    if key not in cache:
        cache[key] = await group_case_results(info.context.db, key)
    suite = await info.context.loaders.workloads.load(group.workload_digest)
    entries = []
    for run in cache[key]:
        spec = run["spec"]
        cases = cases_of(spec, (suite or {}).get("spec")) if is_controlled(spec) else spec.get("cases", [])
        result = next((c for c in cases if c.get("index") == case.case_index), None)
        if result is None:
            continue
        value = (result.get("latencyNs") or {}).get(statistic)
        entries.append((CaseEntry(run["_id"], value, result.get("status") == "passed"), run, result))
    by_digest = {entry.run_digest: (run, result) for entry, run, result in entries}
    ranked = rank_case([entry for entry, _, _ in entries])
    public = info.context.public_url
    runs = []
    for entry, rank in ranked:
        run, result = by_digest[entry.run_digest]
        runs.append(
            ResolvedRun(
                case_rank=rank,
                group_rank=run.get("rank"),
                status=RunStatus(result.get("status", run["status"])),
                statistic=statistic,
                latency_ns=entry.latency_ns,
                display=format_ns(entry.latency_ns) if entry.latency_ns is not None else None,
                run_digest=entry.run_digest,
                permalink=f"{public}/runs/{entry.run_digest}",
            )
        )
    return CohortMatch(
        group=ComparisonGroup.from_doc(group),
        workload_digest=case.workload_digest,
        case_index=case.case_index,
        statistic=statistic,
        run_count=len(runs),
        all_runs=runs,
    )


def _label(kind: MatchKind, axis: str, shape: dict[str, int], asked: dict[str, int], others_match: bool) -> str:
    side = "below" if kind is MatchKind.NEAREST_BELOW else "above"
    text = f"measured at {axis}={shape[axis]} (asked {asked[axis]}): nearest {side}, not the asked shape"
    if not others_match:
        differing = ", ".join(f"{n}={v} (asked {asked[n]})" for n, v in shape.items() if n != axis and v != asked[n])
        text += f"; no measured shape keeps the other axes, so it also differs in {differing}"
    return text


# The v1alpha1 format's axis roles, as registry/resolution.py reads them (the older dialect's types).
_AXIS_TYPES = {"variable": "var", "constant": "const", "derived": "expr"}


def _older_axes(axes: dict[str, Any]) -> dict[str, Any]:
    return {name: {**axis, "type": _AXIS_TYPES[axis["role"]]} if "role" in axis else axis for name, axis in axes.items()}


async def resolve_one(
    info: Info, operation: str, axes: list[AxisValueInput], gpu: str | None, statistic: str | None, field: str = ""
) -> KernelResolution:
    prefix = f"{field}." if field else ""
    asked: dict[str, int] = {}
    for position, axis in enumerate(axes):
        if axis.name in asked:
            return _refusal(f"{prefix}axes[{position}].name", f"axis {axis.name!r} is given twice", gpu=gpu)
        asked[axis.name] = axis.value
    definition, groups, workloads, protocols = await operation_cohorts(info.context.db, operation)
    if definition is None:
        return _refusal(f"{prefix}operation", f"no operation named {operation!r}", "NOT_FOUND", gpu)
    try:
        shape = requested_shape(_older_axes(definition["spec"]["axes"]), asked, f"{prefix}axes")
    except ResolutionError as error:
        return _refusal(error.field, str(error), error.code, gpu)
    on_gpu = [g for g in groups if gpu_matches(gpu, g.gpu.product, g.gpu.architecture)]
    if gpu and not on_gpu:
        known = ", ".join(sorted({g.gpu.product for g in groups})) or "none"
        return _refusal(f"{prefix}gpu", f"no comparison group of {operation} on {gpu!r}; its GPUs: {known}", "NOT_FOUND", gpu)
    names = [name for name, _ in shape]
    measured: list[MeasuredCase] = []
    group_by_key = {g.key: g for g in on_gpu}
    for g in on_gpu:
        suite = workloads.get(g.workload_digest)
        for case in workload_cases(suite) if suite else []:
            case_shape = shape_of(case["axes"], names)
            if case_shape is not None:
                measured.append(MeasuredCase(g.key, g.workload_digest, case["index"], case_shape))

    def statistic_of(group: ComparisonGroupDocument) -> str:
        if statistic:
            return statistic
        protocol = protocols.get(group.protocol_digest or "") or {}
        # Our controlled protocol ranks runs by a geomean over cases, each case by its median.
        case_statistic = ((protocol.get("metadata") or {}).get("labels") or {}).get("case_statistic")
        return case_statistic or (protocol.get("spec", {}).get("measurement", {}) or {}).get("primaryStatistic", "mean")

    cache: dict[str, list[dict[str, Any]]] = {}
    exact = [
        await _cohort(info, group_by_key[c.group_key], c, statistic_of(group_by_key[c.group_key]), cache)
        for c in exact_cases(measured, shape)
    ]
    nearest: list[ShapeMatch] = []
    if not exact:
        wanted = dict(shape)
        for neighbour in nearest_cases(measured, shape):
            kind = MatchKind.NEAREST_BELOW if neighbour.side == "below" else MatchKind.NEAREST_ABOVE
            cohorts = [
                await _cohort(info, group_by_key[c.group_key], c, statistic_of(group_by_key[c.group_key]), cache) for c in neighbour.cases
            ]
            nearest.append(
                ShapeMatch(
                    kind=kind,
                    axis=neighbour.axis,
                    axes=_bindings(neighbour.shape),
                    others_match=neighbour.others_match,
                    label=_label(kind, neighbour.axis, dict(neighbour.shape), wanted, neighbour.others_match),
                    cohorts=cohorts,
                )
            )
    return KernelResolution(
        operation=Definition.from_doc(definition),
        asked=_bindings(shape),
        gpu=gpu,
        measured=bool(exact),
        exact=exact,
        nearest=nearest,
        user_errors=[],
    )


async def resolve_many(info: Info, requests: list[KernelRequest]) -> list[KernelResolution]:
    if len(requests) > MAX_BATCH:
        raise ClientError(f"requests: {len(requests)} given; at most {MAX_BATCH}")
    return [await resolve_one(info, r.operation, r.axes, r.gpu, r.statistic, f"requests[{i}]") for i, r in enumerate(requests)]
