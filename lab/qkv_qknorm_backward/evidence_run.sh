#!/usr/bin/env bash
# One device call for issue 28's evidence (repository root of the copy on the GPU machine):
#   1. a KernelIndex Verified rerun: the offline runner on a job claimed here (`kernelindex jobs
#      claim`), signed with a runner key made for it;
#   2. `kernelindex bench 051` of every implementation (controlled runs, v1alpha1 manifests);
#   3. op_check.py: every implementation through the torch op against the fp32/fp64 oracles
#      (the 16 cases, odd shapes, T = 16385 … 49153), then timed side by side with SOL and
#      cuBLAS's two GEMMs alone, ext-fused's diagnostic floors beside it.
# The harness and the runner name a revision's commit from git history, and the device copy has
# no .git: they run in a full clone carried in .kernel-lab/main (made with `git clone -n`; checked
# out here). Python packages the image lacks come as wheels (.whl/), the libraries prebuilt (build/).
# Carry: [".kernel-lab", ".whl", "build/kidx_build"]. Usage: OUT=… bash lab/qkv_qknorm_backward/evidence_run.sh
set -u
OUT=${OUT:?out dir}
IMPLS=${IMPLS:-ext-streamnorm,ext-portable,ext-hybrid,ext-fused}
TIME_ONLY=${TIME_ONLY:-ext-fused@diag-notransform,ext-fused@diag-nox}
BUDGET=${BUDGET:-570}  # seconds for the whole call; op_check gets what the first two steps leave
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
ROOT=$PWD
mkdir -p "$OUT/verified" "$OUT/bench" "$OUT/op_check"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 2
export PYTHONPATH=/tmp/site KERNELINDEX_BUILD_DIR=/tmp/kbuild PYTHONUNBUFFERED=1
mkdir -p /tmp/kbuild && cp -r build/kidx_build/. /tmp/kbuild/
cd .kernel-lab/main && git reset -q --hard HEAD || exit 2
export PYTHONPATH=$PWD:$PYTHONPATH
echo "clone at $(git rev-parse HEAD), status: '$(git status --porcelain | head -3)'"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])" | tee -a "$OUT/gpu.txt"

# The job claimed for this card (.kernel-lab/job-h200.json, job-h100.json), if one was.
case "$(head -n 1 "$OUT/gpu.txt")" in  # the card's name leads nvidia-smi's line above
  *H200*) JOB="$ROOT/.kernel-lab/job-h200.json" ;;
  *H100*) JOB="$ROOT/.kernel-lab/job-h100.json" ;;
  *) JOB=/nonexistent ;;
esac
if [ -f "$JOB" ]; then
  echo "job $(basename "$JOB")"
  timeout 180 python3 -m cli runner --signing-key "$ROOT/.kernel-lab/runner.pem" --job "$JOB" \
    --out "$OUT/verified/result.json" > "$OUT/verified/runner.log" 2>&1
  echo "runner rc=$? at $(elapsed) s"
  tail -n 4 "$OUT/verified/runner.log" | cut -c1-300
fi

timeout 240 python3 -m cli bench 051 --impl "reference,compile,$IMPLS" --out "$OUT/bench" > "$OUT/bench/cli.log" 2>&1
echo "bench rc=$? at $(elapsed) s"
grep -E "geomean|INCORRECT|FAILED|rror" "$OUT/bench/cli.log" | head -12 | cut -c1-300

left=$(( BUDGET - $(elapsed) ))
timeout $left python3 lab/qkv_qknorm_backward/op_check.py "$OUT/op_check/op_check.json" --impls "$IMPLS" \
  --time-only "$TIME_ONLY" --samples 50 > "$OUT/op_check/op_check.log" 2>&1
echo "op_check rc=$? at $(elapsed) s (limit $left s)"
echo "shape checks passed: $(grep -cE '^check .*passed=True det=True' "$OUT/op_check/op_check.log") of $(grep -cE '^check ' "$OUT/op_check/op_check.log")"
grep -E "^check " "$OUT/op_check/op_check.log" | grep -v "passed=True det=True" | head -n 10 | cut -c1-300
tail -n 8 "$OUT/op_check/op_check.log" | cut -c1-400
# The device returns a few files per call: everything travels as one archive.
(cd "$OUT" && tar czf evidence.tgz gpu.txt verified bench op_check && rm -rf verified bench op_check)
echo "total $(elapsed) s"
