"""Issue 28, 16th session: one launch of wide_probe.cu's `dep` kernel for Nsight Compute (where do
its three norm warps wait?). M = 2816, N = 1536, K = 1536: every CTA makes one 128-row head unit,
then runs its 24 k-blocks.

  ncu --profile-from-start off ... python lab/qkv_qknorm_backward/dep_ncu.py OUTDIR [NORM]

NORM is wp_dep_launch's variant (1 = dep, 5 = dep-ph4). Warm-up launches first; the profiled one
is bracketed by cudaProfilerStart/Stop.
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import dep_probe  # noqa: E402  (its library, inputs and launch)


def main() -> int:
    import torch

    out, norm = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
    lib = dep_probe.open_library(out)
    m, n, k = 2816, 1536, 1536
    t = dep_probe.make_inputs(torch, torch.Generator(device="cuda").manual_seed(16_500), m, n, k)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        t["ready"].zero_()
        dep_probe.launch(lib, torch, norm, t, c)
    t["ready"].zero_()  # before the profiled range: only the dep launch is in it
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    dep_probe.launch(lib, torch, norm, t, c)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
