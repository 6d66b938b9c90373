"""Where does the extension's time go? (development diagnostics on the GPU)

  python kernels/bench/diag.py timeline      # globaltimer timelines of the norm and GEMM kernels
  python kernels/bench/diag.py time MODE ... # graph-replay medians for a few cases
  python kernels/bench/diag.py once MODE T   # a few plain calls (for ncu)
"""

from __future__ import annotations

import statistics
import sys

CONFIGS = [("auto", 1, 131), ("auto", 1, 1024), ("auto", 4, 373), ("auto", 1, 4096), ("auto", 1, 8192),
           ("wgmma128", 1, 8192)]
MODES = {"cublas": 0, "auto": 1, "wgmma128": 2, "wgmma256": 3}


def _inputs(b, s, seed=0):
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    return make_inputs(b, s, seed=seed, device="cuda")


def timeline() -> None:
    import torch

    from kernels.harness.timing import L2Flush
    from kernels.ops.qkv_qknorm_backward import ext
    from kernels.ops.qkv_qknorm_backward.definition import INPUT_NAMES

    mod = ext.load()
    flush = L2Flush()
    for mode, b, s in CONFIGS:
        inputs = _inputs(b, s)
        args = [inputs[n] for n in INPUT_NAMES]
        for _ in range(3):
            mod.timeline(*args, MODES[mode])
        torch.cuda.synchronize()
        flush()
        out = mod.timeline(*args, MODES[mode])
        torch.cuda.synchronize()
        ntl = out[4].cpu().tolist()
        gtl = out[5].cpu().tolist()
        t0 = min(r[0] for r in ntl)
        us = lambda v: (v - t0) / 1000.0  # noqa: E731
        nend = max(r[1] for r in ntl)
        print(f"== {mode} T={b * s}: norm blocks {len(ntl)}: start..end {us(t0):.2f}..{us(nend):.2f} us; "
              f"last block start {us(max(r[0] for r in ntl)):.2f}")
        entry = [r[0] for r in gtl]
        waited = [r[1] for r in gtl]
        exits = [r[45] for r in gtl]
        print(f"   gemm CTAs {len(gtl)}: entry {us(min(entry)):.2f}..{us(max(entry)):.2f}; "
              f"after pdl_wait {us(min(waited)):.2f}..{us(max(waited)):.2f}; "
              f"consumer exit {us(min(exits)):.2f}..{us(max(exits)):.2f} (median {us(statistics.median(exits)):.2f})")
        items = [int(r[47]) for r in gtl]
        print(f"   items per CTA: min {min(items)} max {max(items)}")
        # per-item phases, averaged over CTAs, by item position
        for k in range(min(max(items), 8)):
            rows = [r for r in gtl if r[47] > k]
            recv = [r[2 + 5 * k] for r in rows]
            first = [r[2 + 5 * k + 1] for r in rows]
            mdone = [r[2 + 5 * k + 2] for r in rows]
            edone = [r[2 + 5 * k + 3] for r in rows]
            wait_first = statistics.median([(f - a) / 1000 for a, f in zip(recv, first)])
            main = statistics.median([(m - f) / 1000 for f, m in zip(first, mdone)])
            epi = statistics.median([(e - m) / 1000 for m, e in zip(mdone, edone)])
            print(f"   item #{k} ({len(rows)} CTAs): recv at {us(statistics.median(recv)):.2f}; "
                  f"wait first data {wait_first:.2f}; mainloop {main:.2f}; epilogue {epi:.2f}; "
                  f"done at {us(statistics.median(edone)):.2f} (max {us(max(edone)):.2f})")
        slowest = max(range(len(gtl)), key=lambda i: gtl[i][45])
        r = gtl[slowest]
        print(f"   slowest CTA {slowest}: entry {us(r[0]):.2f} waited {us(r[1]):.2f} items {int(r[47])}: "
              + ", ".join(f"[id {int(r[2 + 5 * k + 4])} recv {us(r[2 + 5 * k]):.2f} first {us(r[3 + 5 * k]):.2f} "
                          f"main {us(r[4 + 5 * k]):.2f} epi {us(r[5 + 5 * k]):.2f}]" for k in range(min(int(r[47]), 8)))
              + f" exit {us(r[45]):.2f}")
        sys.stdout.flush()


def time_modes(modes: list[str]) -> None:
    import torch  # noqa: F401

    from kernels.harness import timing
    from kernels.ops.qkv_qknorm_backward import ext

    flush = timing.L2Flush()
    for mode in modes:
        for b, s in [(1, 131), (4, 373), (1, 1024), (1, 4096), (1, 8192)]:
            inputs = _inputs(b, s)
            fn = lambda **inp: ext.qkv_qknorm_backward(mode=mode, **inp)  # noqa: E731
            st = timing.stats(timing.time_graph(fn, inputs, warmups=5, samples=20, flush=flush))
            print(f"[{mode}] T={b * s}: median {st['median'] / 1000:.2f} us", flush=True)


def once(mode: str, tokens: int) -> None:
    import torch

    from kernels.ops.qkv_qknorm_backward import ext

    inputs = _inputs(1, tokens)
    for _ in range(3):
        ext.qkv_qknorm_backward(mode=mode, **inputs)
    torch.cuda.synchronize()


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "timeline":
        timeline()
    elif cmd == "time":
        time_modes(sys.argv[2:])
    elif cmd == "once":
        once(sys.argv[2], int(sys.argv[3]))
