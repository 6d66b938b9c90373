// Host interface of the cluster split-K GEMM kernel (cluster_gemm_sm90.cu): both GEMMs of 051's
// backward from G = [GQK | GV], where GQK [T,1280] is written by a norm kernel launched just before.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace kidx {
namespace gemm {

constexpr int kQK = 1280;         // GQ|GK columns
constexpr int kForcedFields = 5;  // a forced plan: {bm, cluster, sw, sx, x_first}; bm 0 = the planner's
constexpr int kPlanFields = 10;   // plan_fields()'s values
constexpr int kStamps = 12;       // debug timeline stamps per CTA (see launch)

struct Plan {
  int bm, cl, sw, sx, x_first;   // tile rows; cluster size; CTAs per dW / dX tile; dX tiles first
  int tokens, kbw, nwt, nxt, ncw, ncx, grid;
};

bool valid_forced(const int* forced);  // forced: NULL or kForcedFields ints
Plan make_plan(int tokens, const int* forced);
// bm, cluster, sw, sx, x_first, grid, ncw, ncx, nwt, nxt (what the Python wrapper reads back).
void plan_fields(const Plan& p, long long* out);

struct Operands {
  const __nv_bfloat16* gqk;   // [T,1280]
  const __nv_bfloat16* gv;    // grad_value [B,1,S,256], read in place as GV [T,256]
  const __nv_bfloat16* x;     // hidden_states [T,640]
  const __nv_bfloat16* wq;    // [1024,640]
  const __nv_bfloat16* wk;    // [256,640]
  const __nv_bfloat16* wv;    // [256,640]
  __nv_bfloat16* dx;          // [T,640]
  __nv_bfloat16* dwq;
  __nv_bfloat16* dwk;
  __nv_bfloat16* dwv;
  const float* norm_partials;  // [norm_parts,512] per-block Σ g·x̂ of the norm kernel
  int norm_parts;              // 0: the norm kernel did not run (debug), no grad_norm_weight
  float* dq_norm;              // grad_q_norm_weight [256] = column sums of the partials
  float* dk_norm;
  int tokens;
  // Debug: [grid][kStamps] globaltimer stamps, or null: 0 entry, 1 SM, 2 B tiles issued, 3 norm
  // wait returned, 4 first k-block arrived, 5 mainloop done, 6 partials visible in the cluster,
  // 7 sums stored, 8 exit, 9 k-blocks, 10 is dW.
  unsigned long long* timeline;
};

struct Maps {
  CUtensorMap g, v, x, wq, wk, wv, dx, dwq, dwk, dwv;
};

// Encode the tensor maps (before launching the norm kernel, so that the two launches follow each
// other closely). False when the driver refuses one.
bool encode_maps(const Operands& ops, Maps* maps);

// pdl: the norm kernel was launched just before with programmatic dependent launch in mind; the
// GEMM then starts its GV-only tiles and its W/X loads before the norm kernel ends.
cudaError_t launch(const Plan& plan, const Maps& maps, const Operands& ops, cudaStream_t stream, bool pdl);

}  // namespace gemm
}  // namespace kidx
