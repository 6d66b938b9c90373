// Host-side launchers of the kernels (plain CUDA runtime; no torch headers).
#pragma once

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

namespace kidx {

struct NormArgs {
  const __nv_bfloat16* grad_query;  // [B,4,S,256]
  const __nv_bfloat16* grad_key;    // [B,1,S,256]
  const __nv_bfloat16* grad_value;  // [B,1,S,256]
  const __nv_bfloat16* q_normed;    // [B,4,S,256]
  const __nv_bfloat16* k_normed;    // [B,1,S,256]
  const __nv_bfloat16* q_norm_weight;  // [256]
  const __nv_bfloat16* k_norm_weight;  // [256]
  const float* q_rstd;  // [B,4,S]
  const float* k_rstd;  // [B,1,S]
  __nv_bfloat16* g;     // [T,1536] out
  float* partials;      // [blocks,512] out (q dims 0..255, k dims 256..511)
  int* zero_ptr;        // zeroed by block 0 (counters of the GEMM kernel); may be null
  int zero_n;
  int batch, seq;
  unsigned long long* timeline = nullptr;  // debug: [blocks][2] start/end globaltimer, or null
};

// Number of blocks (= rows of `partials`) the norm kernel uses for T tokens.
int norm_grid_size(int tokens, int num_sms);
cudaError_t launch_norm_backward(const NormArgs& a, int grid, cudaStream_t stream);
// grad_norm_weight[d] = Σ_p partials[p][d] (for the cuBLAS path).
cudaError_t launch_norm_weight_finalize(const float* partials, int nparts, float* dq, float* dk,
                                        cudaStream_t stream);

struct GemmPlan {
  int bm;       // CTA tile rows (128 or 256); tile cols are always 128
  int tokens;
  int mx;       // dX row tiles = ceil(T / bm)
  int sx;       // dX split of K = 1536 (24 blocks of 64)
  int kbw;      // dW k-blocks = ceil(T / 64)
  int sw;       // dW split of K = T
  int nwt;      // dW tiles = (1536 / bm) * 5
  int nxt;      // dX tiles = mx * 5
  int w_first;  // dW items scheduled before dX items
  int grid;     // persistent CTAs
  double predicted_us;
};

// bm: 128, 256, or 0 to choose by predicted time.
GemmPlan make_gemm_plan(int tokens, int num_sms, int bm);
// ints of zeroed scratch the GEMM kernel needs (tile counters + scheduler); floats of workspace.
int gemm_counter_ints(const GemmPlan& p);
int64_t gemm_workspace_floats(const GemmPlan& p);

struct GemmArgs {
  const __nv_bfloat16* g;       // [T,1536]
  const __nv_bfloat16* x;       // [T,640]
  const __nv_bfloat16* wq;      // [1024,640]
  const __nv_bfloat16* wk;      // [256,640]
  const __nv_bfloat16* wv;      // [256,640]
  __nv_bfloat16* dx;            // [T,640]
  __nv_bfloat16* dwq;           // [1024,640]
  __nv_bfloat16* dwk;           // [256,640]
  __nv_bfloat16* dwv;           // [256,640]
  float* workspace;             // gemm_workspace_floats(plan)
  int* counters;                // gemm_counter_ints(plan), zero on entry (the norm kernel zeroes it)
  const float* norm_partials;   // [nparts,512] from the norm kernel
  int norm_parts;
  float* dq_norm;               // [256]
  float* dk_norm;               // [256]
  unsigned long long* timeline = nullptr;  // debug: [grid][kTimelineSlots], or null
  int spin = 0;                            // debug: spin on mbarriers with test_wait
};
constexpr int kTimelineSlots = 48;
cudaError_t launch_gemm(const GemmArgs& a, const GemmPlan& plan, cudaStream_t stream, bool pdl);

}  // namespace kidx
