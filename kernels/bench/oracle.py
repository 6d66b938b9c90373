"""What the GPU development checkers (dev_check, fused_check, cluster_check) share: the odd shapes
they try beside the 16 cases, and the comparison of one call's outputs with the fp32 oracle."""

from __future__ import annotations

from typing import Any

from kernels.harness.correctness import OutputResult, Tolerance, compare
from kernels.ops.qkv_qknorm_backward import definition as d

# B×S shapes that are not the cases: T = 1, T below and just past a tile, T not a multiple of 64.
ODD_SHAPES = [(1, 1), (3, 77), (2, 1000), (1, 65), (5, 129), (7, 301), (1, 63), (2, 4097), (3, 2731)]
REL_L2_LIMIT = 1e-2  # bf16 outputs land near 2e-3; a wrong tile lands far above


def compare_outputs(outs: Any, ref: Any, tol: Tolerance, suffix: str = "") -> list[OutputResult]:
    """The harness comparator on every output (names get `suffix`, e.g. "(fn)")."""
    return [compare(n + suffix, o, r, d.OUTPUTS[n][1], tol) for n, o, r in zip(d.OUTPUT_NAMES, outs, ref)]


def relative_l2(outs: Any, ref: Any) -> dict[str, float]:
    """‖out − ref‖ / ‖ref‖ per output: catches a wrong tile the 99%-of-elements rule could let through."""
    return {n: float((o.float() - r.float()).norm() / r.float().norm().clamp_min(1e-30))
            for n, o, r in zip(d.OUTPUT_NAMES, outs, ref)}


def check(outs: Any, ref: Any, tol: Tolerance, suffix: str = "") -> tuple[bool, list[str], dict[str, float]]:
    """(passed, failures, relative L2 errors) of one call's outputs against the oracle."""
    results = compare_outputs(outs, ref, tol, suffix)
    rel = relative_l2(outs, ref)
    passed = all(c.passed for c in results) and all(v < REL_L2_LIMIT for v in rel.values())
    return passed, [c.failure for c in results if not c.passed], rel
