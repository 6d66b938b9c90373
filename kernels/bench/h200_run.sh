#!/usr/bin/env bash
# One device call: build the extension, check every mode in its own process (odd shapes + the
# 16 cases), then the real CLI side by side. Usage (repository root, on the GPU machine):
#   bash kernels/bench/h200_run.sh OUTDIR "IMPLS-CANDIDATES" [DEADLINE_S]
# Needs pydantic and rfc8785 importable (PYTHONPATH).
set -u
OUT=${1:?out dir}
CANDIDATES=${2:-"ext ext-cublas"}
DEADLINE=${3:-560}  # seconds from start for everything
mkdir -p "$OUT"
export KERNELINDEX_BUILD_DIR=/tmp/kbuild MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
t0=$(date +%s)
timeout 400 python3 -c "from kernels.ops.qkv_qknorm_backward import ext; ext.load(verbose=True)" > "$OUT/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "error|warning|C75" "$OUT/build.log" | head -20
B=/tmp/kbuild/qkv_qknorm_backward
if ls $B/*.o >/dev/null 2>&1; then
  for o in $B/gemm_sm90.cuda.o $B/norm_backward.cuda.o; do
    echo "== $o"; cuobjdump --dump-sass "$o" > /tmp/sass.txt 2>&1
    grep -c HGMMA /tmp/sass.txt | sed 's/^/HGMMA: /'; grep -cE "LDL|STL" /tmp/sass.txt | sed 's/^/LDL|STL: /'
    grep -m 8 HGMMA /tmp/sass.txt
  done > /tmp/sass_summary.txt 2>&1
  grep -E "==|HGMMA:|LDL" /tmp/sass_summary.txt
fi
IMPLS="reference,compile"
for impl in $CANDIDATES; do
  case $impl in ext) mode=auto;; ext-cublas) mode=cublas;; ext-wgmma128) mode=wgmma128;; ext-wgmma256) mode=wgmma256;; *) continue;; esac
  timeout 120 python3 kernels/bench/dev_check.py $mode /tmp/dev_$mode.json --samples 20 > /tmp/dev_$mode.log 2>&1
  rc=$?
  echo "dev_check $mode rc=$rc"; grep -vE "passed=True det=True" /tmp/dev_$mode.log | tail -12; grep -E "median" /tmp/dev_$mode.log | tail -16 | awk '{print $3, $4, $6}' | tr '\n' ' '; echo
  if [ $rc -eq 0 ]; then IMPLS="$IMPLS,$impl"; fi
done
timeout 90 python3 kernels/bench/diag.py timeline > "$OUT/timeline.txt" 2>&1
grep -E "==|gemm CTAs|item #0" "$OUT/timeline.txt" | cut -c1-250
python3 - "$OUT" <<'PY'
import json, sys, glob, os
out = {}
for p in glob.glob('/tmp/dev_*.json'):
    out[os.path.basename(p)[4:-5]] = json.load(open(p))
logs = {os.path.basename(p): open(p).read()[-20000:] for p in glob.glob('/tmp/dev_*.log')}
json.dump({"results": out, "logs": logs}, open(sys.argv[1] + '/dev.json', 'w'))
PY
echo "CLI impls: $IMPLS"
CLI_TIMEOUT=$(( DEADLINE - ($(date +%s) - t0) )); [ $CLI_TIMEOUT -lt 60 ] && CLI_TIMEOUT=60
echo "cli timeout $CLI_TIMEOUT s"
timeout $CLI_TIMEOUT python3 -m kernels.harness.cli 051 --impl "$IMPLS" --out "$OUT/h200" 2> "$OUT/cli.log"
echo "cli rc=$?"; grep -E "case|error|Error" "$OUT/cli.log" | grep -vE " ok median" | tail -20
echo "total $(( $(date +%s) - t0 )) s"
