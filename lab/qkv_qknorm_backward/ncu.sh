#!/usr/bin/env bash
# Nsight Compute on the lent H200 (Firecracker machines read the counters; clocks left alone):
# the norm kernel and the GEMM kernel of ext-streamnorm (or MODULE=..., in MODE=... if set) at T tokens.
# Usage (repository root): bash lab/qkv_qknorm_backward/ncu.sh OUTDIR [T]
set -u
OUT=${1:?out dir}; T=${2:-8192}
mkdir -p "$OUT"
export KERNELINDEX_BUILD_DIR=/tmp/kbuild PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
mkdir -p /tmp/kbuild && cp -r build/kidx_build/. /tmp/kbuild/ 2>/dev/null
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
timeout 240 "$NCU" --clock-control none --profile-from-start off \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section SchedulerStats \
  --section LaunchStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
  python3 lab/qkv_qknorm_backward/ncu.py "$T" > "$OUT/ncu_${MODULE:-ext_streamnorm}${MODE:+_$MODE}_T$T.txt" 2>&1
echo "ncu rc=$?"
grep -E "stream_norm_kernel|cluster_gemm_kernel|fused_gemm_kernel|stats_kernel|L2 Hit Rate|Mem Busy|Max Bandwidth|dram__bytes|lts__t_bytes|Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Stall|Warp Cycles Per Issued|Issue Slots|Registers Per|Eligible|Active Warps|No Eligible" "$OUT/ncu_${MODULE:-ext_streamnorm}${MODE:+_$MODE}_T$T.txt" | head -${NCU_LINES:-60}
