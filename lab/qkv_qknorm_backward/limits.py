"""What the kernelindex-controlled protocol lets any 051 implementation reach on this GPU, case by
case, timed exactly as the harness times an implementation (CUDA graph replay between events, L2
flushed before each sample, median of N):

  python lab/qkv_qknorm_backward/limits.py OUT.json [--samples 50] [--impls ext-streamnorm]

Columns:
- floor: a graph holding one tiny kernel (a 1-element add): the protocol's floor for any graph;
- cuBLAS GEMMs: only the two GEMMs, dX = G·[Wq;Wk;Wv] and dW = Gᵀ·X, by torch.mm into
  preallocated outputs, with G = [GQ|GK|GV] already in memory (no norm, no transposes);
- the listed implementations (complete: norm + both GEMMs), and the issue's targets.
Prints a table; everything goes to OUT.json.
"""

from __future__ import annotations

import importlib
import json
import math
import sys


def two_gemms(g, w, x, dx, dw) -> None:
    """cuBLAS's two GEMMs alone (through torch): dX = G·W and dW = Gᵀ·X into preallocated outputs."""
    import torch

    torch.mm(g, w, out=dx)
    torch.mm(g.t(), x, out=dw)


def gemm_inputs(t: int) -> dict:
    """Random G [T,1536], W [1536,640], X [T,640] and the outputs of two_gemms, on the GPU."""
    import torch

    from kernels.ops.qkv_qknorm_backward import definition as d

    return {
        "g": torch.randn(t, d.G_COLS, device="cuda").to(torch.bfloat16),
        "w": torch.randn(d.G_COLS, d.HIDDEN, device="cuda").to(torch.bfloat16),
        "x": torch.randn(t, d.HIDDEN, device="cuda").to(torch.bfloat16),
        "dx": torch.empty(t, d.HIDDEN, device="cuda", dtype=torch.bfloat16),
        "dw": torch.empty(d.G_COLS, d.HIDDEN, device="cuda", dtype=torch.bfloat16),
    }


def main() -> int:
    out_path = sys.argv[1]
    argv = sys.argv[2:]
    samples = int(argv[argv.index("--samples") + 1]) if "--samples" in argv else 50
    impls = argv[argv.index("--impls") + 1].split(",") if "--impls" in argv else ["ext-streamnorm"]
    import torch

    from kernels.harness import gpus, timing
    from kernels.implementations import get
    from kernels.ops.qkv_qknorm_backward import definition as d
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    torch.backends.cuda.matmul.allow_tf32 = False
    product = torch.cuda.get_device_name(0)
    flush = timing.L2Flush()
    one = torch.zeros(1, device="cuda")
    floor = timing.stats(timing.time_graph(lambda x: x.add_(1), {"x": one}, warmups=10, samples=samples, flush=flush))["median"]

    entry_points = {}
    for name in impls:
        module, _, func = get(name).entry_point.partition(":")
        entry_points[name] = getattr(importlib.import_module(module), func)

    rows = []
    for i, (b, s) in enumerate(d.CASE_SHAPES):
        t = b * s
        gemm_in = gemm_inputs(t)
        row = {
            "case": i,
            "B": b,
            "S": s,
            "T": t,
            "sol": gpus.sol_ns(d.flops(b, s), d.min_bytes(b, s), product),
            "floor": floor,
            "cublas_gemms": timing.stats(timing.time_graph(two_gemms, gemm_in, warmups=10, samples=samples, flush=flush))["median"],
        }
        inputs = make_inputs(b, s, seed=4000 + i, device="cuda")
        for name, fn in entry_points.items():
            row[name] = timing.stats(timing.time_graph(fn, inputs, warmups=10, samples=samples, flush=flush))["median"]
        rows.append(row)
        print(
            f"case {i:2d} T={t:5d}: SOL {row['sol'] / 1e3:6.2f}  floor {floor / 1e3:5.2f}  cuBLAS GEMMs "
            f"{row['cublas_gemms'] / 1e3:6.2f}  " + "  ".join(f"{n} {row[n] / 1e3:6.2f}" for n in entry_points),
            flush=True,
        )

    def geo(key):
        return math.exp(sum(math.log(r[key]) for r in rows) / len(rows))

    cols = ["sol", "floor", "cublas_gemms", *entry_points]
    geomean = {k: round(geo(k) / 1e3, 3) for k in cols}
    at_8192 = {k: round(min(r[k] for r in rows if r["T"] == 8192) / 1e3, 2) for k in cols}
    print("| | " + " | ".join(cols) + " | target |")
    print("|---|" + "---|" * (len(cols) + 1))
    print("| geomean µs | " + " | ".join(f"{geomean[k]:.2f}" for k in cols) + " | 13 |")
    print("| T = 8192 µs | " + " | ".join(f"{at_8192[k]:.2f}" for k in cols) + " | 47 |")
    with open(out_path, "w") as fh:
        json.dump(
            {
                "gpu": product,
                "samples": samples,
                "floor_ns": floor,
                "rows": rows,
                "geomean_us": geomean,
                "t8192_us": at_8192,
                "torch": torch.__version__,
            },
            fh,
            indent=1,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
