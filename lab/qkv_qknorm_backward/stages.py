"""Per-stage timelines of ext-fused's GEMM kernel (10th session, issue 28): where each warp role
waits, per k-block.

The library's stamped build (csrc/ext_fused_sm90.cu, `kTlWords` per CTA: a header, then for each
local k-block clock64 stamps of the producer before/after its `empty` wait, the transform at its
iteration's start / after its ring barrier / after the `full` wait / after its `ready` arrive, and
consumer warpgroup 0 before/after the `ready` wait and after the wait for the previous wgmma) runs
for t2, rs, diag-notransform and diag-nox (and their -early forms; in rs the "transform" is consumer
warpgroup 0 building its fragments). One launch per spec at B = 1,
S = T, replayed from a CUDA graph after an L2 flush, as the timings are.

The consumer's time per CTA is split into: prologue (entry to its first `ready` wait), its
`ready` waits — each cut into "load issued late" (before the producer got the stage), "load in
flight" (issued, not landed: the transform was still waiting on `full`) and "transform" (landed,
not yet handed over) — the wgmma (issue and the wait for the previous k-block's), and the
epilogue. SM idle time between CTAs and the kernel's span come from the globaltimer header.

  python lab/qkv_qknorm_backward/stages.py OUT.json.gz 131:t2 8192:c1-w1-x1:diag-nox 131:c4-w4-x1-xf:t2-early ...
"""

from __future__ import annotations

import gzip
import json
import sys

HEAD = 8
PER = 9
P0, P1, T0, TB, T1, T2, C0, C1, C2 = range(PER)


def run_timeline(tokens: int, mode: str):
    """(timeline [grid, words] int64 on the CPU, plan) of one graph replay after an L2 flush."""
    import torch

    from kernels.harness import timing
    from kernels.ops.qkv_qknorm_backward import ext_fused
    from kernels.ops.qkv_qknorm_backward.checks import aligned_inputs
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    inputs = make_inputs(1, tokens, seed=11, device="cuda")
    ins = aligned_inputs(inputs)
    pl = ext_fused.plan(1, tokens, ext_fused._num_sms(ins[3].device), mode)
    words = ext_fused.load().kidxf_timeline_words()
    outs = ext_fused._new_outputs(inputs["hidden_states"])
    tl = torch.zeros((pl["grid"], words), dtype=torch.int64, device="cuda")
    ext_fused._launch(ins, outs, 1, tokens, mode, timeline=tl)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ext_fused._launch(ins, outs, 1, tokens, mode, timeline=tl)
    graph.replay()
    torch.cuda.synchronize()
    tl.zero_()
    timing.L2Flush()()
    graph.replay()
    torch.cuda.synchronize()
    return tl.cpu().numpy(), pl


