"""Issue 28, 16th session: ext-streamnorm's one-launch mode ("one") against its two-kernel modes.

  python lab/qkv_qknorm_backward/one_smoke.py OUT.json

Per shape and GEMM plan, on fresh random inputs: the plan with "-one" (the norm made by the GEMM
kernel's warps 1-3) and without (the norm kernel first) compute the same GQK with the same
arithmetic and the same GEMM plan, so dX and dW must be bitwise equal; the norm-weight gradients
are summed in another order (per 32-token unit instead of per norm block), so they are compared
against float64 sums. Then "one" again (bitwise repeatable), and the counter buffer must be zero
after each call (the kernel's last CTA zeroes it). Exit status 1 on any failure.
"""

from __future__ import annotations

import json
import sys

SHAPES = [(1, 131), (3, 77), (2, 1000), (4, 373), (1, 8192), (16, 541), (1, 16385)]
PLANS = ["auto", "bm128-c1-w1-x1", "bm128-c4-w1-x4-xf", "bm256-c4-w2-x1", "bm256-c2-w2-x2-xf"]


def main() -> int:
    import torch

    from kernels.ops.qkv_qknorm_backward import definition as d
    from kernels.ops.qkv_qknorm_backward import ext_streamnorm as sn
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    result, ok_all = [], True
    for i, (b, s) in enumerate(SHAPES):
        inputs = make_inputs(b, s, seed=16_000 + i, device="cuda")
        dq = (inputs["grad_query"].double() * inputs["q_normed"].double()).sum(dim=(0, 1, 2))
        dk = (inputs["grad_key"].double() * inputs["k_normed"].double()).sum(dim=(0, 1, 2))
        for plan in PLANS:
            one_mode = "one" if plan == "auto" else plan + "-one"
            two = sn.qkv_qknorm_backward(**inputs, mode=plan)
            one = sn.qkv_qknorm_backward(**inputs, mode=one_mode)
            again = sn.qkv_qknorm_backward(**inputs, mode=one_mode)
            torch.cuda.synchronize()
            leftover = sum(int(c.abs().sum()) for c in sn._one_counters.values())
            differ = [n for n, x, y in zip(d.OUTPUT_NAMES[:4], two[:4], one[:4]) if not torch.equal(x, y)]
            repeat = [n for n, x, y in zip(d.OUTPUT_NAMES, one, again) if not torch.equal(x, y)]
            nw_err = max(
                float((one[4].double() - dq).abs().max() / dq.abs().max()),
                float((one[5].double() - dk).abs().max() / dk.abs().max()),
            )
            finite = all(bool(torch.isfinite(o.float()).all()) for o in one)
            ok = finite and not differ and not repeat and leftover == 0 and nw_err < 1e-4
            ok_all &= ok
            row = {"B": b, "S": s, "plan": one_mode, "ok": ok, "finite": finite, "differ_from_two_kernels": differ,
                   "differ_run_to_run": repeat, "counters_left": leftover, "norm_weight_rel_err": nw_err}  # fmt: skip
            result.append(row)
            print("smoke", row, flush=True)
    json.dump({"gpu": torch.cuda.get_device_name(), "rows": result, "ok": ok_all}, open(sys.argv[1], "w"), indent=1)
    print("one smoke passed:", sum(r["ok"] for r in result), "of", len(result))
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
