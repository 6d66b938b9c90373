#!/usr/bin/env bash
# One device call for ext-fused: (ext built in the background) check + time ext-fused's modes
# (kernels/bench/fused_check.py), then, if that passed, the harness CLI with reference, ext and
# ext-fused side by side. Usage (repository root, on the GPU machine, pydantic/rfc8785 importable):
#   bash kernels/bench/fused_h200_run.sh OUTDIR [CLI=1] [FUSED_CHECK_ARGS...]
# A library prebuilt by ext_fused.build() under build/kidx_fused_build/ (KERNELINDEX_BUILD_DIR
# there) is copied into the build directory first, so nothing needs nvcc on the device.
set -u
OUT=${1:?out dir}
DO_CLI=${2:-1}
shift 2 2>/dev/null || shift $#
mkdir -p "$OUT"
export KERNELINDEX_BUILD_DIR=/tmp/kbuild MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
(timeout 300 python3 -c "from kernels.ops.qkv_qknorm_backward import ext; ext.load()" > "$OUT/ext_build.log" 2>&1
 echo "ext build rc=$? at $(( $(date +%s) - t0 )) s" >> "$OUT/ext_build.log") &
BPID=$!
if [ -d build/kidx_fused_build/qkv_qknorm_backward_fused ]; then
  mkdir -p /tmp/kbuild && cp -r build/kidx_fused_build/qkv_qknorm_backward_fused /tmp/kbuild/
fi
timeout 150 python3 kernels/bench/fused_check.py "$OUT/fused_check.json" "$@" > "$OUT/fused_check.log" 2>&1
rc=$?
echo "fused_check rc=$rc at $(( $(date +%s) - t0 )) s"
grep -vE "passed=True det=True" "$OUT/fused_check.log" | tail -n 40 | cut -c1-400
grep -cE "passed=True det=True" "$OUT/fused_check.log" | sed 's/^/shapes passed: /'
wait $BPID
tail -n 3 "$OUT/ext_build.log" | cut -c1-300
if [ $rc -eq 0 ] && [ "$DO_CLI" = 1 ]; then
  timeout 300 python3 -m kernels.harness.cli 051 --impl reference,ext,ext-fused --out "$OUT/cli" > "$OUT/cli.log" 2>&1
  echo "cli rc=$? at $(( $(date +%s) - t0 )) s"
  grep -E "^case" "$OUT/cli.log" | grep -E " ext(-fused)?:" | awk '{printf "%s %s %s %s %s\n", $2, $5, $6, $7, $9}' | paste - - | cut -c1-160
  grep -E "geomean|INCORRECT|FAILED|rror" "$OUT/cli.log" | head -12
fi
echo "total $(( $(date +%s) - t0 )) s"
