#!/usr/bin/env bash
# Nsight Compute on wide_probe.cu's dep kernel (16th session): the details page (warp states,
# scheduler) and the SASS source page with its stall samples, for NORM (default 1: dep).
# Usage (repository root): OUT=dir bash lab/qkv_qknorm_backward/dep_ncu.sh [NORM]
set -u
NORM=${1:-1}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
python3 lab/qkv_qknorm_backward/dep_ncu.py "$OUT" 0 >/dev/null 2>&1  # builds the library once
timeout 200 "$NCU" --clock-control none --profile-from-start off --section SpeedOfLight --section WarpStateStats \
  --section SchedulerStats --section MemoryWorkloadAnalysis python3 lab/qkv_qknorm_backward/dep_ncu.py "$OUT" "$NORM" \
  > "$OUT/dep_ncu_details_$NORM.txt" 2>&1
echo "details rc=$?"
timeout 200 "$NCU" --clock-control none --profile-from-start off --section SourceCounters --section WarpStateStats \
  --page source --print-source sass --csv python3 lab/qkv_qknorm_backward/dep_ncu.py "$OUT" "$NORM" \
  > "$OUT/dep_ncu_source_$NORM.csv" 2>&1
echo "source rc=$?"
grep -E "Duration|Throughput|Stall|Warp Cycles Per Issued|Issue Slots|Eligible|Active Warps|No Eligible|L2 Hit|Mem Busy" \
  "$OUT/dep_ncu_details_$NORM.txt" | head -40
wc -c "$OUT/dep_ncu_source_$NORM.csv"; head -c 1500 "$OUT/dep_ncu_source_$NORM.csv"
