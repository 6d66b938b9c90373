#!/usr/bin/env bash
# One device call for ext-portable (repository root on the GPU machine): Python packages from
# carried wheels where the image lacks them (.whl/), libraries prebuilt here (build/kidx_build/,
# so nothing needs nvcc there), a smoke launch under a short timeout, portable_check.py, and
# optionally the harness CLI side by side.
# Usage: bash lab/qkv_qknorm_backward/portable_h200_run.sh OUTDIR "CLI_IMPLS or -" [PORTABLE_CHECK_ARGS...]
set -u
OUT=${1:?out dir}
CLI_IMPLS=${2:--}
shift 2 2>/dev/null || shift $#
mkdir -p "$OUT"
export KERNELINDEX_BUILD_DIR=/tmp/kbuild PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
t0=$(date +%s)
if ! python3 -c "import pydantic, rfc8785, cryptography, pymongo" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
mkdir -p /tmp/kbuild && cp -r build/kidx_build/. /tmp/kbuild/ 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
timeout 60 python3 - <<'PY'
import torch
from kernels.ops.qkv_qknorm_backward import ext_portable as e
from kernels.ops.qkv_qknorm_backward.inputs import make_inputs
from kernels.ops.qkv_qknorm_backward.reference import reference_fp32
for b, s in [(1, 131), (2, 1000)]:
    inp = make_inputs(b, s, seed=1, device="cuda")
    outs = e.qkv_qknorm_backward(**inp)
    torch.cuda.synchronize()
    ref = reference_fp32(**inp)
    rel = [float((o.float() - r.float()).norm() / r.float().norm()) for o, r in zip(outs, ref)]
    print("smoke", b * s, ["%.1e" % x for x in rel], flush=True)
PY
echo "smoke rc=$? at $(( $(date +%s) - t0 )) s"
timeout ${CHECK_TIMEOUT:-420} python3 lab/qkv_qknorm_backward/portable_check.py "$OUT/portable_check.json" "$@" > "$OUT/portable_check.log" 2>&1
rc=$?
echo "portable_check rc=$rc at $(( $(date +%s) - t0 )) s"
grep -vE "^case " "$OUT/portable_check.log" | tail -n 40 | cut -c1-600
if [ "$CLI_IMPLS" != "-" ]; then
  timeout ${CLI_TIMEOUT:-300} python3 -m kernels.harness.cli 051 --impl "$CLI_IMPLS" --out "$OUT/cli" > "$OUT/cli.log" 2>&1
  echo "cli rc=$? at $(( $(date +%s) - t0 )) s"
  grep -E "geomean|INCORRECT|FAILED|rror" "$OUT/cli.log" | head -12
fi
echo "total $(( $(date +%s) - t0 )) s"
