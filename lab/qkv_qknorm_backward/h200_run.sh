#!/usr/bin/env bash
# One device call for ext-streamnorm (or MODULE=...): a smoke launch under a short timeout (a hung
# cluster barrier costs 45 s, not the whole call), then check.py (correctness on odd shapes and the
# 16 cases; optional plan sweep; mode timings), then optionally the harness CLI.
# Usage (repository root, on the GPU machine, pydantic/rfc8785 importable):
#   bash lab/qkv_qknorm_backward/h200_run.sh OUTDIR "CLI_IMPLS or -" [CHECK_ARGS...]
# Libraries prebuilt here (ext_streamnorm.LIBRARY.build() with KERNELINDEX_BUILD_DIR=build/kidx_build)
# are copied into the build directory first, so nothing needs nvcc on the device.
set -u
OUT=${1:?out dir}
CLI_IMPLS=${2:--}
shift 2 2>/dev/null || shift $#
mkdir -p "$OUT"
export KERNELINDEX_BUILD_DIR=/tmp/kbuild MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
MODULE=${MODULE:-ext_streamnorm}
export MODULE
mkdir -p /tmp/kbuild && cp -r build/kidx_build/. /tmp/kbuild/ 2>/dev/null
timeout 45 python3 - <<'PY'
import torch
import importlib, os
e = importlib.import_module("kernels.ops.qkv_qknorm_backward." + os.environ["MODULE"])
from kernels.ops.qkv_qknorm_backward.inputs import make_inputs
from kernels.ops.qkv_qknorm_backward.reference import reference_fp32
for b, s in [(1, 131), (1, 1024)]:
    inp = make_inputs(b, s, seed=1, device="cuda")
    outs = e.qkv_qknorm_backward(**inp)
    torch.cuda.synchronize()
    ref = reference_fp32(**inp)
    rel = [float((o.float() - r.float()).norm() / r.float().norm()) for o, r in zip(outs, ref)]
    print("smoke", b * s, e.plan(b * s, 132), ["%.1e" % x for x in rel], flush=True)
PY
echo "smoke rc=$? at $(( $(date +%s) - t0 )) s"
timeout ${CHECK_TIMEOUT:-330} python3 lab/qkv_qknorm_backward/check.py "$OUT/check.json" --module "$MODULE" "$@" > "$OUT/check.log" 2>&1
rc=$?
echo "check rc=$rc at $(( $(date +%s) - t0 )) s"
grep -vE "passed=True det=True" "$OUT/check.log" | tail -n 60 | cut -c1-330
grep -cE "passed=True det=True" "$OUT/check.log" | sed 's/^/shapes passed: /'
if [ "$CLI_IMPLS" != "-" ] && [ $rc -eq 0 ]; then
  timeout ${CLI_TIMEOUT:-300} python3 -m kernels.harness.cli 051 --impl "$CLI_IMPLS" --out "$OUT/cli" > "$OUT/cli.log" 2>&1
  echo "cli rc=$? at $(( $(date +%s) - t0 )) s"
  grep -E "geomean|INCORRECT|FAILED|rror" "$OUT/cli.log" | head -12
fi
echo "total $(( $(date +%s) - t0 )) s"
