"""Development check and plan sweep of ext-streamk on the GPU (run in its own process, under a
timeout):

  python kernels/bench/streamk_check.py OUT.json [--samples N] [--sweep] [--check-modes m1,m2]
      [--modes auto,dbg-norm,ext_streamnorm:auto,...] [--timeline auto,...]

1. Correctness of mode "auto", both entry points, 2 rounds each, fresh seeded inputs, NaN-poisoned
   outputs, on odd shapes and the 16 cases (the harness comparator plus the relative L2 error of
   every output against the fp32 oracle; bitwise equality between the entry points); then each
   --check-modes plan once on the same shapes.
2. With --sweep: forced plans (tile rows × persistent grid) at each distinct T of the 16 cases,
   each checked against the oracle once (a wrong plan is reported and never timed), then timed.
3. With --timeline: globaltimer stamps of one graph replay at T = 131, 1024, 4096, 8192.
4. Graph-replay medians (L2 flushed) per case for the listed modes ("module:mode" times another
   implementation module side by side).
Prints a short table last; everything goes to OUT.json.
"""

from __future__ import annotations

import json
import sys
import time

GRIDS = (0, 132, 120, 100, 80, 66)
DW_SHARES = (1, 2, 3, 4)  # dW CTAs = dW tiles × this (each dW tile split this many ways, in step)


