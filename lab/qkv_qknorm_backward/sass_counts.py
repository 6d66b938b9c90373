"""Opcode counts per kernel of a built library (cuobjdump -sass, on the GPU host): how many wgmma
(HGMMA), warpgroup syncs, ldmatrix (LDSM) and arithmetic instructions each ext-fused variant holds.

  python lab/qkv_qknorm_backward/sass_counts.py LIB.so [NAME_PART ...]   (default: t2's and rs's kernels)
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys

OPCODES = ("HGMMA", "WARPGROUP", "WARPSYNC", "LDSM", "HFMA2", "FFMA", "FMUL", "F2FP", "LDS", "BAR", "SYNCS")


def counts(lib: str) -> dict[str, collections.Counter]:
    out = subprocess.run(["cuobjdump", "-sass", lib], capture_output=True, text=True, check=True).stdout
    fn, per_fn = None, collections.defaultdict(collections.Counter)
    for line in out.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            fn = m.group(1)
            continue
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", line)
        if fn and m:
            per_fn[fn][m.group(1).split(".")[0]] += 1
    return per_fn


def main() -> int:
    parts = sys.argv[2:] or ["ILi7ELb0", "ILi8ELb0"]  # fused_gemm_kernel<kT2>, <kRS>, unstamped
    for fn, c in counts(sys.argv[1]).items():
        if any(p in fn for p in parts):
            print(fn[-40:], {k: c[k] for k in OPCODES})
    return 0


if __name__ == "__main__":
    sys.exit(main())
