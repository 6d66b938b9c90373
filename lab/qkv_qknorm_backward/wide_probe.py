"""Issue 28, 13th session: run wide_probe.cu's GEMM skeletons beside cuBLAS on one problem.

  python lab/qkv_qknorm_backward/wide_probe.py OUT.json [--samples 50]

Builds the probe (nvcc, sm_90a, ptxas report printed), then for each shape (M, N, K) and variant:
correctness on fresh random inputs (NaN-poisoned output; max|err|/rms against an fp32 product of
the same bf16 inputs, and against cuBLAS's bf16 output), then graph-replay medians with L2 flushed
(kernels.harness.timing, as the harness times an implementation), cuBLAS (torch.mm into a
preallocated output) first. The per-k-block period of each variant is the slope between the two
depths K = 1536 and K = 8192 on the same 132-tile grid (fixed costs cancel). Variants w256-s3-xform (the
transform on warps 1-3) and w256-s3-cxform (each consumer warpgroup transforms its own rows one
k-block ahead, under the previous wgmma) compute C = G·B with G = rstd·(ĝ − m·x̂), ĝ = bf16(g + g·w) made in the kernel from A = g (its
reference makes G in fp32 from the same bf16 inputs, rounds it to bf16, then G·B in fp32). 14th
session: w256-cxr (each consumer thread builds its A fragments in registers, wgmma from registers)
and w256-cxr-l2 (the same with g/x̂ L2-resident); checks add the error left after the output's own
bf16 rounding and, at K = 1536, the kernel's G itself element by element. 15th session:
w256-cxr-h2 (cxr's build in bf16x2 arithmetic: not the definition's fp32 arithmetic, so it is held
to the registry's tolerance, kernels/harness/correctness.py, instead of the bitwise G),
w256-cxrt-h2 and w256-cxrt-h2s (dW's side, C = Gᵀ·B with g and x̂ given [K, M] and rstd/m [6, K],
the per-token scalars from L1, or from shared memory filled by warp 1; beside cuBLAS's Aᵀ·B,
"cublas_t"), w256-cxr-h2-ser (a diagnostic: no build under a running wgmma), w256-s4-side (the
skeleton with the whole Q/K norm of 10·K rows of 256 — row statistics included — streamed by
warps 1-3 of each CTA beside it, G written to global memory), side-only (that stream alone),
w256-s4-l2 and w256-s4-l2-side (the same with the skeleton's A L2-resident), and w256-cxr-h2-mc,
w256-cxrt-h2s-mc (2-CTA clusters, B multicast).
--variants 0,7,11 picks a subset. Lab only.
"""

from __future__ import annotations

import ctypes
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "lab/qkv_qknorm_backward/wide_probe.cu"
CSRC = ROOT / "kernels/ops/qkv_qknorm_backward/csrc"
VARIANTS = {
    0: "w256-s4",
    1: "w256-s3",
    2: "w128-s4",
    3: "w128-s6",
    4: "w256-s4-pass",
    5: "w128-s4-pass",
    6: "w256-s3-xform",
    7: "w256-s3-cxform",
    11: "w256-cxr",
    12: "w256-cxr-l2",
    17: "w256-cxr-h2",
    18: "w256-cxrt-h2",
    20: "w256-cxrt-h2s",
    21: "w256-cxr-h2-ser",
    22: "w256-s4-side",
    23: "side-only",
    27: "w256-s4-l2",
    28: "w256-s4-l2-side",
    29: "w256-cxr-h2-mc",
    30: "w256-cxrt-h2s-mc",
}
XFORM = (6, 7, 11, 12, 17, 18, 20, 21, 29, 30)  # C = G·B (18: Gᵀ·B) with G made in the kernel
BF16_ARITH = (17, 18, 20, 21, 29, 30)  # G in bf16x2 arithmetic: the registry's tolerance, not bitwise G
TRANSPOSED = (18, 20, 30)  # A = Gᵀ: g, x̂ as [K, M], rstd/m as [6, K]
SIDE = (22, 23, 28)  # the norm streamed beside the GEMM (wp_set_side); 23: no GEMM
SIDE_ROWS_PER_K = 10  # side rows per unit of K: ~1.5 TB/s at the skeleton's rate (the real op: ~1.35)
XIN = XFORM  # variants that take x̂, w, rstd, m
WRAP = {12: 12, 27: 12, 28: 12}  # g/x̂ read at column (k-block mod 12)·64: L2-resident, no DRAM stream
# 66 row tiles × 512 columns: 132 CTAs of 128×256 (one per SM), 264 of 128×128 (two waves)
SHAPES = [(8448, 512, 1536), (8448, 512, 8192), (8192, 512, 1536)]


