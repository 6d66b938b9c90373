"""Issue 28, 16th session: one launch of wide_probe.cu's `dep` kernel for Nsight Compute (where do
its three norm warps wait?). M = 2816, N = 1536, K = 1536: every CTA makes one 128-row head unit,
then runs its 24 k-blocks.

  ncu --profile-from-start off ... python lab/qkv_qknorm_backward/dep_ncu.py OUTDIR [NORM]

NORM is wp_dep_launch's variant (1 = dep, 5 = dep-ph4). Warm-up launches first; the profiled one
is bracketed by cudaProfilerStart/Stop.
"""

from __future__ import annotations

import ctypes
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import wide_probe  # noqa: E402


def main() -> int:
    import torch

    out, norm = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
    lib = wide_probe.build(out)
    lib.wp_dep_launch.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_void_p] * 6
    m, n, k = 2816, 1536, 1536
    gen = torch.Generator(device="cuda").manual_seed(16_500)
    g = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    x = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    w = (0.1 * torch.randn(256, device="cuda", generator=gen)).to(torch.bfloat16)
    rs = 0.5 + torch.rand(m, k // 256, device="cuda", generator=gen)
    b = torch.randn(k, n, device="cuda", generator=gen).to(torch.bfloat16)
    big_g = torch.empty(m, k, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ready = torch.zeros((m // 128) * (k // 256), device="cuda", dtype=torch.int32)

    def launch():
        ready.zero_()
        stream = torch.cuda.current_stream().cuda_stream
        rc = lib.wp_dep_launch(norm, big_g.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, g.data_ptr(), x.data_ptr(),
                               w.data_ptr(), rs.data_ptr(), ready.data_ptr(), stream)  # fmt: skip
        assert rc == 0, rc

    for _ in range(3):
        launch()
    torch.cuda.synchronize()
    ready.zero_()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    stream = torch.cuda.current_stream().cuda_stream
    lib.wp_dep_launch(norm, big_g.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, g.data_ptr(), x.data_ptr(),
                      w.data_ptr(), rs.data_ptr(), ready.data_ptr(), stream)  # fmt: skip
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
