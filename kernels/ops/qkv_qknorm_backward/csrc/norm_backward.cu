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
constexpr int kBlocksPerSm = 3;

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
  int token;
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
  row.token = t;
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

// Phase 1 of a row: grad_norm_weight partials, and this lane's part of Σ ĝ·x̂.
__device__ __forceinline__ float row_dot(const Row& row, const uint4& wq, const uint4& wk,
                                         float (&accq)[8], float (&acck)[8]) {
  if (row.head < 0 || row.head == 5) return 0.f;
  const bool is_q = row.head < 4;
  float g[8], x[8], w[8];
  unpack8(row.g, g);
  unpack8(row.x, x);
  unpack8(is_q ? wq : wk, w);
  float dot = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float gx = __fmul_rn(g[i], x[i]);
    if (is_q) accq[i] += gx; else acck[i] += gx;
    const float gh = __bfloat162float(__float2bfloat16_rn(__fmul_rn(g[i], __fadd_rn(1.0f, w[i]))));
    dot = fmaf(gh, x[i], dot);
  }
  return dot;
}

// Phase 2 of a row: g_in = bf16(rstd · (ĝ − m·x̂)) into G (V rows are copied).
__device__ __forceinline__ void row_store(const NormArgs& a, const Row& row, float dot,
                                          const uint4& wq, const uint4& wk) {
  if (row.head < 0) return;
  uint4* dst = reinterpret_cast<uint4*>(a.g + static_cast<int64_t>(row.token) * kGCols + row.head * kD) +
               (threadIdx.x & 31);
  if (row.head == 5) {
    *dst = row.g;
    return;
  }
  const bool is_q = row.head < 4;
  float g[8], x[8], w[8];
  unpack8(row.g, g);
  unpack8(row.x, x);
  unpack8(is_q ? wq : wk, w);
  const float m = dot * (1.0f / kD);
  uint4 out;
  __nv_bfloat162* o2 = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float v[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int e = 2 * i + k;
      const float gh = __bfloat162float(__float2bfloat16_rn(__fmul_rn(g[e], __fadd_rn(1.0f, w[e]))));
      v[k] = __fmul_rn(row.rstd, __fsub_rn(gh, __fmul_rn(m, x[e])));
    }
    o2[i] = __floats2bfloat162_rn(v[0], v[1]);
  }
  *dst = out;
}

// Each warp takes RPW consecutive rows (same head, consecutive tokens: contiguous
// memory), issues all their loads before using any, and reduces the rows' dots together.
template <int RPW>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) norm_backward_kernel(NormArgs a) {
  __shared__ float red[kWarps][2 * kD];
  // The GEMM kernel (launched with programmatic stream serialization) may be scheduled now; it
  // waits for this grid's completion (griddepcontrol.wait) before reading anything we write.
  pdl_launch_dependents();
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int tokens = a.batch * a.seq;
  if (a.timeline != nullptr && threadIdx.x == 0) a.timeline[2 * blockIdx.x] = globaltimer();

  if (blockIdx.x == 0 && a.zero_ptr != nullptr) {
    for (int i = threadIdx.x; i < a.zero_n; i += kThreads) a.zero_ptr[i] = 0;
  }

  float accq[8], acck[8];
  const uint4 wq1 = __ldg(reinterpret_cast<const uint4*>(a.q_norm_weight) + lane);
  const uint4 wk1 = __ldg(reinterpret_cast<const uint4*>(a.k_norm_weight) + lane);
#pragma unroll
  for (int i = 0; i < 8; ++i) accq[i] = acck[i] = 0.f;

  const int rows = kHeads * tokens;
  const int step = gridDim.x * kWarps * RPW;
  for (int base = (blockIdx.x * kWarps + warp) * RPW; base < rows; base += step) {
    Row rr[RPW];
#pragma unroll
    for (int i = 0; i < RPW; ++i) rr[i] = load_row(a, base + i, tokens, lane);
    float dot[RPW];
#pragma unroll
    for (int i = 0; i < RPW; ++i) dot[i] = row_dot(rr[i], wq1, wk1, accq, acck);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int i = 0; i < RPW; ++i) dot[i] += __shfl_xor_sync(0xffffffffu, dot[i], o);
#pragma unroll
    for (int i = 0; i < RPW; ++i) row_store(a, rr[i], dot[i], wq1, wk1);
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

// Rows per warp: 4 (all loads of 4 rows in flight) when that still fills the GPU, else fewer
// rows per warp and more blocks.
static int rows_per_warp(int tokens, int num_sms) {
  const int64_t rows = static_cast<int64_t>(kHeads) * tokens;
  const int64_t full = static_cast<int64_t>(num_sms) * kBlocksPerSm * kWarps;
  if (rows >= full * 4) return 4;
  if (rows >= full * 2) return 2;
  return 1;
}

int norm_grid_size(int tokens, int num_sms) {
  const int64_t rows = static_cast<int64_t>(kHeads) * tokens;
  const int64_t per_block = kWarps * rows_per_warp(tokens, num_sms);
  const int64_t want = (rows + per_block - 1) / per_block;
  const int64_t cap = static_cast<int64_t>(num_sms) * kBlocksPerSm;
  return static_cast<int>(want < cap ? (want < 1 ? 1 : want) : cap);
}

cudaError_t launch_norm_backward(const NormArgs& a, int grid, cudaStream_t stream) {
  int dev = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (err != cudaSuccess) return err;
  switch (rows_per_warp(a.batch * a.seq, sms)) {
    case 4: norm_backward_kernel<4><<<grid, kThreads, 0, stream>>>(a); break;
    case 2: norm_backward_kernel<2><<<grid, kThreads, 0, stream>>>(a); break;
    default: norm_backward_kernel<1><<<grid, kThreads, 0, stream>>>(a); break;
  }
  return cudaGetLastError();
}

cudaError_t launch_norm_weight_finalize(const float* partials, int nparts, float* dq, float* dk,
                                        cudaStream_t stream) {
  norm_weight_finalize_kernel<<<2, kD, 0, stream>>>(partials, nparts, dq, dk);
  return cudaGetLastError();
}

}  // namespace kidx
