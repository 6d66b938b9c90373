"""Development check of ext-fused on the GPU (run in its own process, under a timeout):

  python kernels/bench/fused_check.py OUT.json [--samples N] [--modes auto,nopdl,...] [--ext]

1. Correctness of mode "auto", both entry points, 2 rounds each, fresh seeded inputs, NaN-poisoned
   outputs, on odd shapes and the 16 cases: the harness comparator, plus the relative L2 error
   ‖out − ref‖/‖ref‖ of every output against the fp32 oracle (must stay < 1e-2: catches a wrong
   tile that the 99%-of-elements rule could let through) and bitwise determinism between the two
   entry points.
2. Only if all of that passed: graph-replay medians (L2 flushed) per case for each mode, and for
   ext (mode auto) when --ext is given. The dbg-* modes time parts of the kernel (wrong results).
3. With --timeline: the debug build's per-CTA stamps (min/median/max µs after the first CTA's
   entry) at T = 131, 1024, 8192.
"""

from __future__ import annotations

import json
import sys
import time
import traceback


def main() -> int:
    out_path = sys.argv[1]
    argv = sys.argv[2:]
    samples = int(argv[argv.index("--samples") + 1]) if "--samples" in argv else 30
    modes = (argv[argv.index("--modes") + 1].split(",") if "--modes" in argv
             else ["auto", "nopdl", "dbg-nowait", "dbg-gemm"])
    import torch

    from kernels.harness import timing
    from kernels.bench.oracle import ODD_SHAPES, REL_L2_LIMIT, compare_outputs, relative_l2
    from kernels.harness.correctness import Tolerance
    from kernels.ops.qkv_qknorm_backward import definition as d
    from kernels.ops.qkv_qknorm_backward import ext_fused as f
    from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs
    from kernels.ops.qkv_qknorm_backward.reference import reference_fp32

    torch.backends.cuda.matmul.allow_tf32 = False
    result: dict = {"shapes": [], "timing": {}, "ok": True}
    t0 = time.time()
    f.load()
    result["load_s"] = round(time.time() - t0, 2)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    odd = ODD_SHAPES
    shapes = odd + list(d.CASE_SHAPES)
    tol = Tolerance()
    for i, (b, s) in enumerate(shapes):
        entry: dict = {"B": b, "S": s, "T": b * s, "plan": f.plan(b * s, sms)}
        try:
            for rnd in range(2):
                inputs = make_inputs(b, s, seed=7000 + 31 * i + rnd, device="cuda")
                ref = reference_fp32(**inputs)
                outs = allocate_outputs(b, s, "cuda")
                f.qkv_qknorm_backward_out(outs, **inputs)
                torch.cuda.synchronize()
                fn_outs = f.qkv_qknorm_backward(**inputs)
                torch.cuda.synchronize()
                checks = compare_outputs(outs, ref, tol) + compare_outputs(fn_outs, ref, tol, "(fn)")
                rel = relative_l2(outs, ref)
                det = all(torch.equal(a, c) for a, c in zip(outs, fn_outs))
                passed = all(c.passed for c in checks) and all(v < REL_L2_LIMIT for v in rel.values())
                entry.setdefault("rounds", []).append({
                    "passed": passed, "deterministic": det,
                    "failures": [c.failure for c in checks if not c.passed],
                    "rel_l2": {k: round(v, 6) for k, v in rel.items()},
                    "matched": {c.name: round(c.matched_ratio, 5) for c in checks},
                })
                if not passed or not det:
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
        worst = max(max(x["rel_l2"].values()) for x in r)
        print(f"B={b} S={s} T={b * s}: passed={all(x['passed'] for x in r)} "
              f"det={all(x['deterministic'] for x in r)} worst_rel_l2={worst:.2e} "
              f"sx={entry['plan']['sx']} sw={entry['plan']['sw']} grid={entry['plan']['grid']}"
              + ("" if all(x["passed"] for x in r) else f" {r[0]['failures'][:3]} {r[0]['rel_l2']}"),
              flush=True)

    if result["ok"]:
        flush = timing.L2Flush()
        impls = [(m, (lambda m: lambda **inp: f.qkv_qknorm_backward(mode=m, **inp))(m)) for m in modes]
        if "--ext" in argv:
            try:
                from kernels.ops.qkv_qknorm_backward import ext

                ext.load()
                impls.append(("ext", lambda **inp: ext.qkv_qknorm_backward(mode="auto", **inp)))
            except Exception as exc:  # timing of ext is optional here
                print(f"ext not timed: {exc}", flush=True)
        for i, (b, s) in enumerate(d.CASE_SHAPES):
            inputs = make_inputs(b, s, seed=9000 + i, device="cuda")
            row = {}
            for name, fn in impls:
                ns = timing.time_graph(fn, inputs, warmups=5, samples=samples, flush=flush)
                row[name] = timing.stats(ns)
            result["timing"][str(i)] = {"T": b * s, **row}
            print(f"case {i:2d} T={b * s:5d}: " + "  ".join(
                f"{n} {row[n]['median'] / 1000:6.2f}" for n, _ in impls), flush=True)
        import math

        for name, _ in impls:
            med = [result["timing"][str(i)][name]["median"] for i in range(len(d.CASE_SHAPES))]
            gm = math.exp(sum(math.log(x) for x in med) / len(med)) / 1000
            result.setdefault("geomean_us", {})[name] = round(gm, 3)
        print("geomean us: " + json.dumps(result["geomean_us"]), flush=True)
    if result["ok"] and "--timeline" in argv:
        # Debug build: per-CTA globaltimer stamps for a few cases (L2 flushed first).
        names = ["entry", "prod_first_loads", "cons_first_kblock", "first_mainloop_done",
                 "first_epilogue_done", "cons_done", "norm_first_group", "norm_last_flag",
                 "finalize_done", "watcher_all_ready", "prod_first_norm_wait"]
        flush = timing.L2Flush()
        for b, s in [(1, 131), (1, 1024), (1, 8192)]:
            inputs = make_inputs(b, s, seed=11, device="cuda")
            f.timeline(**inputs)
            torch.cuda.synchronize()
            flush()
            _, tl = f.timeline(**inputs)
            torch.cuda.synchronize()
            tl = tl.cpu()
            t0 = int(tl[:, 0][tl[:, 0] > 0].min())
            summary = {}
            for k, n in enumerate(names):
                col = tl[:, k]
                col = col[col > 0]
                if len(col):
                    us = ((col - t0).double() / 1000).sort().values
                    summary[n] = {"min": round(float(us[0]), 2), "med": round(float(us[len(us) // 2]), 2),
                                  "max": round(float(us[-1]), 2), "n": len(us)}
            summary["items_per_cta"] = [int(x) for x in tl[:, 11].tolist()]
            result.setdefault("timelines", {})[str(b * s)] = summary
            print(f"timeline T={b * s}: " + "; ".join(
                f"{n} {v['min']}/{v['med']}/{v['max']}" for n, v in summary.items() if isinstance(v, dict)),
                flush=True)
    with open(out_path, "w") as fh:
        json.dump(result, fh)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
