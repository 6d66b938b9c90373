"""No shipped sm_90a kernel hands a shared-memory stage back (mbarrier arrive) before the ldmatrix
results it read from it are used: the SASS check of tests/kernels/sass_release.py, on this
machine's nvcc output (no GPU), first shown to catch the fault on a kernel written to have it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.kernels.sass_release import cuobjdump, hazards, sass
from tests.kernels.sm90 import compile_sm90a, nvcc

# Two kernels that read a stage with ldmatrix and release it; one uses the results first (stores
# them: an arrive is a release, so ptxas keeps the store before it), one releases first.
_STAGE_RELEASE = r"""
#include <stdint.h>
__device__ __forceinline__ uint32_t smem(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void ldsm4(uint32_t (&d)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(smem(row)));
}
__device__ __forceinline__ void arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem(bar)) : "memory");
}
template <bool kUseFirst>
__device__ void stage_release(const uint4* in, uint32_t* out) {
  __shared__ alignas(128) uint4 box[64];
  __shared__ uint64_t empty;
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 32;" :: "r"(smem(&empty)));
  box[threadIdx.x] = in[threadIdx.x];
  box[threadIdx.x + 32] = in[threadIdx.x + 32];
  __syncthreads();
  uint32_t d[4];
  ldsm4(d, &box[2 * (threadIdx.x & 15) + (threadIdx.x >> 4)]);
  if (kUseFirst) {
    out[threadIdx.x] = d[0] ^ d[1] ^ d[2] ^ d[3];
    arrive(&empty);
  } else {
    arrive(&empty);
    out[threadIdx.x] = d[0] ^ d[1] ^ d[2] ^ d[3];
  }
}
__global__ void stage_used_then_released(const uint4* in, uint32_t* out) { stage_release<true>(in, out); }
__global__ void stage_released_then_used(const uint4* in, uint32_t* out) { stage_release<false>(in, out); }
"""


@pytest.fixture(scope="module")
def tools():
    if nvcc() is None:
        pytest.skip("nvcc is not installed")
    assert cuobjdump() is not None, "cuobjdump missing: `make setup-dev` installs nvidia-cuda-cuobjdump"


def test_the_check_flags_a_release_before_use_and_passes_a_use_before_release(tools, tmp_path):
    source = tmp_path / "stage_release.cu"
    source.write_text(_STAGE_RELEASE)
    obj = tmp_path / "stage_release.o"
    cmd = [nvcc(), "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-c", str(source), "-o", str(obj)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    text = sass(obj)
    assert "LDSM" in text and "SYNCS.ARRIVE" in text  # the pattern is there to be judged
    flagged = {h.function for h in hazards(text)}
    assert any("stage_released_then_used" in f for f in flagged), flagged
    assert not any("stage_used_then_released" in f for f in flagged), flagged


@pytest.mark.parametrize("source", ["ext_fused_sm90.cu", "cluster_gemm_sm90.cu", "stream_norm_sm90.cu"])
def test_shipped_kernels_release_no_stage_before_its_ldmatrix_results_are_used(tools, tmp_path, source):
    compile_sm90a(source, tmp_path)
    text = sass(tmp_path / (Path(source).stem + ".o"))
    found = hazards(text)
    assert not found, "\n".join(f"{h.function} /*{h.arrive}*/ after LDSM {h.pending}" for h in found)
