"""Development check of one extension mode on the GPU (run in its own process, under a timeout,
so that a hang or a fault in one mode cannot take the others down):

  python kernels/bench/dev_check.py MODE OUT.json [--samples N]

Correctness (both entry points, NaN-poisoned outputs, harness comparator) on odd shapes and the
16 cases; bitwise determinism; graph-replay median per case with the L2 flushed."""

from __future__ import annotations

import json
import sys
import time
import traceback


def main() -> int:
    mode, out_path = sys.argv[1], sys.argv[2]
    samples = int(sys.argv[sys.argv.index("--samples") + 1]) if "--samples" in sys.argv else 30
    import torch

    from kernels.harness import timing
    from kernels.bench.oracle import compare_outputs
    from kernels.harness.correctness import Tolerance
    from kernels.ops.qkv_qknorm_backward import definition as d
    from kernels.ops.qkv_qknorm_backward import ext
    from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs
    from kernels.ops.qkv_qknorm_backward.reference import reference_fp32

    torch.backends.cuda.matmul.allow_tf32 = False
    result: dict = {"mode": mode, "shapes": [], "timing": [], "ok": True}
    t0 = time.time()
    ext.load()
    result["load_s"] = round(time.time() - t0, 2)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    odd = [(1, 1), (3, 77), (2, 1000), (1, 65), (5, 129), (7, 301), (1, 63), (2, 4097)]
    shapes = odd + list(d.CASE_SHAPES)
    tol = Tolerance()
    for i, (b, s) in enumerate(shapes):
        entry: dict = {"B": b, "S": s, "T": b * s}
        try:
            if mode != "cublas":
                entry["plan"] = ext.plan(b * s, sms, {"auto": 0, "wgmma128": 128, "wgmma256": 256}[mode])
            for rnd in range(2):
                inputs = make_inputs(b, s, seed=1000 + 17 * i + rnd, device="cuda")
                ref = reference_fp32(**inputs)
                outs = allocate_outputs(b, s, "cuda")
                ext.qkv_qknorm_backward_out(outs, mode=mode, **inputs)
                torch.cuda.synchronize()
                checks = compare_outputs(outs, ref, tol)
                fn_outs = ext.qkv_qknorm_backward(mode=mode, **inputs)
                torch.cuda.synchronize()
                checks += compare_outputs(fn_outs, ref, tol, "(fn)")
                det = all(torch.equal(a, c) for a, c in zip(outs, fn_outs))
                entry.setdefault("rounds", []).append({
                    "passed": all(c.passed for c in checks),
                    "deterministic": det,
                    "failures": [c.failure for c in checks if not c.passed],
                    "matched": {c.name: round(c.matched_ratio, 5) for c in checks},
                    "maxerr": {c.name: c.max_abs_error for c in checks},
                })
                if not all(c.passed for c in checks):
                    result["ok"] = False
        except Exception as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"
            entry["trace"] = traceback.format_exc()[-2000:]
            result["ok"] = False
            result["shapes"].append(entry)
            print(json.dumps(entry)[:3000], flush=True)
            break
        result["shapes"].append(entry)
        r = entry["rounds"]
        print(f"[{mode}] B={b} S={s}: passed={all(x['passed'] for x in r)} det={all(x['deterministic'] for x in r)}"
              + ("" if all(x["passed"] for x in r) else f" {r[0]['failures'][:3]}"), flush=True)

    if result["ok"]:
        flush = timing.L2Flush()
        fn = lambda **inp: ext.qkv_qknorm_backward(mode=mode, **inp)  # noqa: E731
        for i, (b, s) in enumerate(d.CASE_SHAPES):
            inputs = make_inputs(b, s, seed=5000 + i, device="cuda")
            ns = timing.time_graph(fn, inputs, warmups=5, samples=samples, flush=flush)
            st = timing.stats(ns)
            result["timing"].append({"case": i, "T": b * s, **st})
            print(f"[{mode}] case {i} T={b * s}: median {st['median'] / 1000:.2f} us "
                  f"(p25 {st['p25'] / 1000:.2f}, p75 {st['p75'] / 1000:.2f})", flush=True)
    with open(out_path, "w") as f:
        json.dump(result, f)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
