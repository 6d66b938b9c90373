// ext-streamnorm's host API (extern "C", for ctypes; no torch headers): the streaming Q/K norm
// kernel (stream_norm_sm90.cu), then the cluster split-K GEMM kernel (cluster_gemm_sm90.cu),
// chained by programmatic dependent launch on the caller's stream.
#include <stdint.h>

#include "cluster_gemm.h"
#include "common/launch.cuh"
#include "stream_norm.h"

namespace {

constexpr int kPlanValues = kidx::gemm::kPlanFields + 1;  // + norm blocks
constexpr int kArgs = 30;                                 // without the debug timelines

bool valid(long long tokens, int num_sms, const int* forced) {
  return tokens >= 1 && tokens <= kidx::norm::kMaxTokens && num_sms >= 1 && kidx::gemm::valid_forced(forced);
}

}  // namespace

extern "C" {

// forced: NULL or 5 ints {bm, cluster, sw, sx, x_first} (bm 0 = the planner's choice).
// out[0..10]: bm, cluster, sw, sx, x_first, grid, ncw, ncx, nwt, nxt (the GEMM's plan), norm
// blocks (rows of the norm-weight partials). Returns the number of values written, or -1 for bad
// arguments.
int kidxs_plan(long long tokens, int num_sms, const int* forced, long long* out, int nout) {
  if (!valid(tokens, num_sms, forced) || nout < kPlanValues) return -1;
  kidx::gemm::plan_fields(kidx::gemm::make_plan(static_cast<int>(tokens), forced), out);
  out[kidx::gemm::kPlanFields] = kidx::norm::shape(static_cast<int>(tokens), num_sms).grid;
  return kPlanValues;
}

// args (device pointers, then ints), in this order:
//  0 grad_query 1 grad_key 2 grad_value 3 hidden_states 4 q_weight 5 k_weight 6 v_weight
//  7 q_norm_weight 8 k_norm_weight 9 q_rstd 10 k_rstd 11 q_normed 12 k_normed
//  13 grad_hidden 14 grad_q_weight 15 grad_k_weight 16 grad_v_weight 17 grad_q_norm_weight
//  18 grad_k_norm_weight 19 gqk [T,1280] bf16 20 norm partials [norm blocks,512] fp32
//  21 batch 22 seq 23 num_sms 24..28 forced plan (bm 0 = auto) 29 flags (bit 0: PDL; debug bits,
//  results wrong: bit 1 skip the norm kernel, bit 2 skip the GEMM kernel)
//  [30 debug: norm timeline [norm blocks][4] u64 or 0, 31 GEMM timeline [grid][12] u64 or 0]
// Returns a cudaError_t value (0 = success), -1 when a tensor map could not be encoded, -2 for
// bad arguments.
int kidxs_launch(const unsigned long long* a, int n, void* stream_ptr) {
  using namespace kidx;
  if (n < kArgs) return kErrArguments;
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_ptr);
  auto bf = [&](int i) { return reinterpret_cast<__nv_bfloat16*>(a[i]); };
  auto u4 = [&](int i) { return reinterpret_cast<const uint4*>(a[i]); };
  auto f32 = [&](int i) { return reinterpret_cast<float*>(a[i]); };
  auto timeline = [&](int i) { return n > i ? reinterpret_cast<unsigned long long*>(a[i]) : nullptr; };
  const int batch = static_cast<int>(a[21]);
  const int seq = static_cast<int>(a[22]);
  const int sms = static_cast<int>(a[23]);
  int forced[gemm::kForcedFields];
  for (int i = 0; i < gemm::kForcedFields; ++i) forced[i] = static_cast<int>(a[24 + i]);
  const int flags = static_cast<int>(a[29]);
  const long long tokens = static_cast<long long>(batch) * seq;
  if (batch < 1 || seq < 1 || !valid(tokens, sms, forced)) return kErrArguments;
  const gemm::Plan plan = gemm::make_plan(static_cast<int>(tokens), forced);
  const norm::Shape shape = norm::shape(static_cast<int>(tokens), sms);
  const bool run_norm = !(flags & 2);
  const bool run_gemm = !(flags & 4);

  const gemm::Operands g{bf(19), bf(2), bf(3), bf(4), bf(5), bf(6), bf(13), bf(14), bf(15), bf(16),
                         f32(20), run_norm ? shape.grid : 0, f32(17), f32(18), static_cast<int>(tokens), timeline(31)};
  gemm::Maps maps;
  if (!gemm::encode_maps(g, &maps)) return kErrTensorMap;
  if (run_norm) {
    const norm::Operands q{u4(0), u4(11), f32(9), u4(1), u4(12), f32(10), u4(7), u4(8),
                           reinterpret_cast<uint4*>(a[19]), f32(20), seq, static_cast<int>(tokens), timeline(30)};
    const cudaError_t err = norm::launch(shape, q, stream);
    if (err != cudaSuccess) return err;
  }
  if (!run_gemm) return 0;
  return gemm::launch(plan, maps, g, stream, (flags & 1) && run_norm);
}

const char* kidxs_error(int code) { return kidx::error_string(code); }

}  // extern "C"
