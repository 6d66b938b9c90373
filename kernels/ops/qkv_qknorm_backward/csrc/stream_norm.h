// Host interface of the streaming Q/K norm kernel (stream_norm_sm90.cu): the RMSNorm backward of
// 051's Q and K heads into GQK = [GQ|GK] [T,1280] bf16, plus per-block partial sums of the
// norm-weight gradients, for the GEMM kernel launched right after it.
#pragma once

#include <cuda_runtime.h>

namespace kidx {
namespace norm {

constexpr long long kMaxTokens = (1LL << 26) - 1;  // 5T rows of 32 uint4 are indexed in int

// Rows per warp and blocks for T tokens on num_sms SMs.
struct Shape {
  int chunk, grid;
};
Shape shape(int tokens, int num_sms);

struct Operands {
  const uint4* gq;  // grad_query [B,4,S,256]: 4T rows of 256
  const uint4* xq;  // q_normed
  const float* rq;  // q_rstd [4T]
  const uint4* gk;  // grad_key [B,1,S,256]: T rows
  const uint4* xk;  // k_normed
  const float* rk;  // k_rstd [T]
  const uint4* wq;  // q_norm_weight [256]
  const uint4* wk;  // k_norm_weight [256]
  uint4* gqk;       // GQK [T,1280] out
  float* partials;  // [grid,512] out: Σ g·x̂ per block (q dims 0..255, k dims 256..511)
  int seq, tokens;
  unsigned long long* timeline;  // debug: [grid][4] entry, exit, SM; or null
};

cudaError_t launch(const Shape& shape, const Operands& ops, cudaStream_t stream);

}  // namespace norm
}  // namespace kidx
