"""Issue 28, 15th session (written after its calls; first run in the 16th): wide_probe.cu's `dep`
kernel — the norm made by warps beside the GEMM and read back by the same kernel through L2.

  python lab/qkv_qknorm_backward/dep_probe.py OUT.json [--samples 50] [--small]

C[M, N] = G·B, G = bf16(rstd·(ĝ − m·x̂)) per row and head of 256 (ĝ = bf16(g + g·w), m = mean(ĝ·x̂)),
M = 2816 (22 row blocks), N = 1536 (6 column tiles: a row block's 6 CTAs share its G, as dX and
dW share the real op's), K = 1536 and 8192: 132 CTAs, one per SM. Per shape, on fresh random
inputs: `dep` (norm = 1) — its G buffer against the definition (one ulp, or 1e-3 rms beyond it,
as wide_probe's side check) and C against the fp32 product of the reference G (the registry's
rule) and repeatability — and `dep-pre` (norm = 0: the same kernel on a G made beforehand). Then
graph-replay medians, L2 flushed: cuBLAS on the reference G, dep-pre, dep (its `ready` counters
zeroed inside the timed graph: a memset node). The period of each is the slope between the K's,
per wide k-block and SM; dep − dep-pre is what making G in the kernel costs the GEMM (the
probe's w256-s4-l2-side measured 0.18 µs a step for a stream not read back).
"""

from __future__ import annotations

import ctypes
import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import wide_probe  # noqa: E402  (the same library: wide_probe.cu)

SHAPES = [(2816, 1536, 1536), (2816, 1536, 8192)]
# --small (16th session): what making G in the kernel costs where the op's small cases live (T =
# M ≤ 1.5k tokens, K = 1536 as dX's): fixed cost, not rate; timed after the two SHAPES.
SMALL = [(128, 1536, 1536), (512, 1536, 1536), (1024, 1536, 1536), (1536, 1536, 1536)]
# wp_dep_launch's `norm` argument: 0 the kernel on a G made beforehand; 1 the 15th session's `dep`
# (CTA j of a row block makes its heads j, j + 6, …; 4 rows in flight per norm warp); 16th
# session: 2 = 1 with 8 rows in flight; 3 = every CTA makes 1/6 of the rows of every head, in the
# order they are read; 4 = 3 with 8 rows in flight; 5 = 1 with each step's 4 rows taken through
# each phase together (loads, dot products, shuffles, outputs); 6 = 5 with rows split; 7 = 5 fed
# by a per-warp cp.async ring (the next step's rows in flight while one is computed): two slots
# of 4 rows; 8 = three of 3 (two steps ahead).
VARIANTS = {
    "dep-pre": 0, "dep": 1, "dep-u8": 2, "dep-rows": 3, "dep-rows-u8": 4, "dep-ph4": 5, "dep-rows-ph4": 6,
    "dep-cp4": 7, "dep-cp3x3": 8,
}  # fmt: skip


def reference_g(torch, g, x, w, rs):
    """G [M, K] of g, x̂ [M, K] and rstd [M, K / 256]: wide_probe's reference of each (row, head)."""
    m_, k = g.shape
    return wide_probe.norm_reference(torch, g.view(-1, 256), x.view(-1, 256), w, rs.reshape(-1)).view(m_, k)


def open_library(out_dir: str) -> ctypes.CDLL:
    """wide_probe.cu built (its ptxas report into out_dir), wp_dep_launch declared."""
    lib = wide_probe.build(out_dir)
    lib.wp_dep_launch.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_void_p] * 6
    lib.wp_dep_launch.restype = ctypes.c_int
    return lib