def sweep_modes(tokens: int, sms: int) -> list[str]:
    from kernels.ops.qkv_qknorm_backward import ext_streamk as e

    modes = []
    for bm in (128, 256):
        nwt = (1536 // bm) * 5
        for g in GRIDS:
            for w in (0,) + tuple(nwt * k for k in DW_SHARES):
                m = f"bm{bm}" + (f"-g{g}" if g or w else "") + (f"-w{w}" if w else "")
                if g == 0 and w:
                    m = f"bm{bm}-g{sms}-w{w}"
                try:
                    e.plan(tokens, sms, m)
                except ValueError:
                    continue
                if m not in modes:
                    modes.append(m)
    return modes


def summarize_timeline(ntl, gtl) -> dict:
    """min/median/max µs after the first stamp of the call, per phase."""
    import torch

    starts = [x for x in (ntl[:, 0], gtl[:, 0]) if len(x)]
    t0 = int(torch.cat(starts)[torch.cat(starts) > 0].min())

    def mmm(col):
        col = col[col > 0]
        if not len(col):
            return "-"
        us = ((col - t0).double() / 1000).sort().values
        return f"{us[0]:.1f}/{us[len(us) // 2]:.1f}/{us[-1]:.1f}"

    def rel(col):
        return [round((int(x) - t0) / 1000, 2) if x > 0 else None for x in col]

    return {"norm_entry": mmm(ntl[:, 0]), "norm_exit": mmm(ntl[:, 1]), "gemm_entry": mmm(gtl[:, 0]),
            "first_data": mmm(gtl[:, 2]), "seg0_done": mmm(gtl[:, 3]), "owner_ready": mmm(gtl[:, 7]),
            "exit": mmm(gtl[:, 8]), "units": f"{int(gtl[:, 9].min())}..{int(gtl[:, 9].max())}",
            "segments": f"{int(gtl[:, 10].min())}..{int(gtl[:, 10].max())}",
            "per_cta": {"entry": rel(gtl[:, 0]), "first_data": rel(gtl[:, 2]),
                        "seg_done": [rel(gtl[:, 3 + i]) for i in range(4)], "owner_ready": rel(gtl[:, 7]),
                        "exit": rel(gtl[:, 8]), "units": gtl[:, 9].tolist(), "segments": gtl[:, 10].tolist(),
                        "seg0_units": gtl[:, 11].tolist(), "sm": gtl[:, 1].tolist()}}


def main() -> int:
    out_path = sys.argv[1]
    argv = sys.argv[2:]
    samples = int(argv[argv.index("--samples") + 1]) if "--samples" in argv else 30
    modes = argv[argv.index("--modes") + 1].split(",") if "--modes" in argv else ["auto", "dbg-norm", "dbg-gemm"]

    import torch

    from kernels.bench.oracle import (
        ODD_SHAPES,
        check_entry_points,
        entry_line,
        entry_ok,
        graph_timeline,
        sweep_cases,
        time_cases,
    )
    from kernels.bench.oracle import check as oracle_check
    from kernels.harness import timing
    from kernels.harness.correctness import Tolerance
    from kernels.ops.qkv_qknorm_backward import definition as d
    from kernels.ops.qkv_qknorm_backward import ext_streamk as e
    from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs
    from kernels.ops.qkv_qknorm_backward.reference import reference_fp32

    torch.backends.cuda.matmul.allow_tf32 = False
    result: dict = {"module": "ext_streamk", "shapes": [], "timing": {}, "sweep": {}, "ok": True}
    t0 = time.time()
    e.load()
    result["load_s"] = round(time.time() - t0, 2)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tol = Tolerance()
    shapes = ODD_SHAPES + list(d.CASE_SHAPES)

    for i, (b, s) in enumerate(shapes):
        p = e.plan(b * s, sms)
        entry = {"B": b, "S": s, "T": b * s, "plan": p, **check_entry_points(e, b, s, 7000 + 31 * i, tol)}
        result["shapes"].append(entry)
        result["ok"] = result["ok"] and entry_ok(entry)
        print(entry_line(b, s, entry, f"bm{p['bm']}-g{p['grid']}-w{p['dw_ctas']} share={p['max_share']}"),
              flush=True)
        if not result["ok"] and "--keep-going" not in argv:
            break

    if result["ok"] and "--check-modes" in argv:
        for m in argv[argv.index("--check-modes") + 1].split(","):
            bad = []
            for i, (b, s) in enumerate(shapes):
                inputs = make_inputs(b, s, seed=8000 + 31 * i, device="cuda")
                ref = reference_fp32(**inputs)
                outs = allocate_outputs(b, s, "cuda")
                try:
                    e.qkv_qknorm_backward_out(outs, mode=m, **inputs)
                    torch.cuda.synchronize()
                    ok, fails, _ = oracle_check(outs, ref, tol)
                except ValueError as exc:  # no such plan at this T (grid above the units)
                    ok, fails = True, [str(exc)]
                except Exception as exc:
                    ok, fails = False, [f"{type(exc).__name__}: {exc}"[:200]]
                if not ok:
                    bad.append((b, s, fails[:2]))
            result.setdefault("check_modes", {})[m] = {"failed": [list(x[:2]) for x in bad]}
            print(f"check {m}: {len(shapes) - len(bad)} shapes passed" + (f", FAILED {bad[:3]}" if bad else ""),
                  flush=True)
            if bad:
                result["ok"] = False

    flush = timing.L2Flush()
    if result["ok"] and "--sweep" in argv:
        for t, row in sweep_cases(e, lambda t: sweep_modes(t, sms), sms, tol, flush):
            result["sweep"][str(t)] = row
            result["ok"] = result["ok"] and not any("error" in v for v in row.values())
            good = sorted((v["median"], k) for k, v in row.items() if "median" in v)
            bad = [k for k, v in row.items() if "error" in v]
            auto = e.plan(t, sms)
            print(f"sweep T={t:5d}: best " + "  ".join(f"{k} {ns / 1000:.2f}" for ns, k in good[:5])
                  + f" | auto=bm{auto['bm']}-g{auto['grid']}-w{auto['dw_ctas']} "
                  + " ".join(f"{k}={v['median'] / 1000:.2f}" for k, v in row.items() if k in ("bm128", "bm256") and "median" in v)
                  + (f" | {len(bad)} failed: {bad[:3]} {row[bad[0]]}" if bad else ""), flush=True)

    if "--timeline" in argv:
        for t in (131, 1024, 4096, 8192):
            for m in argv[argv.index("--timeline") + 1].split(","):
                ntl, gtl = graph_timeline(e, m, t, flush)
                summary = summarize_timeline(ntl, gtl)
                result.setdefault("timelines", {}).setdefault(str(t), {})[m] = summary
                print(f"timeline T={t} {m}: " + "; ".join(f"{k} {v}" for k, v in summary.items() if k != "per_cta"),
                      flush=True)

    time_cases(e, modes, samples, flush, result)
    with open(out_path, "w") as fh:
        json.dump(result, fh)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
