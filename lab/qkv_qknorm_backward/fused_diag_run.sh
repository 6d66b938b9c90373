#!/usr/bin/env bash
# One device call for issue 28's ext-fused diagnosis (repository root of a copy of this tree on
# the GPU machine; libraries prebuilt here into build/kidx_build/ and carried): the card's state,
# the cubins' architectures, a short ext-fused smoke test under a timeout (a hung barrier costs
# 60 s, not the call), then op_check.py (every implementation through torch.ops.kernelindex,
# checked against the fp32/fp64 oracles, then timed side by side in one process) and a
# transposed summary (variants × cases, µs); with STAGES set, the per-stage timelines (stages.py).
# Usage: bash lab/qkv_qknorm_backward/fused_diag_run.sh OUTDIR OP_CHECK_ARGS...
set -u
OUT=${1:?out dir}
shift
mkdir -p "$OUT"
export KERNELINDEX_BUILD_DIR=/tmp/kbuild PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
t0=$(date +%s)
mkdir -p /tmp/kbuild && cp -r build/kidx_build/. /tmp/kbuild/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
for so in /tmp/kbuild/*/*.so; do echo "$(basename "$so"): $(cuobjdump --list-elf "$so" 2>&1 | grep -oE 'sm_[0-9]+a?' | sort -u | tr '\n' ' ')"; done
timeout 60 python3 - <<'PY'
import os
import torch
from kernels.ops.qkv_qknorm_backward import ext_fused as e
from kernels.ops.qkv_qknorm_backward.inputs import make_inputs
from kernels.ops.qkv_qknorm_backward.reference import reference_fp32
for b, s in [(1, 131), (2, 1000), (1, 8192)]:
    inp = make_inputs(b, s, seed=1, device="cuda")
    for mode in os.environ.get("SMOKE_MODES", "auto,v1").split(","):
        outs = e.qkv_qknorm_backward(**inp, mode=mode)
        torch.cuda.synchronize()
        ref = reference_fp32(**inp)
        rel = [float((o.float() - r.float()).norm() / r.float().norm()) for o, r in zip(outs, ref)]
        print("fused smoke", b, s, mode, ["%.1e" % x for x in rel], flush=True)
PY
frc=$?
echo "fused smoke rc=$frc at $(( $(date +%s) - t0 )) s"
[ $frc -ne 0 ] && exit 3
timeout ${CHECK_TIMEOUT:-400} python3 lab/qkv_qknorm_backward/op_check.py "$OUT/op_check.json" "$@" > "$OUT/op_check.log" 2>&1
echo "op_check rc=$? at $(( $(date +%s) - t0 )) s"
grep -E "^check " "$OUT/op_check.log" | grep -v "passed=True det=True" | head -n 30 | cut -c1-600
echo "shape checks passed: $(grep -cE '^check .*passed=True det=True' "$OUT/op_check.log") of $(grep -cE '^check ' "$OUT/op_check.log")"
grep -E "^checks passed|Traceback|Error" "$OUT/op_check.log" | head -5
python3 - "$OUT/op_check.json" <<'PY'
import json, math, sys
t = json.load(open(sys.argv[1])).get("timing")
if t:
    rows = t["rows"]
    cols = [k for k in rows[0] if k not in ("case", "B", "S", "T")]
    print("variant | geo | " + " ".join(f"{r['T']:>6d}" for r in rows))
    for k in cols:
        print(f"{k[:34]:34s} {t['geomean_us'][k]:7.2f} | " + " ".join(f"{r[k] / 1e3:6.1f}" for r in rows))
PY
if [ -n "${STAGES:-}" ]; then  # per-stage timelines (stages.py): STAGES="131:t2 8192:c1-w1-x1:diag-nox ..."
  timeout ${STAGES_TIMEOUT:-150} python3 lab/qkv_qknorm_backward/stages.py "$OUT/stages.json.gz" $STAGES 2>&1 | tee "$OUT/stages.log" | cut -c1-700
fi
echo "total $(( $(date +%s) - t0 )) s"
