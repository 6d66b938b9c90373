"""Development check and plan sweep of ext-streamnorm on the GPU (run in its own process, under a
timeout), from the repository root:

  python lab/qkv_qknorm_backward/check.py OUT.json [--module ext_streamnorm] [--samples N] [--sweep]
      [--modes auto,dbg-gemm,...] [--check-modes m1,m2] [--timeline auto]

--module picks the implementation module checked and swept; a timed mode may name another module
("other_module:auto") for a side-by-side comparison.

1. Correctness of mode "auto", both entry points, 2 rounds each, fresh seeded inputs, NaN-poisoned
   outputs, on odd shapes and the 16 cases: the harness comparator plus the relative L2 error of
   every output against the fp32 oracle (< 1e-2), and bitwise equality between the entry points.
2. With --sweep: every forced plan (tile rows, cluster size, CTAs per dW / dX tile, order) at each
   distinct T of the 16 cases, each checked against the oracle once (a wrong plan is reported and
   never timed), then timed (graph replay, L2 flushed, median of N).
3. Graph-replay medians (L2 flushed) per case for the listed modes.
Prints a short table last; everything goes to OUT.json.
"""

from __future__ import annotations

import itertools
import json
import sys
import time


def sweep_modes(tokens: int = 0) -> list[str]:
    """Every forced GEMM plan (the same at any T)."""
    modes = []
    for bm, cl in itertools.product((128, 256), (1, 2, 4, 8)):
        for sw, sx in itertools.product((1, 2, 4, 8), repeat=2):
            if sw <= cl and sx <= cl:
                for xf in ("", "-xf"):
                    modes.append(f"bm{bm}-c{cl}-w{sw}-x{sx}{xf}")
    return modes


def summarize_timeline(ntl, gtl) -> dict:
    """min/median/max µs after the first stamp, per phase; dW and dX CTAs apart."""
    import torch

    gtl = gtl[gtl[:, 0] > 0]  # CTAs that never ran leave their rows empty
    starts = [x for x in (ntl[:, 0], gtl[:, 0]) if len(x)]
    t0 = int(torch.cat(starts)[torch.cat(starts) > 0].min())

    def mmm(col):
        col = col[col > 0]
        if not len(col):
            return "-"
        us = ((col - t0).double() / 1000).sort().values
        return f"{us[0]:.1f}/{us[len(us) // 2]:.1f}/{us[-1]:.1f}"

    out = {"norm_entry": mmm(ntl[:, 0]), "norm_exit": mmm(ntl[:, 1])}
    names = ["entry", "", "b_issued", "wait_ret", "first_data", "mainloop_done", "sync1", "stored", "exit"]
    for kind, sel in (("dW", gtl[:, 10] == 1), ("dX", gtl[:, 10] == 0)):
        g = gtl[sel]
        if not len(g):
            continue
        for k, n in enumerate(names):
            if n:
                out[f"{kind}_{n}"] = mmm(g[:, k])
        life = ((g[:, 8] - g[:, 0]).double() / 1000).sort().values
        out[f"{kind}_life"] = f"{life[0]:.1f}/{life[len(life) // 2]:.1f}/{life[-1]:.1f}"
        ok = (g[:, 5] > 0) & (g[:, 4] > 0) & (g[:, 9] > 1)
        if ok.any():
            per = ((g[ok, 5] - g[ok, 4]).double() / 1000 / (g[ok, 9] - 1).double()).median()
            out[f"{kind}_us_per_kb"] = round(float(per), 3)
        out[f"{kind}_n"] = len(g)
    out["per_cta"] = gtl.tolist()
    return out


