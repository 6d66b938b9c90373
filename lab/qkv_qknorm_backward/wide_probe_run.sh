#!/bin/bash
# One device call of wide_probe.py (14th session on, issue 28). Usage, from the repository root:
#   OUT=dir bash lab/qkv_qknorm_backward/wide_probe_run.sh MAIN_SET [FALLBACK_SET ...]
# Runs the probe on the variants MAIN_SET (comma-separated, e.g. 0,7,8); if that process fails
# (a variant crashed, hung or failed its check), each FALLBACK_SET in its own process, so one
# broken variant does not take the others' timings with it. Logs and JSON land in $OUT.
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
export PYTHONUNBUFFERED=1 PYTHONPATH=.
run() {
  timeout "$2" python3 lab/qkv_qknorm_backward/wide_probe.py "$OUT/$1.json" --variants "$3" >"$OUT/$1.log" 2>&1
  local rc=$?
  grep -v "^check.*passed=True\|^ptxas\|bytes stack frame\|^ *$" "$OUT/$1.log" | cut -c1-400
  echo "[$1: variants $3, rc=$rc]"
  return $rc
}
sass() { python3 lab/qkv_qknorm_backward/sass_counts.py /tmp/wide_probe.so cxr_kernel probe_kernelILi256ELi4ELb0 >>"$OUT/gpu.txt" 2>&1; }
if run main 280 "$1"; then
  sass
  exit 0
fi
shift
i=0
for set in "$@"; do
  i=$((i + 1))
  run "fb$i" 100 "$set"
done
sass
