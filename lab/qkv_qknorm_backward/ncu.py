"""One call of ext-streamnorm (or of the module named by $MODULE, in mode $MODE if set) at T tokens
for Nsight Compute (ncu.sh): warm-up calls first (so that only the profiled launches remain), then
one call with the L2 flushed."""

import importlib
import os
import sys

import torch

from kernels.harness import timing
from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

e = importlib.import_module("kernels.ops.qkv_qknorm_backward." + os.environ.get("MODULE", "ext_streamnorm"))
tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
inputs = make_inputs(1, tokens, seed=5, device="cuda")
if "MODE" in os.environ:
    inputs["mode"] = os.environ["MODE"]
for _ in range(3):
    e.qkv_qknorm_backward(**inputs)
torch.cuda.synchronize()
timing.L2Flush()()
torch.cuda.cudart().cudaProfilerStart()
e.qkv_qknorm_backward(**inputs)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
