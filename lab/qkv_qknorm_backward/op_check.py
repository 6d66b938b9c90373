"""Issue 28 on a GPU, in one call, every implementation called through the torch op
(torch.ops.kernelindex.qkv_qknorm_backward / _out):

1. correctness on the 16 cases, the odd shapes and long sequences (T = 16385, 32769, 2×8193):
   fresh seeded inputs, NaN-poisoned outputs for the out op, the functional op twice (bitwise
   equal run to run and to the out op), the harness comparator and the relative L2 error against
   the fp32 oracle, and max|err| / rms(ref) of every output against a float64 oracle (G rounded
   to bf16 as defined, then everything in float64);
2. graph-replay medians (L2 flushed), side by side with cuBLAS's two GEMMs alone (limits.py).

  python lab/qkv_qknorm_backward/op_check.py OUT.json --impls ext-portable,ext-fused [--samples 30]
        [--no-check] [--no-time] [--shapes long] [--subset-impls ext-fused@c4-w4-x1,...]
        [--time-only ext-fused@diag-notransform,lab:dbg-gemm,...]

An implementation may be named `impl@mode` (the op's impl_mode; `auto` otherwise). --subset-impls
are checked on SUBSET_SHAPES only, then timed; --time-only ones are timed, never checked (the
ext-fused diagnostics compute wrong results on purpose).

Prints a line per shape and implementation and a table last; everything goes to OUT.json.
"""

from __future__ import annotations

import json
import math
import sys
import time
import traceback

LONG_SHAPES = [(1, 16385), (1, 32769), (2, 8193), (1, 49153), (3, 16385)]
SUBSET_SHAPES = [(1, 131), (3, 77), (2, 1000), (4, 373), (16, 541), (1, 8192), (1, 16385)]


def _impl_mode(name: str) -> tuple[str, str]:
    impl, _, mode = name.partition("@")
    return impl, mode or "auto"


FP64_LIMIT = 0.05  # max|err|/rms(ref) against float64; bf16 outputs land near 0.01–0.04