def main() -> int:
    out_path = sys.argv[1]
    argv = sys.argv[2:]
    samples = int(argv[argv.index("--samples") + 1]) if "--samples" in argv else 30
    modes = argv[argv.index("--modes") + 1].split(",") if "--modes" in argv else ["auto", "nopdl", "dbg-gemm", "dbg-norm"]
    import importlib

    import torch
    from oracle import (  # beside this script
        ODD_SHAPES,
        check_entry_points,
        entry_line,
        entry_ok,
        graph_timeline,
        sweep_cases,
        time_cases,
    )
    from oracle import check as oracle_check

    from kernels.harness import timing
    from kernels.harness.correctness import Tolerance
    from kernels.ops.qkv_qknorm_backward import definition as d

    module = argv[argv.index("--module") + 1] if "--module" in argv else "ext_streamnorm"
    from debug import streamnorm  # beside this script: ext_streamnorm with its debug modes and timeline()

    e = streamnorm if module == "ext_streamnorm" else importlib.import_module(f"kernels.ops.qkv_qknorm_backward.{module}")
    from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs
    from kernels.ops.qkv_qknorm_backward.reference import reference_fp32

    torch.backends.cuda.matmul.allow_tf32 = False
    result: dict = {"module": module, "shapes": [], "timing": {}, "sweep": {}, "ok": True}
    t0 = time.time()
    e.load()
    result["load_s"] = round(time.time() - t0, 2)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tol = Tolerance()

    odd = ODD_SHAPES
    for i, (b, s) in enumerate(odd + list(d.CASE_SHAPES)):
        p = e.plan(b * s, sms)
        entry = {"B": b, "S": s, "T": b * s, "plan": p, **check_entry_points(e, b, s, 7000 + 31 * i, tol)}
        result["shapes"].append(entry)
        result["ok"] = result["ok"] and entry_ok(entry)
        print(
            entry_line(b, s, entry, f"bm{p['bm']}-c{p['cluster']}-w{p['sw']}-x{p['sx']}{'-xf' if p['x_first'] else ''} grid={p['grid']}"),
            flush=True,
        )
        if not result["ok"] and "--keep-going" not in argv:
            break

    if result["ok"] and "--check-modes" in argv:
        # Forced plans on the odd shapes and the 16 cases, one round each.
        for m in argv[argv.index("--check-modes") + 1].split(","):
            bad = []
            for i, (b, s) in enumerate(odd + list(d.CASE_SHAPES)):
                inputs = make_inputs(b, s, seed=8000 + 31 * i, device="cuda")
                ref = reference_fp32(**inputs)
                outs = allocate_outputs(b, s, "cuda")
                try:
                    e.qkv_qknorm_backward_out(outs, mode=m, **inputs)
                    torch.cuda.synchronize()
                    ok, fails, _rel = oracle_check(outs, ref, tol)
                except Exception as exc:
                    ok, fails, _rel = False, [f"{type(exc).__name__}: {exc}"[:200]], {}
                if not ok:
                    bad.append((b, s, fails[:2]))
            result.setdefault("check_modes", {})[m] = {"failed": [list(x[:2]) for x in bad]}
            print(
                f"check {m}: {len(odd) + len(d.CASE_SHAPES) - len(bad)} shapes passed" + (f", FAILED {bad[:3]}" if bad else ""), flush=True
            )
            if bad:
                result["ok"] = False

    flush = timing.L2Flush()
    if result["ok"] and "--sweep" in argv:
        for t, row in sweep_cases(e, sweep_modes, sms, tol, flush):
            result["sweep"][str(t)] = row
            result["ok"] = result["ok"] and not any("error" in v for v in row.values())
            good = sorted((v["median"], k) for k, v in row.items() if "median" in v)
            bad = [k for k, v in row.items() if "error" in v]
            auto = e.plan(t, sms)
            print(
                f"sweep T={t:5d}: best "
                + "  ".join(f"{k} {ns / 1000:.2f}" for ns, k in good[:4])
                + f" | auto=bm{auto['bm']}-c{auto['cluster']}-w{auto['sw']}-x{auto['sx']}"
                + ("-xf" if auto["x_first"] else "")
                + (f" | {len(bad)} failed: {bad[:3]} {row[bad[0]]}" if bad else ""),
                flush=True,
            )

    if "--timeline" in argv:
        for t in (131, 1024, 4096, 8192):
            for m in argv[argv.index("--timeline") + 1].split(","):
                ntl, gtl = graph_timeline(e, m, t, flush)
                summary = summarize_timeline(ntl, gtl)
                result.setdefault("timelines", {}).setdefault(str(t), {})[m] = summary
                print(f"timeline T={t} {m}: " + "; ".join(f"{k} {v}" for k, v in summary.items() if k != "per_cta"), flush=True)

    time_cases(e, modes, samples, flush, result)
    with open(out_path, "w") as fh:
        json.dump(result, fh)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
