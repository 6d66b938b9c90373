"""Resolving a kernel for a workload: which measured cases match an asked shape exactly, and, when
none does, which measured shapes lie nearest on either side of each variable axis.

Pure rules (no I/O): the store reads the definition, its comparison groups and their workload
suites; the resolver (resolvers/registry/resolve.py) turns these answers into GraphQL. A shape
near the asked one is never a measurement of it: `Neighbour` says which axis it differs on, on
which side, and whether every other variable axis equals the asked value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_BATCH = 20  # requests in one resolveKernels call

Shape = tuple[tuple[str, int], ...]  # the variable axes, sorted by name


class ResolutionError(ValueError):
    """The request cannot be answered; `field` names the input at fault."""

    def __init__(self, field: str, message: str, code: str = "BAD_USER_INPUT"):
        super().__init__(message)
        self.field, self.code = field, code


def shape_of(axes: Mapping[str, int], names: Iterable[str]) -> Shape | None:
    """The variable axes `names` of a case, or None when the case lacks one of them."""
    try:
        return tuple(sorted((name, int(axes[name])) for name in names))
    except (KeyError, TypeError, ValueError):
        return None


def requested_shape(definition_axes: Mapping[str, Mapping[str, Any]], asked: Mapping[str, int], field_name: str = "axes") -> Shape:
    """Check `asked` against the definition's axes: every variable axis given, a constant one only
    at its value, a derived (`expr`) one not at all, no unknown names, sizes >= 1."""
    var = sorted(name for name, axis in definition_axes.items() if axis.get("type") == "var")
    for name, value in asked.items():
        axis = definition_axes.get(name)
        if axis is None:
            known = ", ".join(sorted(definition_axes)) or "none"
            raise ResolutionError(f"{field_name}.{name}", f"{name!r} is not an axis of this operation; its axes: {known}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ResolutionError(f"{field_name}.{name}", f"must be an integer of at least 1, not {value!r}")
        if axis.get("type") == "const" and axis.get("value") is not None and value != axis["value"]:
            raise ResolutionError(f"{field_name}.{name}", f"is constant in this operation: {axis['value']}, not {value}")
        if axis.get("type") == "expr":
            raise ResolutionError(f"{field_name}.{name}", f"is derived ({axis.get('expression') or 'an expression'}); leave it out")
    missing = [name for name in var if name not in asked]
    if missing:
        raise ResolutionError(field_name, f"no value for the variable axes {', '.join(missing)}; give every one of {', '.join(var)}")
    return tuple((name, asked[name]) for name in var)


@dataclass(frozen=True)
class MeasuredCase:
    """One case of one workload suite in one comparison group."""

    group_key: str
    workload_digest: str
    case_index: int
    shape: Shape


@dataclass
class Neighbour:
    """The measured shape nearest to the asked one along `axis`, on `side` ("below": smaller
    value, "above": larger), with every case (in any group) measured at that shape."""

    axis: str
    side: str
    shape: Shape
    others_match: bool  # every other variable axis equals the asked value
    cases: list[MeasuredCase] = field(default_factory=list)


def exact_cases(cases: Iterable[MeasuredCase], shape: Shape) -> list[MeasuredCase]:
    return [case for case in cases if case.shape == shape]


def _log_distance(a: int, b: int) -> float:
    return abs(math.log(a / b))


def nearest_cases(cases: list[MeasuredCase], shape: Shape) -> list[Neighbour]:
    """For each variable axis and each side, the nearest measured shape: among shapes whose
    other axes all equal the asked values when there is one, else among all shapes on that side,
    by distance on the axis and then by how far the other axes are (ratios, so that 1 vs 2
    counts like 512 vs 1024)."""
    asked = dict(shape)
    shapes = sorted({case.shape for case in cases})
    out: list[Neighbour] = []
    for axis, value in shape:
        for side in ("below", "above"):
            on_side = [s for s in shapes if (dict(s)[axis] < value if side == "below" else dict(s)[axis] > value)]
            if not on_side:
                continue

            def others(s: Shape, axis: str = axis) -> float:
                return sum(_log_distance(v, asked[name]) for name, v in s if name != axis)

            matching = [s for s in on_side if others(s) == 0]
            pool = matching or on_side
            best = min(pool, key=lambda s, axis=axis, value=value: (_log_distance(dict(s)[axis], value), others(s), s))
            out.append(Neighbour(axis, side, best, bool(matching), [c for c in cases if c.shape == best]))
    return out


@dataclass(frozen=True)
class CaseEntry:
    """One run's result on one case: its latency under the asked statistic (None when the run
    did not report that statistic for the case) and whether the case passed."""

    run_digest: str
    latency_ns: int | None
    passed: bool


def rank_case(entries: list[CaseEntry]) -> list[tuple[CaseEntry, int | None]]:
    """Fastest first; competition ranks (equal latencies share a rank) over passed cases with a
    value; the rest follow without a rank, in the order given."""
    ranked = sorted((e for e in entries if e.passed and e.latency_ns is not None), key=lambda e: (e.latency_ns, e.run_digest))
    out: list[tuple[CaseEntry, int | None]] = []
    for position, entry in enumerate(ranked):
        rank = out[-1][1] if out and out[-1][0].latency_ns == entry.latency_ns else position + 1
        out.append((entry, rank))
    out += [(e, None) for e in entries if not (e.passed and e.latency_ns is not None)]
    return out


def gpu_matches(asked: str | None, product: str, architecture: str) -> bool:
    """A GPU named by product ("NVIDIA H200" or "H200", any case) or by architecture ("sm_90")."""
    if not asked:
        return True
    want = asked.strip().lower().removeprefix("nvidia ").strip()
    return want in (product.lower().removeprefix("nvidia ").strip(), architecture.lower())