def build(out_dir: str) -> ctypes.CDLL:
    so = "/tmp/wide_probe.so"
    cmd = [
        "nvcc",
        "-std=c++17",
        "-O3",
        "-gencode=arch=compute_90a,code=sm_90a",
        "-Xptxas",
        "-v",
        "-I",
        str(CSRC),
        "-Xcompiler",
        "-fPIC",
        "-shared",
        "-cudart",
        "static",
        "-o",
        so,
        str(SRC),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    report = r.stdout + r.stderr
    pathlib.Path(out_dir, "wide_probe_ptxas.txt").write_text(report)
    for line in report.splitlines():
        if "Compiling" in line or "spill" in line or "Used" in line or "error" in line or "warning" in line:
            print(line.strip())
    if r.returncode != 0:
        raise SystemExit(f"nvcc failed: {r.returncode}")
    sass = subprocess.run(["cuobjdump", "--dump-sass", so], capture_output=True, text=True).stdout
    print(
        "SASS: HGMMA", sass.count("HGMMA"), "| WARPGROUP", sass.count("WARPGROUP"), "| LDL", sass.count("LDL"), "| STL", sass.count("STL")
    )
    lib = ctypes.CDLL(so)
    lib.wp_launch.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_void_p] * 5
    lib.wp_launch.restype = ctypes.c_int
    lib.wp_set_side.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int]
    lib.wp_set_side.restype = None
    return lib


def side_inputs(torch, gen, rows):
    return {
        "g": torch.randn(rows, 256, device="cuda", generator=gen).to(torch.bfloat16),
        "x": torch.randn(rows, 256, device="cuda", generator=gen).to(torch.bfloat16),
        "rs": 0.5 + torch.rand(rows, device="cuda", generator=gen),
        "w": (0.1 * torch.randn(256, device="cuda", generator=gen)).to(torch.bfloat16),
        "out": torch.full((rows, 256), float("nan"), device="cuda", dtype=torch.bfloat16),
    }


def set_side(lib, sd):
    lib.wp_set_side(*(sd[key].data_ptr() for key in ("g", "x", "rs", "w", "out")), sd["g"].shape[0])


def norm_reference(torch, g, x, w, rs):
    """The definition's G of rows of 256 (bf16 g, x̂ [rows, 256], w [256], rstd [rows]), m included,
    in fp32 then rounded: bf16(rs·(ĝ − m·x̂)), ĝ = bf16(g + g·w), m = mean(ĝ·x̂)."""
    gf = g.float()
    gh = (gf * w.float() + gf).to(torch.bfloat16).float()
    xf = x.float()
    m = (gh * xf).mean(dim=-1, keepdim=True)
    return (rs[:, None] * (gh - m * xf)).to(torch.bfloat16)


def side_check(torch, sd):
    """The side job's G against the definition in fp32 (m by torch's sum: a different order)."""
    ref = norm_reference(torch, sd["g"], sd["x"], sd["w"], sd["rs"]).float()
    out = sd["out"].float()
    if not bool(torch.isfinite(out).all()):
        return {"side_finite": False, "side_passed": False}
    d = (out - ref).abs()
    rel = float(d.max()) / float(ref.pow(2).mean().sqrt())
    ulp = torch.ldexp(torch.ones_like(ref), torch.frexp(ref.abs()).exponent - 8)
    worst = float((d / ulp).max())
    excess = float((d - ulp).clamp_min(0).max()) / float(ref.pow(2).mean().sqrt())
    # m's sum order differs (a warp's shuffle tree vs torch's): a result near a rounding boundary
    # rounds the other way (calls 4-5: 17-139 of 3.9-21 M elements; one ulp of an element at 2-4
    # rms, or up to 47 ulp of a tiny one where ĝ − m·x̂ cancels): pass if, beyond one ulp, no
    # element is off by more than 1e-3 rms
    return {
        "side_finite": True,
        "side_mismatch": int((d != 0).sum()),
        "side_err": rel,
        "side_max_ulp": worst,
        "side_excess": excess,
        "side_passed": excess < 1e-3,
    }


