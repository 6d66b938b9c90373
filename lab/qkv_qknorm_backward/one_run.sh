#!/usr/bin/env bash
# One device call of the 16th session (issue 28): the dep probe, then ext-streamnorm's one-launch
# mode — smoke (bitwise against the two-kernel plans, under a timeout: a hang costs 90 s), then
# op_check.py (correctness on 30 shapes, then timed side by side with the two-kernel modes,
# ext-hybrid and cuBLAS's GEMMs). Libraries prebuilt here into build/kidx_build/ and carried.
# Usage: OUT=dir bash lab/qkv_qknorm_backward/one_run.sh [--no-dep]
set -u
export KERNELINDEX_BUILD_DIR=/tmp/kbuild PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
t0=$(date +%s)
mkdir -p /tmp/kbuild && cp -r build/kidx_build/. /tmp/kbuild/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
if [ "${1:-}" != "--no-dep" ]; then
  timeout 150 python3 lab/qkv_qknorm_backward/dep_probe.py "$OUT/dep.json" --small >"$OUT/dep.log" 2>&1
  echo "dep rc=$? at $(( $(date +%s) - t0 )) s"
  grep -E "^time|^period|checks passed" "$OUT/dep.log"; grep "passed': False" "$OUT/dep.log" | cut -c1-300
fi
timeout 90 python3 lab/qkv_qknorm_backward/one_smoke.py "$OUT/one_smoke.json" >"$OUT/one_smoke.log" 2>&1
src=$?
echo "one smoke rc=$src at $(( $(date +%s) - t0 )) s"
grep -v "'ok': True" "$OUT/one_smoke.log" | tail -n 25 | cut -c1-500
[ $src -ne 0 ] && exit 3
timeout 330 python3 lab/qkv_qknorm_backward/op_check.py "$OUT/op_check.json" --impls ext-streamnorm@one \
  --time-only ext-streamnorm,ext-hybrid --samples 50 >"$OUT/op_check.log" 2>&1
echo "op_check rc=$? at $(( $(date +%s) - t0 )) s"
grep -E "^check " "$OUT/op_check.log" | grep -v "passed=True det=True" | head -n 20 | cut -c1-500
echo "shape checks passed: $(grep -cE '^check .*passed=True det=True' "$OUT/op_check.log") of $(grep -cE '^check ' "$OUT/op_check.log")"
grep -E "^checks passed|^time case|^\||Traceback|Error" "$OUT/op_check.log" | head -30
echo "total $(( $(date +%s) - t0 )) s"
