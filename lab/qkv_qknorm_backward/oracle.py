"""What the GPU development checks (check.py) and tests share: the odd shapes tried beside the 16
cases, and the comparison of one call's outputs with the fp32 oracle."""

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
    return {n: float((o.float() - r.float()).norm() / r.float().norm().clamp_min(1e-30)) for n, o, r in zip(d.OUTPUT_NAMES, outs, ref)}


def check(outs: Any, ref: Any, tol: Tolerance, suffix: str = "") -> tuple[bool, list[str], dict[str, float]]:
    """(passed, failures, relative L2 errors) of one call's outputs against the oracle."""
    results = compare_outputs(outs, ref, tol, suffix)
    rel = relative_l2(outs, ref)
    passed = all(c.passed for c in results) and all(v < REL_L2_LIMIT for v in rel.values())
    return passed, [c.failure for c in results if not c.passed], rel


def check_entry_points(impl: Any, b: int, s: int, seed: int, tol: Tolerance, rounds: int = 2) -> dict:
    """Mode "auto" of an implementation module on B×S: both entry points on fresh seeded inputs
    (outputs NaN-poisoned by allocate_outputs), against the fp32 oracle, `rounds` times.
    Returns {"rounds": [{passed, deterministic (entry points bitwise equal), failures, rel_l2}]},
    or {"error", "trace"} when a call raised."""
    import traceback

    import torch

    from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs
    from kernels.ops.qkv_qknorm_backward.reference import reference_fp32

    entry: dict = {"rounds": []}
    try:
        for rnd in range(rounds):
            inputs = make_inputs(b, s, seed=seed + rnd, device="cuda")
            ref = reference_fp32(**inputs)
            outs = allocate_outputs(b, s, "cuda")
            impl.qkv_qknorm_backward_out(outs, **inputs)
            fn_outs = impl.qkv_qknorm_backward(**inputs)
            torch.cuda.synchronize()
            ok1, f1, rel = check(outs, ref, tol)
            ok2, f2, _ = check(fn_outs, ref, tol, "(fn)")
            det = all(torch.equal(a, c) for a, c in zip(outs, fn_outs))
            entry["rounds"].append(
                {"passed": ok1 and ok2, "deterministic": det, "failures": f1 + f2, "rel_l2": {k: round(v, 6) for k, v in rel.items()}}
            )
    except Exception as exc:  # noqa: BLE001 - reported per shape; the checker goes on or stops
        entry["error"] = f"{type(exc).__name__}: {exc}"
        entry["trace"] = traceback.format_exc()[-2000:]
    return entry


def entry_ok(entry: dict) -> bool:
    r = entry.get("rounds", [])
    return bool(r) and "error" not in entry and all(x["passed"] and x["deterministic"] for x in r)


def entry_line(b: int, s: int, entry: dict, plan: str) -> str:
    """One printed line per checked shape."""
    r = entry.get("rounds", [])
    worst = max((max(x["rel_l2"].values()) for x in r), default=float("nan"))
    line = (
        f"B={b} S={s} T={b * s}: passed={bool(r) and all(x['passed'] for x in r)} "
        f"det={bool(r) and all(x['deterministic'] for x in r)} worst_rel_l2={worst:.2e} plan={plan}"
    )
    if not entry_ok(entry):
        line += f" {entry.get('error', '')} {r[0]['failures'][:3] if r else ''}"
    return line


def time_cases(impl: Any, modes: list[str], samples: int, flush: Any, result: dict) -> None:
    """Graph-replay medians (L2 flushed) of every listed mode on the 16 cases, into
    result["timing"] and result["geomean_us"]; a mode "module:mode" times another module of the
    operation side by side. Prints a line per case and the geomeans."""
    import functools
    import importlib
    import json
    import math

    from kernels.harness import timing
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    for i, (b, s) in enumerate(d.CASE_SHAPES):
        inputs = make_inputs(b, s, seed=9000 + i, device="cuda")
        row = {}
        for m in modes:
            mod, _, mode = m.rpartition(":")
            fn = impl
            if mod == "ext_streamnorm":
                from debug import streamnorm as fn  # beside this script: with its debug modes
            elif mod:
                fn = importlib.import_module(f"kernels.ops.qkv_qknorm_backward.{mod}")
            ns = timing.time_graph(functools.partial(fn.qkv_qknorm_backward, mode=mode), inputs, warmups=5, samples=samples, flush=flush)
            row[m] = timing.stats(ns)
        result["timing"][str(i)] = {"T": b * s, **row}
        print(f"case {i:2d} T={b * s:5d}: " + "  ".join(f"{m} {row[m]['median'] / 1000:6.2f}" for m in modes), flush=True)
    for m in modes:
        med = [result["timing"][str(i)][m]["median"] for i in range(len(d.CASE_SHAPES))]
        result.setdefault("geomean_us", {})[m] = round(math.exp(sum(math.log(x) for x in med) / len(med)) / 1000, 3)
    print("geomean us: " + json.dumps(result.get("geomean_us", {})), flush=True)


def check_and_time(impl: Any, mode: str, inputs: dict, ref: Any, tol: Tolerance, flush: Any, samples: int = 15) -> dict:
    """One forced plan of a sweep: checked against the oracle once (a wrong plan is reported and
    never timed), then timed. Returns {"median": ns} or {"error": why}."""
    import functools

    import torch

    from kernels.harness import timing

    try:
        outs = impl.qkv_qknorm_backward(mode=mode, **inputs)
        torch.cuda.synchronize()
        ok, fails, rel = check(outs, ref, tol)
        if not ok:
            return {"error": f"wrong: {fails[:2]} {max(rel.values()):.2e}"}
        ns = timing.time_graph(functools.partial(impl.qkv_qknorm_backward, mode=mode), inputs, warmups=3, samples=samples, flush=flush)
        return {"median": timing.stats(ns)["median"]}
    except Exception as exc:  # noqa: BLE001 - a plan that fails is reported, the sweep goes on
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


def sweep_cases(impl: Any, modes_for: Any, sms: int, tol: Tolerance, flush: Any):
    """The plan sweep: at each distinct T of the 16 cases, every mode of modes_for(T) checked and
    timed (check_and_time), with its grid. Yields (T, {mode: {"median", "grid"} or {"error"}})."""
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs
    from kernels.ops.qkv_qknorm_backward.reference import reference_fp32

    shape_of = {b * s: (b, s) for b, s in d.CASE_SHAPES}
    for t in sorted(shape_of):
        b, s = shape_of[t]
        inputs = make_inputs(b, s, seed=123 + t, device="cuda")
        ref = reference_fp32(**inputs)
        row = {}
        for m in modes_for(t):
            row[m] = check_and_time(impl, m, inputs, ref, tol, flush)
            if "error" not in row[m]:
                row[m]["grid"] = impl.plan(t, sms, m)["grid"]
        yield t, row


def graph_timeline(impl: Any, mode: str, tokens: int, flush: Any) -> tuple[Any, Any]:
    """impl.timeline at B×S = 1×tokens, replayed from a CUDA graph as the timings are (an eager
    call would show the host's launch gap between the kernels), L2 flushed first: the norm and
    GEMM stamp tensors, on the CPU."""
    import torch

    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    inputs = make_inputs(1, tokens, seed=11, device="cuda")
    impl.timeline(mode=mode, **inputs)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _, ntl, gtl = impl.timeline(mode=mode, **inputs)
    graph.replay()
    torch.cuda.synchronize()
    flush()
    graph.replay()
    torch.cuda.synchronize()
    return ntl.cpu(), gtl.cpu()