def _arg(argv: list[str], name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else default


def oracle_fp64(inputs: dict):
    """G as defined (bf16), then the GEMMs and the norm-weight sums in float64."""
    from kernels.ops.qkv_qknorm_backward.definition import HIDDEN
    from kernels.ops.qkv_qknorm_backward.reference import _g_matrix

    names = ("grad_query", "grad_key", "grad_value", "q_norm_weight", "k_norm_weight", "q_rstd", "k_rstd", "q_normed", "k_normed")
    g, _, _ = _g_matrix(*(inputs[n] for n in names))
    b, s, _ = inputs["hidden_states"].shape
    g = g.double()
    x = inputs["hidden_states"].reshape(b * s, HIDDEN).double()
    import torch

    w = torch.cat([inputs["q_weight"], inputs["k_weight"], inputs["v_weight"]]).double()
    dx = (g @ w).reshape(b, s, HIDDEN)
    dw = g.t() @ x
    dq = (inputs["grad_query"].double() * inputs["q_normed"].double()).sum(dim=(0, 1, 2))
    dk = (inputs["grad_key"].double() * inputs["k_normed"].double()).sum(dim=(0, 1, 2))
    return dx, dw[:1024], dw[1024:1280], dw[1280:], dq, dk


def err_over_rms(outs, ref) -> dict:
    from kernels.ops.qkv_qknorm_backward.definition import OUTPUT_NAMES

    res = {}
    for n, o, r in zip(OUTPUT_NAMES, outs, ref):
        r = r.double()
        res[n] = float((o.double() - r).abs().max() / r.pow(2).mean().sqrt().clamp_min(1e-300))
    return res


def check_impl(name: str, shapes, result: dict) -> bool:
    import oracle  # beside this script
    import torch

    from kernels.harness.correctness import Tolerance
    from kernels.ops.qkv_qknorm_backward import definition as d
    from kernels.ops.qkv_qknorm_backward import torch_op
    from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs
    from kernels.ops.qkv_qknorm_backward.reference import reference_fp32

    fn, fn_out = torch_op.call(*_impl_mode(name)), torch_op.call_out(*_impl_mode(name))
    tol = Tolerance()
    ok_all = True
    for i, (b, s) in enumerate(shapes):
        inputs = make_inputs(b, s, seed=52_000 + 13 * i, device="cuda")
        try:
            outs = allocate_outputs(b, s, "cuda")
            fn_out(outs, **inputs)
            first = fn(**inputs)
            again = fn(**inputs)
            torch.cuda.synchronize()
            ref = reference_fp32(**inputs)
            ok1, f1, rel = oracle.check(outs, ref, tol)
            ok2, f2, _ = oracle.check(first, ref, tol, "(fn)")
            del ref
            e64 = err_over_rms(first, oracle_fp64(inputs))
            repeat = [n for n, x, y in zip(d.OUTPUT_NAMES, first, again) if not torch.equal(x, y)]
            between = [n for n, x, y in zip(d.OUTPUT_NAMES, outs, first) if not torch.equal(x, y)]
            ok64 = max(e64.values()) < FP64_LIMIT
            entry = {
                "B": b,
                "S": s,
                "passed": ok1 and ok2 and ok64,
                "deterministic": not repeat and not between,
                "failures": f1 + f2 + ([] if ok64 else [f"fp64: {e64}"]),
                "differ_run_to_run": repeat,
                "differ_between_entry_points": between,
                "max_rel_l2": max(rel.values()),
                "err_over_rms_fp64": {k: round(v, 5) for k, v in e64.items()},
            }
        except Exception as exc:  # noqa: BLE001 - reported, the check goes on
            entry = {
                "B": b,
                "S": s,
                "passed": False,
                "deterministic": False,
                "failures": [f"{type(exc).__name__}: {exc}"],
                "trace": traceback.format_exc()[-1500:],
            }
        ok = entry["passed"] and entry["deterministic"]
        ok_all &= ok
        result.setdefault("check", {}).setdefault(name, []).append(entry)
        worst = max(entry.get("err_over_rms_fp64", {"-": float("nan")}).values())
        print(
            f"check {name} B={b} S={s} T={b * s}: passed={entry['passed']} det={entry['deterministic']} "
            f"rel_l2={entry.get('max_rel_l2', float('nan')):.2e} fp64_err/rms={worst:.4f}"
            + ("" if ok else f" {entry['failures'][:2]} {entry.get('trace', '')[-600:]}"),
            flush=True,
        )
        del inputs
        torch.cuda.empty_cache()
    return ok_all


def _timed(name: str, torch_op):
    """fn(**inputs) for a timed column: an implementation through the torch op, or `lab:MODE`, a
    part of ext-streamnorm alone (debug.py: `lab:dbg-gemm`, its GEMM kernel on a G of garbage;
    `lab:dbg-norm`, its norm kernel) — wrong results, so --time-only."""
    if name.startswith("lab:"):
        import debug  # beside this script

        mode = name.removeprefix("lab:")
        return lambda **inputs: debug.streamnorm_qkv_qknorm_backward(mode=mode, **inputs)
    return torch_op.call(*_impl_mode(name))


def time_all(names: list[str], samples: int, result: dict) -> None:
    import limits  # beside this script
    import torch

    from kernels.harness import gpus, timing
    from kernels.ops.qkv_qknorm_backward import definition as d
    from kernels.ops.qkv_qknorm_backward import torch_op
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    product = torch.cuda.get_device_name(0)
    flush = timing.L2Flush()
    fns = {n: _timed(n, torch_op) for n in names}
    rows = []
    for i, (b, s) in enumerate(d.CASE_SHAPES):
        t = b * s
        row = {"case": i, "B": b, "S": s, "T": t, "sol": gpus.sol_ns(d.flops(b, s), d.min_bytes(b, s), product)}
        row["cublas_gemms"] = timing.stats(
            timing.time_graph(limits.two_gemms, limits.gemm_inputs(t), warmups=10, samples=samples, flush=flush)
        )["median"]
        inputs = make_inputs(b, s, seed=4000 + i, device="cuda")
        for n, fn in fns.items():
            row[n] = timing.stats(timing.time_graph(fn, inputs, warmups=10, samples=samples, flush=flush))["median"]
        rows.append(row)
        print(
            f"time case {i:2d} T={t:5d}: cuBLAS GEMMs {row['cublas_gemms'] / 1e3:6.2f}  "
            + "  ".join(f"{n} {row[n] / 1e3:6.2f}" for n in fns),
            flush=True,
        )
    cols = ["sol", "cublas_gemms", *fns]
    geo = {k: round(math.exp(sum(math.log(r[k]) for r in rows) / len(rows)) / 1e3, 3) for k in cols}
    at8192 = {k: round(min(r[k] for r in rows if r["T"] == 8192) / 1e3, 2) for k in cols}
    result["timing"] = {"gpu": product, "samples": samples, "rows": rows, "geomean_us": geo, "t8192_us": at8192}
    print("| | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    print("| geomean µs | " + " | ".join(f"{geo[k]:.2f}" for k in cols) + " |")
    print("| ÷ cuBLAS | " + " | ".join(f"{geo[k] / geo['cublas_gemms']:.3f}" for k in cols) + " |")
    print("| T = 8192 µs | " + " | ".join(f"{at8192[k]:.2f}" for k in cols) + " |")
    print("| ÷ cuBLAS | " + " | ".join(f"{at8192[k] / at8192['cublas_gemms']:.3f}" for k in cols) + " |", flush=True)


def main() -> int:
    out_path, argv = sys.argv[1], sys.argv[2:]
    names = _arg(argv, "--impls", "ext-portable").split(",")
    subset = [n for n in _arg(argv, "--subset-impls", "").split(",") if n]
    time_only = [n for n in _arg(argv, "--time-only", "").split(",") if n]
    samples = int(_arg(argv, "--samples", "30"))
    import oracle
    import torch

    from kernels.ops.qkv_qknorm_backward import definition as d

    torch.backends.cuda.matmul.allow_tf32 = False
    result: dict = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "impls": names}
    t0 = time.time()
    which = _arg(argv, "--shapes", "all")
    shapes = LONG_SHAPES if which == "long" else list(d.CASE_SHAPES) + oracle.ODD_SHAPES + LONG_SHAPES
    ok = True
    if "--no-check" not in argv:
        for n in names:
            ok &= check_impl(n, shapes, result)
        for n in subset:
            ok &= check_impl(n, SUBSET_SHAPES, result)
        print(f"checks passed: {ok} ({time.time() - t0:.0f} s)", flush=True)
    result["check_passed"] = ok
    with open(out_path, "w") as fh:
        json.dump(result, fh, indent=1)
    if "--no-time" not in argv:
        time_all(names + subset + time_only, samples, result)
    with open(out_path, "w") as fh:
        json.dump(result, fh, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
