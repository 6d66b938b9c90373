// Q/K RMSNorm backward + transpose to G = [GQ | GK | GV] ([T, 1536] bf16), and per-block partial
// sums of grad_norm_weight. One warp per (token, head) row of 256: 16-byte loads, one warp
// all-reduce for m = mean(ĝ·x̂). Deterministic: fixed row-to-warp mapping, fixed reduction order.
#include "launch.h"
#include "sm90_ptx.cuh"

namespace kidx {

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kHeads = 6;  // 4 query heads, 1 key head, 1 value head
constexpr int kD = 256;
constexpr int kGCols = 1536;

__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t = __bfloat1622float2(h[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

struct Row {
  uint4 g, x;
  float rstd;
  int head;  // 0..3 query, 4 key, 5 value; -1 none
  int64_t gofs;  // element offset of this lane's 8 values in G
};

__device__ __forceinline__ Row load_row(const NormArgs& a, int r, int tokens, int lane) {
  Row row;
  row.head = -1;
  if (r >= kHeads * tokens) return row;
  const int h = r / tokens;
  const int t = r - h * tokens;
  const int b = t / a.seq;
  const int s = t - b * a.seq;
  row.head = h;
  row.gofs = static_cast<int64_t>(t) * kGCols + h * kD + lane * 8;
  if (h < 4) {
    const int64_t idx = static_cast<int64_t>(b * 4 + h) * a.seq + s;
    row.g = __ldg(reinterpret_cast<const uint4*>(a.grad_query + idx * kD) + lane);
    row.x = __ldg(reinterpret_cast<const uint4*>(a.q_normed + idx * kD) + lane);
    row.rstd = __ldg(a.q_rstd + idx);
  } else {
    const int64_t idx = static_cast<int64_t>(b) * a.seq + s;
    if (h == 4) {
      row.g = __ldg(reinterpret_cast<const uint4*>(a.grad_key + idx * kD) + lane);
      row.x = __ldg(reinterpret_cast<const uint4*>(a.k_normed + idx * kD) + lane);
      row.rstd = __ldg(a.k_rstd + idx);
    } else {
      row.g = __ldg(reinterpret_cast<const uint4*>(a.grad_value + idx * kD) + lane);
      row.x = make_uint4(0, 0, 0, 0);
      row.rstd = 0.f;
    }
  }
  return row;
}

__device__ __forceinline__ void process_row(const NormArgs& a, const Row& row, const float (&wq1)[8],
                                            const float (&wk1)[8], float (&accq)[8],
                                            float (&acck)[8]) {
  if (row.head < 0) return;
  uint4* dst = reinterpret_cast<uint4*>(a.g + row.gofs);
  if (row.head == 5) {
    *dst = row.g;  // V passes through
    return;
  }
  const bool is_q = row.head < 4;
  float g[8], x[8], gh[8];
  unpack8(row.g, g);
  unpack8(row.x, x);
  float dot = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float gx = __fmul_rn(g[i], x[i]);
    if (is_q) accq[i] += gx; else acck[i] += gx;
    const float w1 = is_q ? wq1[i] : wk1[i];
    gh[i] = __bfloat162float(__float2bfloat16_rn(__fmul_rn(g[i], w1)));
    dot = fmaf(gh[i], x[i], dot);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
  const float m = dot * (1.0f / kD);
  uint4 out;
  __nv_bfloat162* o2 = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float v0 = __fmul_rn(row.rstd, __fsub_rn(gh[2 * i], __fmul_rn(m, x[2 * i])));
    const float v1 = __fmul_rn(row.rstd, __fsub_rn(gh[2 * i + 1], __fmul_rn(m, x[2 * i + 1])));
    o2[i] = __floats2bfloat162_rn(v0, v1);
  }
  *dst = out;
}

__global__ void __launch_bounds__(kThreads, 4) norm_backward_kernel(NormArgs a) {
  __shared__ float red[kWarps][2 * kD];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int tokens = a.batch * a.seq;
  if (a.timeline != nullptr && threadIdx.x == 0) a.timeline[2 * blockIdx.x] = globaltimer();

  if (blockIdx.x == 0 && a.zero_ptr != nullptr) {
    for (int i = threadIdx.x; i < a.zero_n; i += kThreads) a.zero_ptr[i] = 0;
  }

  float wq1[8], wk1[8], accq[8], acck[8];
  {
    float w[8];
    unpack8(__ldg(reinterpret_cast<const uint4*>(a.q_norm_weight) + lane), w);
#pragma unroll
    for (int i = 0; i < 8; ++i) wq1[i] = 1.0f + w[i];
    unpack8(__ldg(reinterpret_cast<const uint4*>(a.k_norm_weight) + lane), w);
#pragma unroll
    for (int i = 0; i < 8; ++i) wk1[i] = 1.0f + w[i];
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) accq[i] = acck[i] = 0.f;

  const int rows = kHeads * tokens;
  const int nw = gridDim.x * kWarps;
  for (int r0 = blockIdx.x * kWarps + warp; r0 < rows; r0 += 2 * nw) {
    const Row ra = load_row(a, r0, tokens, lane);
    const Row rb = load_row(a, r0 + nw, tokens, lane);
    process_row(a, ra, wq1, wk1, accq, acck);
    process_row(a, rb, wq1, wk1, accq, acck);
  }

#pragma unroll
  for (int i = 0; i < 8; ++i) {
    red[warp][lane * 8 + i] = accq[i];
    red[warp][kD + lane * 8 + i] = acck[i];
  }
  __syncthreads();
  for (int d = threadIdx.x; d < 2 * kD; d += kThreads) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) s += red[w][d];
    a.partials[static_cast<int64_t>(blockIdx.x) * 2 * kD + d] = s;
  }
  if (a.timeline != nullptr && threadIdx.x == 0) a.timeline[2 * blockIdx.x + 1] = globaltimer();
  pdl_launch_dependents();
}

__global__ void norm_weight_finalize_kernel(const float* __restrict__ partials, int nparts,
                                            float* __restrict__ dq, float* __restrict__ dk) {
  const int d = blockIdx.x * blockDim.x + threadIdx.x;
  if (d >= 2 * kD) return;
  float s = 0.f;
  for (int p = 0; p < nparts; ++p) s += partials[static_cast<int64_t>(p) * 2 * kD + d];
  if (d < kD) dq[d] = s; else dk[d - kD] = s;
}

}  // namespace

int norm_grid_size(int tokens, int num_sms) {
  const int64_t rows = static_cast<int64_t>(kHeads) * tokens;
  const int64_t want = (rows + 2 * kWarps - 1) / (2 * kWarps);  // >= 2 rows per warp
  const int64_t cap = static_cast<int64_t>(num_sms) * 4;
  return static_cast<int>(want < cap ? (want < 1 ? 1 : want) : cap);
}

cudaError_t launch_norm_backward(const NormArgs& a, int grid, cudaStream_t stream) {
  norm_backward_kernel<<<grid, kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

cudaError_t launch_norm_weight_finalize(const float* partials, int nparts, float* dq, float* dk,
                                        cudaStream_t stream) {
  norm_weight_finalize_kernel<<<2, kD, 0, stream>>>(partials, nparts, dq, dk);
  return cudaGetLastError();
}

}  // namespace kidx
