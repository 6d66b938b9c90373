#!/usr/bin/env bash
# Diagnostics call: timelines, PDL/spin variants, ncu. Usage: bash kernels/bench/diag.sh OUTDIR
OUT=$1
export KERNELINDEX_BUILD_DIR=/tmp/kbuild MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -c "from kernels.ops.qkv_qknorm_backward import ext; ext.load()" > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
timeout 120 python3 kernels/bench/diag.py timeline > $OUT/timeline.txt 2>&1; cat $OUT/timeline.txt | cut -c1-400
KERNELINDEX_SPIN_WAIT=1 timeout 120 python3 kernels/bench/diag.py timeline > $OUT/timeline_spin.txt 2>&1; grep -E "==|exit|item #0" $OUT/timeline_spin.txt | cut -c1-300
{ timeout 60 python3 kernels/bench/diag.py time wgmma128 cublas; KERNELINDEX_NO_PDL=1 timeout 60 python3 kernels/bench/diag.py time wgmma128 | sed 's/^/nopdl /'; KERNELINDEX_SPIN_WAIT=1 timeout 60 python3 kernels/bench/diag.py time wgmma128 | sed 's/^/spin /'; } > $OUT/times.txt 2>&1; cat $OUT/times.txt
timeout 200 ncu --clock-control none --kernel-name regex:"qkv_gemm|norm_backward" --launch-skip 2 --launch-count 2 --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis python3 kernels/bench/diag.py once wgmma128 1492 > $OUT/ncu.txt 2>&1
grep -E "qkv_gemm|norm_back|Duration|Throughput|Stall|stall|Warp Cycles|Registers|Block Limit" $OUT/ncu.txt | head -60
echo "total $(( $(date +%s) - t0 )) s"
