#!/usr/bin/env bash
# One device call for issue 28 (repository root on the GPU machine): wheels the image lacks
# (.whl/, carried), libraries prebuilt here (build/kidx_build/, carried: nothing needs nvcc there),
# the cuBLAS long-T check, cuobjdump of the libraries, then op_check.py (every implementation
# through torch.ops.kernelindex) and optionally the harness CLI side by side.
# Usage: IMPLS=a,b bash lab/qkv_qknorm_backward/fused_h200_run.sh OUTDIR "CLI_IMPLS or -" [OP_CHECK_ARGS...]
# (ext-fused is smoke-tested first and dropped from IMPLS if it fails or hangs)
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
for so in /tmp/kbuild/*/*.so; do echo "$so: $(cuobjdump --list-elf "$so" 2>&1 | grep -oE 'sm_[0-9]+a?' | sort -u | tr '\n' ' ')"; done
timeout 60 python3 - <<'PY'
import torch
torch.backends.cuda.matmul.allow_tf32 = False
for t in (8193, 16385, 32769):
    g = torch.randn(t, 1536, device="cuda").bfloat16(); x = torch.randn(t, 640, device="cuda").bfloat16()
    ref = g.t().double() @ x.double(); rms = ref.pow(2).mean().sqrt()
    bf = torch.mm(g.t(), x); f32 = torch.mm(g.t(), x, torch.float32)
    print(f"cuBLAS G^T X at T={t}: bf16 out max|err|/rms {float((bf.double()-ref).abs().max()/rms):.4f}, "
          f"fp32 out {float((f32.double()-ref).abs().max()/rms):.2e}, fp32 out rounded once "
          f"{float((f32.bfloat16().double()-ref).abs().max()/rms):.4f}", flush=True)
PY
echo "cublas check rc=$? at $(( $(date +%s) - t0 )) s"
# ext-fused first on its own under a short timeout (a hung barrier costs 90 s, not the call)
timeout 90 python3 - <<'PY'
import torch
from kernels.ops.qkv_qknorm_backward import ext_fused as e
from kernels.ops.qkv_qknorm_backward.inputs import make_inputs
from kernels.ops.qkv_qknorm_backward.reference import reference_fp32
e.load(verbose=False)
for b, s in [(1, 131), (2, 1000), (1, 8192)]:
    inp = make_inputs(b, s, seed=1, device="cuda")
    outs = e.qkv_qknorm_backward(**inp)
    torch.cuda.synchronize()
    ref = reference_fp32(**inp)
    rel = [float((o.float() - r.float()).norm() / r.float().norm()) for o, r in zip(outs, ref)]
    print("fused smoke", b, s, e.plan(b, s, 132), ["%.1e" % x for x in rel], flush=True)
PY
frc=$?
echo "fused smoke rc=$frc at $(( $(date +%s) - t0 )) s"
IMPLS=${IMPLS:-ext-portable,ext-streamnorm,ext-hybrid,ext-fused}
[ $frc -ne 0 ] && IMPLS=$(echo "$IMPLS" | sed 's/,\?ext-fused//')
timeout ${CHECK_TIMEOUT:-420} python3 lab/qkv_qknorm_backward/op_check.py "$OUT/op_check.json" --impls "$IMPLS" "$@" > "$OUT/op_check.log" 2>&1
rc=$?
echo "op_check rc=$rc at $(( $(date +%s) - t0 )) s"
grep -vE "^check .*passed=True det=True" "$OUT/op_check.log" | tail -n 60 | cut -c1-700
grep -cE "^check .*passed=True det=True" "$OUT/op_check.log" | sed 's/^/shape checks passed: /'
if [ "$CLI_IMPLS" != "-" ]; then
  timeout ${CLI_TIMEOUT:-300} python3 -m kernels.harness.cli 051 --impl "$CLI_IMPLS" --out "$OUT/cli" > "$OUT/cli.log" 2>&1
  echo "cli rc=$? at $(( $(date +%s) - t0 )) s"
  grep -E "geomean|INCORRECT|FAILED|rror" "$OUT/cli.log" | head -12
fi
echo "total $(( $(date +%s) - t0 )) s"
