"""Bytes and FLOPs of ext-fused per case (issue 28), counted from its design, next to the
definition's minimum and ext-portable's (G written and read back):

  python lab/qkv_qknorm_backward/fused_model.py [OUT.json]

Per token (bf16 = 2 bytes; rstd and m fp32):
- minimum (definition.min_bytes): every input once, every output once: 8,212 B + weights.
- ext-portable: the norm reads grad_q/q_normed/grad_k/k_normed (5,120 B), grad_value (512 B) and
  rstd (20 B) and writes G (3,072 B); the GEMMs read G (3,072 B, from L2 where it stays), X
  (1,280 B) and write dX (1,280 B).
- ext-fused: the stats kernel reads the 5,120 B of Q/K rows and writes m (20 B); the GEMM reads
  them again (5,120 B: from L2 if they stayed, else from DRAM), grad_value, X, rstd and m, and
  writes dX. G is never written.
- L2 -> SM traffic of the fused GEMM (128×128 tiles): every one of the 5 dX column tiles reads its
  rows' g and x̂ (two bytes streams where the unfused GEMM reads one of G) and W; every one of the
  12×5 dW tiles reads its 128 G columns (g and x̂) and 128 X columns over all T tokens.
SOL = max(FLOPs / 989.4 TFLOP/s, bytes / 4.8 TB/s), as the protocol's.
"""

from __future__ import annotations

import json
import math
import sys

from kernels.ops.qkv_qknorm_backward import definition as d

PEAK_FLOPS = 989.4e12
PEAK_BW = 4.8e12


def per_case(b: int, s: int) -> dict:
    t = b * s
    flops = d.flops(b, s)
    weights = 2 * d.G_COLS * d.HIDDEN * 2  # read W, write dW
    qk_rows = 2 * (d.Q_SIZE + d.KV_SIZE) * 2  # grad and normed, Q and K: 5,120
    fused_lo = t * (qk_rows + 20 + qk_rows * 0 + 512 + 1280 + 20 + 20 + 1280) + weights
    fused_hi = fused_lo + t * qk_rows  # the GEMM's re-read of the Q/K rows misses L2
    portable = t * (qk_rows + 512 + 20 + 3072 + 3072 + 1280 + 1280) + weights
    nsb = -(-s // 128)
    rows = b * nsb * 128  # dX rows incl. the padding of the last tile of each batch
    kbw = b * -(-s // 64) * 64  # dW tokens incl. padding
    l2_dx = 5 * rows * (1280 * 2 * 2 + 256 * 2) + (rows // 128) * 5 * d.G_COLS * 128 * 2
    l2_dw = 60 * kbw * 128 * 2 * 2 + 60 * kbw * 128 * 2  # A (g + x̂, or V) and B (X) per tile
    return {
        "B": b,
        "S": s,
        "T": t,
        "gflop": flops / 1e9,
        "min_MB": d.min_bytes(b, s) / 1e6,
        "fused_dram_MB": [fused_lo / 1e6, fused_hi / 1e6],
        "portable_dram_MB": portable / 1e6,
        "fused_l2_to_sm_MB": (l2_dx + l2_dw) / 1e6,
        "sol_us": max(flops / PEAK_FLOPS, d.min_bytes(b, s) / PEAK_BW) * 1e6,
        "tc_us": flops / PEAK_FLOPS * 1e6,
    }


def main() -> int:
    rows = [per_case(b, s) for b, s in d.CASE_SHAPES]
    print("| case | B×S | T | GFLOP | min MB | fused DRAM MB | portable DRAM MB | fused L2→SM MB | SOL µs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for i, r in enumerate(rows):
        lo, hi = r["fused_dram_MB"]
        print(
            f"| {i} | {r['B']}×{r['S']} | {r['T']} | {r['gflop']:.2f} | {r['min_MB']:.1f} | {lo:.1f}–{hi:.1f} | "
            f"{r['portable_dram_MB']:.1f} | {r['fused_l2_to_sm_MB']:.0f} | {r['sol_us']:.2f} |"
        )
    geo = math.exp(sum(math.log(r["sol_us"]) for r in rows) / len(rows))
    print(f"SOL geomean {geo:.2f} µs")
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
