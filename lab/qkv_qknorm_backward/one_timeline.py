"""Issue 28, 16th session: where ext-streamnorm's one-launch mode spends its time.

  python lab/qkv_qknorm_backward/one_timeline.py OUT.json [--tokens 131,1024,8192]

Per token count (B = 1): graph-replay medians (L2 flushed, median of 30) of the two-kernel mode
("auto"), the GEMM kernel alone ("dbg-gemm": no norm kernel, wrong results), "one", and
"dbg-one-nowait" (one launch whose producer never waits: wrong results); then one eager call of
"auto" and "one" with the GEMM kernel's globaltimer stamps (csrc/cluster_gemm.h: 0 entry, 4 first
k-block in the consumers, 5 mainloop done, 8 exit), summarized over the CTAs relative to the first
CTA's entry: when CTAs start, how long each waits for its first k-block, its mainloop, its end.
"""

from __future__ import annotations

import json
import statistics
import sys


def summary(tl, t_ref):
    rows = [r for r in tl.tolist() if r[0] and r[8]]

    def col(f):
        v = sorted(f(r) for r in rows)
        return {"min": v[0], "med": statistics.median(v), "max": v[-1]}

    return {
        "ctas": len(rows),
        "entry_us": col(lambda r: (r[0] - t_ref) / 1e3),
        "first_kblock_wait_us": col(lambda r: (r[4] - r[0]) / 1e3 if r[4] else 0.0),
        "mainloop_us": col(lambda r: (r[5] - r[4]) / 1e3 if r[4] and r[5] else 0.0),
        "exit_us": col(lambda r: (r[8] - t_ref) / 1e3),
    }


def main() -> int:
    import debug  # beside this script
    import torch

    from kernels.harness import timing
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    argv = sys.argv[2:]
    tokens = [int(t) for t in (argv[argv.index("--tokens") + 1] if "--tokens" in argv else "131,1024,8192").split(",")]
    flush = timing.L2Flush()
    result = {"gpu": torch.cuda.get_device_name(), "rows": []}
    for t in tokens:
        inputs = make_inputs(1, t, seed=16_100 + t, device="cuda")
        row = {"T": t}
        for mode in ("auto", "dbg-gemm", "one", "dbg-one-nowait"):
            fn = lambda mode=mode, **kw: debug.streamnorm.qkv_qknorm_backward(mode=mode, **kw)  # noqa: E731
            row[mode] = timing.stats(timing.time_graph(fn, inputs, warmups=10, samples=30, flush=flush))["median"] / 1e3
        for mode in ("auto", "one"):
            _, norm_tl, gemm_tl = debug.streamnorm.timeline(mode=mode, **inputs)
            torch.cuda.synchronize()
            starts = [v for v in gemm_tl[:, 0].tolist() if v]
            if mode == "auto":
                starts += [v for v in norm_tl[:, 0].tolist() if v]
            row["timeline_" + mode] = summary(gemm_tl, min(starts))
            if mode == "auto":
                row["timeline_auto"]["norm_exit_us"] = (max(norm_tl[:, 1].tolist()) - min(starts)) / 1e3
        result["rows"].append(row)
        print(f"T={t}: " + "  ".join(f"{m} {row[m]:.2f}" for m in ("auto", "dbg-gemm", "one", "dbg-one-nowait")), flush=True)
        for m in ("auto", "one"):
            print(f"  timeline {m}: {json.dumps(row['timeline_' + m])}", flush=True)
    json.dump(result, open(sys.argv[1], "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