def main() -> int:
    import torch

    from kernels.harness import timing

    out = sys.argv[1]
    samples = int(sys.argv[sys.argv.index("--samples") + 1]) if "--samples" in sys.argv else 50
    if "--variants" in sys.argv:  # a subset, e.g. --variants 0,7,8
        keep = {int(v) for v in sys.argv[sys.argv.index("--variants") + 1].split(",")}
        for v in [v for v in VARIANTS if v not in keep]:
            del VARIANTS[v]
    out_dir = os.path.dirname(os.path.abspath(out))
    lib = build(out_dir)
    flush = timing.L2Flush()
    result = {"device": torch.cuda.get_device_name(), "samples": samples, "checks": [], "timing": []}
    ok_all = True
    for si, (m, n, k) in enumerate(SHAPES):
        flops = 2.0 * m * n * k
        row = {"M": m, "N": n, "K": k}
        gen = torch.Generator(device="cuda").manual_seed(1300 + si)
        a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
        b = torch.randn(k, n, device="cuda", generator=gen).to(torch.bfloat16)
        ref = a.float() @ b.float()
        cub = torch.mm(a, b)
        rms = float(ref.pow(2).mean().sqrt())
        row["cublas_err"] = float((cub.float() - ref).abs().max()) / rms

        def run(v, a_, b_, c_, x_=None, w_=None, rs_=None, mm_=None, m=m, n=n, k=k):
            stream = torch.cuda.current_stream().cuda_stream  # the capture stream inside a graph capture
            ptr = [0 if t is None else t.data_ptr() for t in (x_, w_, rs_, mm_)]
            rc = lib.wp_launch(v, a_.data_ptr(), b_.data_ptr(), c_.data_ptr(), m, n, k, *ptr, stream)
            if rc != 0:
                raise RuntimeError(f"wp_launch({v}) = {rc}")

        def xform_inputs(gen_, m=m, k=k, t=False):
            if t:  # dW's layout: x̂ [K, M], rstd and m per token, [head, K]
                return {
                    "x_": torch.randn(k, m, device="cuda", generator=gen_).to(torch.bfloat16),
                    "w_": (0.1 * torch.randn(256, device="cuda", generator=gen_)).to(torch.bfloat16),
                    "rs_": 0.5 + torch.rand(6, k, device="cuda", generator=gen_),
                    "mm_": 0.1 * torch.randn(6, k, device="cuda", generator=gen_),
                }
            return {
                "x_": torch.randn(m, k, device="cuda", generator=gen_).to(torch.bfloat16),
                "w_": (0.1 * torch.randn(256, device="cuda", generator=gen_)).to(torch.bfloat16),
                "rs_": 0.5 + torch.rand(m, 6, device="cuda", generator=gen_),
                "mm_": 0.1 * torch.randn(m, 6, device="cuda", generator=gen_),
            }

        def g_of(a_, x_, w_, rs_, mm_, k=k):
            col = torch.arange(k, device="cuda")
            head = (col // 256) % 6
            d = col % 256
            gf = a_.float()
            gh = (gf * w_.float()[d] + gf).to(torch.bfloat16).float()
            return (rs_[:, head] * (gh - mm_[:, head] * x_.float())).to(torch.bfloat16)

        for v, name in VARIANTS.items():
            for rnd in range(2):  # fresh inputs each round
                gen2 = torch.Generator(device="cuda").manual_seed(9000 + 100 * si + 10 * v + rnd)
                if v in SIDE:
                    sd = side_inputs(torch, gen2, SIDE_ROWS_PER_K * k)
                    set_side(lib, sd)
                tr = v in TRANSPOSED
                a2 = torch.randn(*((k, m) if tr else (m, k)), device="cuda", generator=gen2).to(torch.bfloat16)
                b2 = torch.randn(k, n, device="cuda", generator=gen2).to(torch.bfloat16)
                xi = xform_inputs(gen2, t=tr) if v in XIN else {}
                c2 = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
                run(v, a2, b2, c2, **xi)
                torch.cuda.synchronize()
                if v == 23:  # the side job alone: its output and repeatability only
                    sc = side_check(torch, sd)
                    first = sd["out"].clone()
                    run(v, a2, b2, c2)
                    torch.cuda.synchronize()
                    passed = sc["side_passed"] and bool(torch.equal(first, sd["out"]))
                    ok_all &= passed
                    result["checks"].append({"shape": [m, n, k], "variant": name, "round": rnd, **sc, "passed": passed})
                    print(f"check {m}x{n}x{k} {name:13s} r{rnd}: passed={passed} {sc}", flush=True)
                    continue
                if v in WRAP:  # the kernel reads g/x̂ column c at c mod 64·WRAP[v]
                    cols = torch.arange(k, device="cuda") % (64 * WRAP[v])
                    a_eff = g_of(a2[:, cols], **{**xi, "x_": xi["x_"][:, cols]}) if v in XFORM else a2[:, cols]
                elif tr:
                    # G made as [K, M] (rows: tokens; column c in head (c // 256) mod 6), then [M, K]
                    a_eff = g_of(a2, xi["x_"], xi["w_"], xi["rs_"].t(), xi["mm_"].t(), k=m).t()
                else:
                    a_eff = g_of(a2, **xi) if v in XFORM else a2
                r2 = a_eff.float() @ b2.float()
                rms2 = float(r2.pow(2).mean().sqrt())
                finite = bool(torch.isfinite(c2).all())
                err = float((c2.float() - r2).abs().max()) / rms2 if finite else float("inf")
                # the error left after the output's own bf16 rounding (half an ulp of |ref|): a
                # transform variant's outputs reach > 8 rms, where that rounding alone is 0.016-0.031 rms
                half_ulp = torch.ldexp(torch.ones_like(r2), torch.frexp(r2.abs()).exponent - 9)
                excess = float(((c2.float() - r2).abs() - half_ulp).clamp_min(0).max()) / rms2 if finite else float("inf")
                # the registry's rule (kernels/harness/correctness.py): |err| ≤ 0.01·max(1, rms) + 0.01·|ref|
                within = (c2.float() - r2).abs() <= 0.01 * max(1.0, rms2) + 0.01 * r2.abs()
                matched = float(within.float().mean()) if finite else 0.0
                gcheck = {}
                if si == 0 and rnd == 0 and v in XFORM:  # the kernel's G itself, bitwise: B selects columns
                    mis, worst = 0, 0.0
                    eye = torch.arange(n, device="cuda")
                    for s_ in range(k // n):
                        bsel = torch.zeros(k, n, device="cuda", dtype=torch.bfloat16)
                        bsel[s_ * n + eye, eye] = 1.0
                        cs = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
                        run(v, a2, bsel, cs, **xi)
                        torch.cuda.synchronize()
                        gref = a_eff[:, s_ * n : (s_ + 1) * n].float()
                        d = (cs.float() - gref).abs()
                        mis += int((d != 0).sum())
                        ulp = torch.ldexp(torch.ones_like(gref), torch.frexp(gref.abs()).exponent - 8)
                        worst = max(worst, float((d / ulp).max()))
                    gcheck = {"g_mismatch": mis, "g_elems": m * k, "g_max_ulp": worst}
                err_cub = float((c2.float() - torch.mm(a_eff, b2).float()).abs().max()) / rms2 if finite else float("inf")
                again = c2.clone()
                run(v, a2, b2, c2, **xi)
                torch.cuda.synchronize()
                det = bool(torch.equal(again, c2))
                if v in BF16_ARITH:
                    passed = finite and det and matched >= 0.999 and err < 0.05
                else:
                    passed = finite and det and (err < 0.02 or excess < 0.005)
                if v in SIDE:
                    gcheck = side_check(torch, sd)
                    passed = passed and gcheck["side_passed"]
                ok_all &= passed
                result["checks"].append(
                    {
                        "shape": [m, n, k],
                        "variant": name,
                        "round": rnd,
                        "finite": finite,
                        "err_fp32": err,
                        "err_vs_cublas": err_cub,
                        "err_excess": excess,
                        "matched_ratio": matched,
                        **gcheck,
                        "deterministic": det,
                        "passed": passed,
                    }
                )
                print(
                    f"check {m}x{n}x{k} {name:13s} r{rnd}: passed={passed} finite={finite} max|err|/rms={err:.2e} "
                    f"(vs cuBLAS {err_cub:.2e}) excess={excess:.1e} matched={matched:.5f} det={det} {gcheck}",
                    flush=True,
                )
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        ins = {"a": a, "b": b, "c": c}
        ts = timing.time_graph(lambda a, b, c: torch.mm(a, b, out=c), ins, warmups=10, samples=samples, flush=flush)
        row["cublas"] = timing.stats(ts)["median"] / 1e3
        keys = ["cublas"]
        if any(v in TRANSPOSED for v in VARIANTS):  # dW's floor: cuBLAS on Aᵀ·B, A stored [K, M]
            at = torch.randn(k, m, device="cuda", generator=gen).to(torch.bfloat16)
            ins_t = {"a": at, "b": b, "c": c}
            ts = timing.time_graph(lambda a, b, c: torch.mm(a.t(), b, out=c), ins_t, warmups=10, samples=samples, flush=flush)
            row["cublas_t"] = timing.stats(ts)["median"] / 1e3
            keys.append("cublas_t")
            xin_t = xform_inputs(torch.Generator(device="cuda").manual_seed(1500 + si), t=True)
        xin = xform_inputs(torch.Generator(device="cuda").manual_seed(1400 + si))
        if any(v in SIDE for v in VARIANTS):
            si_t = side_inputs(torch, torch.Generator(device="cuda").manual_seed(1600 + si), SIDE_ROWS_PER_K * k)
            set_side(lib, si_t)
        for v, name in VARIANTS.items():
            if v in TRANSPOSED:
                ins_v = {**ins_t, **{key.rstrip("_"): t for key, t in xin_t.items()}}

                def fn(a, b, c, x, w, rs, mm, v=v):
                    run(v, a, b, c, x, w, rs, mm)
            elif v in XIN:
                ins_v = {**ins, **{key.rstrip("_"): t for key, t in xin.items()}}

                def fn(a, b, c, x, w, rs, mm, v=v):
                    run(v, a, b, c, x, w, rs, mm)
            else:
                ins_v = ins

                def fn(a, b, c, v=v):
                    run(v, a, b, c)

            ts = timing.time_graph(fn, ins_v, warmups=10, samples=samples, flush=flush)
            row[name] = timing.stats(ts)["median"] / 1e3
        keys += list(VARIANTS.values())
        row["tflops"] = {key: flops / (row[key] * 1e-6) / 1e12 for key in keys}
        result["timing"].append(row)
        print(
            f"time {m}x{n}x{k} ({flops / 1e9:.1f} GFLOP): "
            + "  ".join(f"{key} {row[key]:.2f} µs ({row['tflops'][key]:.0f} TF/s)" for key in keys),
            flush=True,
        )
    # per-k-block period: slope between K = 1536 and K = 8192 on the 8448×512 grid, per SM
    t0, t1 = result["timing"][0], result["timing"][1]
    dk = (t1["K"] - t0["K"]) // 64
    result["period_us"] = {}
    for key in keys:
        slope = (t1[key] - t0[key]) / dk  # µs per 64-deep k-block of the whole grid
        tiles = 132 if "w256" in key or key.startswith("cublas") else 264
        # µs per 128×256×64 k-block on one SM (128×128 variants: 2 tiles per SM in sequence)
        result["period_us"][key] = slope
        print(
            f"period {key:13s}: {slope:.3f} µs per 64-deep step of the 8448×512 grid "
            f"({'1 wide' if tiles == 132 else '2 narrow'} k-block per SM; tensor floor 0.70 µs at 790 TFLOP/s)"
        )
    result["all_passed"] = ok_all
    print("probe checks passed:", sum(c["passed"] for c in result["checks"]), "of", len(result["checks"]))
    json.dump(result, open(out, "w"), indent=1)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