def make_inputs(torch, gen, m: int, n: int, k: int) -> dict:
    """Random g, x̂ [M, K], w [256], rstd [M, K / 256], B [K, N]; G NaN, ready zero."""
    return {
        "g": torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16),
        "x": torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16),
        "w": (0.1 * torch.randn(256, device="cuda", generator=gen)).to(torch.bfloat16),
        "rs": 0.5 + torch.rand(m, k // 256, device="cuda", generator=gen),
        "b": torch.randn(k, n, device="cuda", generator=gen).to(torch.bfloat16),
        "G": torch.full((m, k), float("nan"), device="cuda", dtype=torch.bfloat16),
        "ready": torch.zeros((m // 128) * (k // 256), device="cuda", dtype=torch.int32),
        "mnk": (m, n, k),
    }


def launch(lib, torch, norm: int, t: dict, c) -> None:
    """One dep launch (variant `norm`) on torch's current stream; `ready` is the caller's to zero."""
    stream = torch.cuda.current_stream().cuda_stream
    rc = lib.wp_dep_launch(
        norm, t["G"].data_ptr(), t["b"].data_ptr(), c.data_ptr(), *t["mnk"],
        t["g"].data_ptr(), t["x"].data_ptr(), t["w"].data_ptr(), t["rs"].data_ptr(), t["ready"].data_ptr(), stream,
    )  # fmt: skip
    if rc != 0:
        raise RuntimeError(f"wp_dep_launch({norm}) = {rc}")


def main() -> int:
    import torch

    from kernels.harness import timing

    out = sys.argv[1]
    samples = int(sys.argv[sys.argv.index("--samples") + 1]) if "--samples" in sys.argv else 50
    lib = open_library(os.path.dirname(os.path.abspath(out)))
    flush = timing.L2Flush()
    result = {"device": torch.cuda.get_device_name(), "samples": samples, "checks": [], "timing": []}
    ok_all = True

    shapes = SHAPES + (SMALL if "--small" in sys.argv else [])
    for si, (m, n, k) in enumerate(shapes):
        for rnd in range(2):
            t = make_inputs(torch, torch.Generator(device="cuda").manual_seed(15000 + 10 * si + rnd), m, n, k)
            gref = reference_g(torch, t["g"], t["x"], t["w"], t["rs"])
            ref = gref.float() @ t["b"].float()
            rms = float(ref.pow(2).mean().sqrt())
            for name, norm in VARIANTS.items():
                if norm == 0:
                    t["G"].copy_(gref)
                else:  # the kernel must write every element of G itself
                    t["G"].fill_(float("nan"))
                t["ready"].zero_()
                c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
                launch(lib, torch, norm, t, c)
                torch.cuda.synchronize()
                check = {"shape": [m, n, k], "variant": name, "round": rnd}
                if norm:
                    d = (t["G"].float() - gref.float()).abs()
                    ulp = torch.ldexp(torch.ones_like(d), torch.frexp(gref.float().abs()).exponent - 8)
                    grms = float(gref.float().pow(2).mean().sqrt())
                    check["g_finite"] = bool(torch.isfinite(t["G"]).all())
                    check["g_mismatch"] = int((d != 0).sum())
                    check["g_excess"] = float((d - ulp).clamp_min(0).max()) / grms
                finite = bool(torch.isfinite(c).all())
                err = (c.float() - ref).abs()
                check["err"] = float(err.max()) / rms if finite else float("inf")
                check["matched"] = float((err <= 0.01 * max(1.0, rms) + 0.01 * ref.abs()).float().mean())
                first = c.clone()
                t["ready"].zero_()
                launch(lib, torch, norm, t, c)
                torch.cuda.synchronize()
                check["deterministic"] = bool(torch.equal(first, c))
                passed = finite and check["deterministic"] and check["matched"] >= 0.999 and check["err"] < 0.05
                if norm:
                    passed = passed and check["g_finite"] and check["g_excess"] < 1e-3
                check["passed"] = passed
                ok_all &= passed
                result["checks"].append(check)
                print(f"check {m}x{n}x{k} {name:8s} r{rnd}: {check}", flush=True)
        t = make_inputs(torch, torch.Generator(device="cuda").manual_seed(15100 + si), m, n, k)
        gref = reference_g(torch, t["g"], t["x"], t["w"], t["rs"])
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        row = {"M": m, "N": n, "K": k}
        ts = timing.time_graph(lambda a, b, c: torch.mm(a, b, out=c), {"a": gref, "b": t["b"], "c": c},
                               warmups=10, samples=samples, flush=flush)  # fmt: skip
        row["cublas"] = timing.stats(ts)["median"] / 1e3
        t["G"].copy_(gref)
        for name, norm in VARIANTS.items():

            def fn(ready, c, norm=norm, t=t):
                ready.zero_()
                launch(lib, torch, norm, t, c)

            ts = timing.time_graph(fn, {"ready": t["ready"], "c": c}, warmups=10, samples=samples, flush=flush)
            row[name] = timing.stats(ts)["median"] / 1e3
        result["timing"].append(row)
        print(f"time {m}x{n}x{k}: " + "  ".join(f"{key} {row[key]:.2f} µs" for key in ("cublas", *VARIANTS)))
    t0, t1 = result["timing"][:2]
    dk = (t1["K"] - t0["K"]) // 64
    result["period_us"] = {key: (t1[key] - t0[key]) / dk for key in ("cublas", *VARIANTS)}
    for key, v in result["period_us"].items():
        print(f"period {key:12s}: {v:.3f} µs per 64-deep step (one wide k-block per SM)")
    result["all_passed"] = ok_all
    print("dep checks passed:", sum(c["passed"] for c in result["checks"]), "of", len(result["checks"]))
    json.dump(result, open(out, "w"), indent=1)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