def summarize(tl, kt_max: int) -> dict:
    """Sums over CTAs (µs) of the consumer's states and the other roles' waits; medians per k-block (ns)."""
    import numpy as np

    h = tl[:, :HEAD]
    nkb = (h[:, 3] & 0xFFFF).astype(np.int64)
    is_w = (h[:, 3] >> 16) & 1
    live = (h[:, 0] > 0) & (nkb > 0)
    # ns per clock from each CTA's globaltimer and clock64 spans (globaltimer ticks coarsely: median)
    spans_ns = (h[live, 6] - h[live, 0]).astype(np.float64)
    spans_clk = (h[live, 7] - h[live, 1]).astype(np.float64)
    ok = spans_clk > 0
    ns_per_clk = float(np.median(spans_ns[ok] / spans_clk[ok])) if ok.any() else 0.5
    kb = tl[:, HEAD:].reshape(tl.shape[0], -1, PER).astype(np.float64)
    out: dict = {"ns_per_clock": round(ns_per_clk, 4), "ctas": int(live.sum())}
    t0 = h[live, 0].min()
    out["kernel_span_us"] = round(float(h[live, 6].max() - t0) / 1e3, 2)
    # SMs: busy (Σ CTA spans) vs the kernel's span
    sms = h[live, 2]
    busy = {}
    for sm, a, b in zip(sms, h[live, 0], h[live, 6]):
        busy.setdefault(int(sm), []).append((int(a), int(b)))
    span = float(h[live, 6].max() - t0)
    per_sm = [sum(b - a for a, b in v) for v in busy.values()]
    out["sms_used"] = len(busy)
    out["sm_busy_frac_mean"] = round(float(np.mean(per_sm)) / span, 3) if span > 0 else 0
    out["ctas_per_sm_max"] = max(len(v) for v in busy.values())
    first_start = [min(a for a, _ in v) - t0 for v in busy.values()]
    last_end = [max(b for _, b in v) - t0 for v in busy.values()]
    out["sm_first_start_us_median_max"] = [round(float(np.median(first_start)) / 1e3, 2), round(max(first_start) / 1e3, 2)]
    out["sm_last_end_us_min_median"] = [round(min(last_end) / 1e3, 2), round(float(np.median(last_end)) / 1e3, 2)]
    groups = {}
    for name, sel in (("dW", live & (is_w == 1)), ("dX", live & (is_w == 0))):
        if not sel.any():
            continue
        acc = {
            k: 0.0 for k in ("total", "prologue", "wait_issue_late", "wait_in_flight", "wait_transform", "wgmma", "loop_other", "epilogue")
        }
        per_kb = {
            k: []
            for k in (
                "period",
                "ready_wait",
                "wgmma",
                "producer_empty_wait",
                "transform_full_wait",
                "transform_ring_barrier",
                "transform_work",
                "ready_after_handover",
                "load_latency",
                "producer_lead_kb",
            )
        }
        first = {k: [] for k in ("first_load_issue", "first_load_latency", "first_ready")}
        for c in np.nonzero(sel)[0]:
            n = int(min(nkb[c], kt_max))
            s = (kb[c, :n] - h[c, 1]) * ns_per_clk  # ns from the CTA's entry
            total = float(h[c, 6] - h[c, 0])
            main_end = float(h[c, 4] - h[c, 0])
            acc["total"] += total
            acc["prologue"] += s[0, C0]
            acc["epilogue"] += total - main_end
            first["first_load_issue"].append(s[0, P1])
            first["first_load_latency"].append(s[0, T1] - s[0, P1])
            first["first_ready"].append(s[0, C1])
            for i in range(n):
                c0, c1 = s[i, C0], s[i, C1]
                issued, landed = s[i, P1], s[i, T1]
                waited_full = s[i, T1] - s[i, TB] > 40  # the transform sat in the `full` wait: T1 ≈ arrival
                late = max(0.0, min(c1, issued) - c0)
                flight = max(0.0, min(c1, landed) - max(c0, issued)) if waited_full else 0.0
                acc["wait_issue_late"] += late
                acc["wait_in_flight"] += flight
                acc["wait_transform"] += max(0.0, (c1 - c0) - late - flight)
                per_kb["ready_wait"].append(c1 - c0)
                per_kb["producer_empty_wait"].append(s[i, P1] - s[i, P0])
                per_kb["transform_full_wait"].append(s[i, T1] - s[i, TB])
                per_kb["transform_ring_barrier"].append(s[i, TB] - s[i, T0])
                per_kb["transform_work"].append(s[i, T2] - s[i, T1])
                # from the transform's hand-over to the consumers' `ready` (the wake-up; in the 11th
                # session's deleted share-bulk also the other 4 CTAs' slices)
                per_kb["ready_after_handover"].append(c1 - s[i, T2])
                if waited_full:
                    per_kb["load_latency"].append(s[i, T1] - s[i, P1])
                per_kb["producer_lead_kb"].append(float(np.sum(s[:n, P1] <= c1) - (i + 1)))
                if i + 1 < n:
                    per_kb["period"].append(s[i + 1, C1] - c1)
                    acc["wgmma"] += s[i, C2] - c1 if i == n - 1 else s[i + 1, C0] - c1
                else:
                    acc["wgmma"] += s[i, C2] - c1
            acc["loop_other"] += main_end - s[0, C0]  # less the states above, below
        stated = acc["wait_issue_late"] + acc["wait_in_flight"] + acc["wait_transform"] + acc["wgmma"]
        acc["loop_other"] = acc["loop_other"] - stated
        g = {"ctas": int(sel.sum()), "kb_per_cta": int(np.median(nkb[sel]))}
        g["sum_us"] = {k: round(v / 1e3, 1) for k, v in acc.items()}
        g["share"] = {k: round(v / acc["total"], 3) for k, v in acc.items() if k != "total"}
        g["median_ns"] = {k: round(float(np.median(v)), 0) for k, v in per_kb.items() if v}
        g["p90_ns"] = {k: round(float(np.percentile(v, 90)), 0) for k, v in per_kb.items() if v}
        g["first_ns_median"] = {k: round(float(np.median(v)), 0) for k, v in first.items()}
        g["loads_timed"] = len(per_kb["load_latency"])
        groups[name] = g
    out["groups"] = groups
    return out


def main() -> int:
    import numpy as np

    out_path, specs = sys.argv[1], sys.argv[2:]
    result: dict = {"specs": specs, "runs": {}}
    raw = {}
    for spec in specs:
        t, _, mode = spec.partition(":")
        try:
            tl, pl = run_timeline(int(t), mode)
            summ = summarize(tl, (tl.shape[1] - HEAD) // PER)
            summ["plan"] = pl
            raw[spec] = tl
        except Exception as exc:  # noqa: BLE001 - reported, the next spec goes on
            summ = {"error": f"{type(exc).__name__}: {exc}"}
        result["runs"][spec] = summ
        print(f"stages {spec}: " + json.dumps({k: v for k, v in summ.items() if k != "groups"}), flush=True)
        for g, v in summ.get("groups", {}).items():
            print(f"  {g} ctas={v['ctas']} kb/cta={v['kb_per_cta']} share={json.dumps(v['share'])}", flush=True)
            print(f"     median_ns={json.dumps(v['median_ns'])}", flush=True)
            print(f"     p90_ns={json.dumps(v['p90_ns'])} first={json.dumps(v['first_ns_median'])}", flush=True)
    with gzip.open(out_path, "wt") as fh:
        json.dump(result, fh, indent=1)
    np.savez_compressed(out_path.replace(".json.gz", "_raw.npz"), **{k.replace(":", "_"): v for k, v in raw.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
