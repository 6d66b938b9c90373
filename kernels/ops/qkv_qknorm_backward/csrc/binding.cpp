// Torch binding of the Q/K/V projection backward with Q/K RMSNorm. Arguments are validated in
// Python (kernels/ops/qkv_qknorm_backward/checks.py) before they get here; the TORCH_CHECKs below
// only guard against misuse of the raw entry points.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <torch/extension.h>

#include <cstdlib>

#include "launch.h"

namespace {

constexpr int64_t kHidden = 640;
constexpr int64_t kGCols = 1536;

template <typename T>
T* ptr(const at::Tensor& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

void check_cuda(cudaError_t err, const char* what) {
  TORCH_CHECK(err == cudaSuccess, what, " failed: ", cudaGetErrorString(err));
}

int multiprocessors(int device) {
  int n = 0;
  check_cuda(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  return n;
}

bool adjacent_rows(const at::Tensor& a, const at::Tensor& b) {
  return a.storage().is_alias_of(b.storage()) &&
         ptr<char>(a) + a.numel() * a.element_size() == ptr<char>(b);
}

// mode: 0 = norm kernel + cuBLAS GEMMs; 1 = norm kernel + persistent wgmma GEMM (tile chosen by
// the planner); 2 / 3 = the same with 128 / 256-row tiles forced.
void run(const at::Tensor& grad_query, const at::Tensor& grad_key, const at::Tensor& grad_value,
         const at::Tensor& hidden_states, const at::Tensor& q_weight, const at::Tensor& k_weight,
         const at::Tensor& v_weight, const at::Tensor& q_norm_weight,
         const at::Tensor& k_norm_weight, const at::Tensor& q_rstd, const at::Tensor& k_rstd,
         const at::Tensor& q_normed, const at::Tensor& k_normed, const at::Tensor& grad_hidden,
         const at::Tensor& grad_q_weight, const at::Tensor& grad_k_weight,
         const at::Tensor& grad_v_weight, const at::Tensor& grad_q_norm_weight,
         const at::Tensor& grad_k_norm_weight, int64_t mode,
         at::Tensor* norm_timeline = nullptr, at::Tensor* gemm_timeline = nullptr) {
  TORCH_CHECK(hidden_states.is_cuda() && hidden_states.dim() == 3, "hidden_states: bad tensor");
  TORCH_CHECK(mode >= 0 && mode <= 3, "mode must be 0..3");
  c10::cuda::CUDAGuard guard(hidden_states.device());
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const int batch = static_cast<int>(hidden_states.size(0));
  const int seq = static_cast<int>(hidden_states.size(1));
  const int64_t tokens = static_cast<int64_t>(batch) * seq;
  TORCH_CHECK(tokens >= 1 && tokens < (1LL << 30), "token count out of range");
  const int sms = multiprocessors(hidden_states.get_device());
  auto opts = hidden_states.options();

  at::Tensor g = at::empty({tokens, kGCols}, opts);
  const int norm_blocks = kidx::norm_grid_size(static_cast<int>(tokens), sms);
  at::Tensor partials = at::empty({norm_blocks, 512}, opts.dtype(at::kFloat));

  kidx::NormArgs na;
  na.grad_query = ptr<const __nv_bfloat16>(grad_query);
  na.grad_key = ptr<const __nv_bfloat16>(grad_key);
  na.grad_value = ptr<const __nv_bfloat16>(grad_value);
  na.q_normed = ptr<const __nv_bfloat16>(q_normed);
  na.k_normed = ptr<const __nv_bfloat16>(k_normed);
  na.q_norm_weight = ptr<const __nv_bfloat16>(q_norm_weight);
  na.k_norm_weight = ptr<const __nv_bfloat16>(k_norm_weight);
  na.q_rstd = ptr<const float>(q_rstd);
  na.k_rstd = ptr<const float>(k_rstd);
  na.g = ptr<__nv_bfloat16>(g);
  na.partials = ptr<float>(partials);
  na.zero_ptr = nullptr;
  na.zero_n = 0;
  na.batch = batch;
  na.seq = seq;
  if (norm_timeline) {
    *norm_timeline = at::zeros({norm_blocks, 2}, opts.dtype(at::kLong));
    na.timeline = reinterpret_cast<unsigned long long*>(norm_timeline->data_ptr());
  }

  at::Tensor x = hidden_states.view({tokens, kHidden});
  at::Tensor dx = grad_hidden.view({tokens, kHidden});

  if (mode == 0) {
    check_cuda(kidx::launch_norm_backward(na, norm_blocks, stream), "norm_backward");
    check_cuda(kidx::launch_norm_weight_finalize(ptr<float>(partials), norm_blocks,
                                                 ptr<float>(grad_q_norm_weight),
                                                 ptr<float>(grad_k_norm_weight), stream),
               "norm_weight_finalize");
    at::Tensor w = at::cat({q_weight, k_weight, v_weight}, 0);
    at::mm_out(dx, g, w);
    if (adjacent_rows(grad_q_weight, grad_k_weight) && adjacent_rows(grad_k_weight, grad_v_weight)) {
      at::Tensor dw = grad_q_weight.as_strided({kGCols, kHidden}, {kHidden, 1});
      at::mm_out(dw, g.t(), x);
    } else {
      at::Tensor dwq = grad_q_weight, dwk = grad_k_weight, dwv = grad_v_weight;
      at::mm_out(dwq, g.narrow(1, 0, 1024).t(), x);
      at::mm_out(dwk, g.narrow(1, 1024, 256).t(), x);
      at::mm_out(dwv, g.narrow(1, 1280, 256).t(), x);
    }
    return;
  }

  const int bm = mode == 2 ? 128 : (mode == 3 ? 256 : 0);
  const kidx::GemmPlan plan = kidx::make_gemm_plan(static_cast<int>(tokens), sms, bm);
  at::Tensor counters = at::empty({kidx::gemm_counter_ints(plan)}, opts.dtype(at::kInt));
  const int64_t ws_floats = kidx::gemm_workspace_floats(plan);
  at::Tensor workspace = at::empty({ws_floats > 0 ? ws_floats : 1}, opts.dtype(at::kFloat));
  na.zero_ptr = ptr<int>(counters);
  na.zero_n = kidx::gemm_counter_ints(plan);
  check_cuda(kidx::launch_norm_backward(na, norm_blocks, stream), "norm_backward");

  kidx::GemmArgs ga;
  ga.g = ptr<const __nv_bfloat16>(g);
  ga.x = ptr<const __nv_bfloat16>(hidden_states);
  ga.wq = ptr<const __nv_bfloat16>(q_weight);
  ga.wk = ptr<const __nv_bfloat16>(k_weight);
  ga.wv = ptr<const __nv_bfloat16>(v_weight);
  ga.dx = ptr<__nv_bfloat16>(grad_hidden);
  ga.dwq = ptr<__nv_bfloat16>(grad_q_weight);
  ga.dwk = ptr<__nv_bfloat16>(grad_k_weight);
  ga.dwv = ptr<__nv_bfloat16>(grad_v_weight);
  ga.workspace = ptr<float>(workspace);
  ga.counters = ptr<int>(counters);
  ga.norm_partials = ptr<const float>(partials);
  ga.norm_parts = norm_blocks;
  ga.dq_norm = ptr<float>(grad_q_norm_weight);
  ga.dk_norm = ptr<float>(grad_k_norm_weight);
  if (gemm_timeline) {
    *gemm_timeline = at::zeros({plan.grid, kidx::kTimelineSlots}, opts.dtype(at::kLong));
    ga.timeline = reinterpret_cast<unsigned long long*>(gemm_timeline->data_ptr());
  }
  static const bool pdl = std::getenv("KERNELINDEX_NO_PDL") == nullptr;
  static const int spin = std::getenv("KERNELINDEX_SPIN_WAIT") != nullptr ? 1 : 0;
  ga.spin = spin;
  check_cuda(kidx::launch_gemm(ga, plan, stream, pdl), "qkv_gemm");
}

std::vector<at::Tensor> forward(const at::Tensor& grad_query, const at::Tensor& grad_key,
                                const at::Tensor& grad_value, const at::Tensor& hidden_states,
                                const at::Tensor& q_weight, const at::Tensor& k_weight,
                                const at::Tensor& v_weight, const at::Tensor& q_norm_weight,
                                const at::Tensor& k_norm_weight, const at::Tensor& q_rstd,
                                const at::Tensor& k_rstd, const at::Tensor& q_normed,
                                const at::Tensor& k_normed, int64_t mode) {
  auto opts = hidden_states.options();
  at::Tensor dx = at::empty_like(hidden_states);
  at::Tensor dw = at::empty({kGCols, kHidden}, opts);
  at::Tensor dwq = dw.narrow(0, 0, 1024), dwk = dw.narrow(0, 1024, 256), dwv = dw.narrow(0, 1280, 256);
  at::Tensor dqn = at::empty({256}, opts.dtype(at::kFloat));
  at::Tensor dkn = at::empty({256}, opts.dtype(at::kFloat));
  run(grad_query, grad_key, grad_value, hidden_states, q_weight, k_weight, v_weight, q_norm_weight,
      k_norm_weight, q_rstd, k_rstd, q_normed, k_normed, dx, dwq, dwk, dwv, dqn, dkn, mode);
  return {dx, dwq, dwk, dwv, dqn, dkn};
}

void forward_out(const at::Tensor& grad_query, const at::Tensor& grad_key,
                 const at::Tensor& grad_value, const at::Tensor& hidden_states,
                 const at::Tensor& q_weight, const at::Tensor& k_weight, const at::Tensor& v_weight,
                 const at::Tensor& q_norm_weight, const at::Tensor& k_norm_weight,
                 const at::Tensor& q_rstd, const at::Tensor& k_rstd, const at::Tensor& q_normed,
                 const at::Tensor& k_normed, const at::Tensor& grad_hidden,
                 const at::Tensor& grad_q_weight, const at::Tensor& grad_k_weight,
                 const at::Tensor& grad_v_weight, const at::Tensor& grad_q_norm_weight,
                 const at::Tensor& grad_k_norm_weight, int64_t mode) {
  run(grad_query, grad_key, grad_value, hidden_states, q_weight, k_weight, v_weight, q_norm_weight,
      k_norm_weight, q_rstd, k_rstd, q_normed, k_normed, grad_hidden, grad_q_weight, grad_k_weight,
      grad_v_weight, grad_q_norm_weight, grad_k_norm_weight, mode);
}

// Debugging: one call with globaltimer timelines; returns (outputs..., norm [blocks,2], gemm [grid,48]).
std::vector<at::Tensor> timeline(const at::Tensor& grad_query, const at::Tensor& grad_key,
                                 const at::Tensor& grad_value, const at::Tensor& hidden_states,
                                 const at::Tensor& q_weight, const at::Tensor& k_weight,
                                 const at::Tensor& v_weight, const at::Tensor& q_norm_weight,
                                 const at::Tensor& k_norm_weight, const at::Tensor& q_rstd,
                                 const at::Tensor& k_rstd, const at::Tensor& q_normed,
                                 const at::Tensor& k_normed, int64_t mode) {
  auto opts = hidden_states.options();
  at::Tensor dx = at::empty_like(hidden_states);
  at::Tensor dw = at::empty({kGCols, kHidden}, opts);
  at::Tensor dqn = at::empty({256}, opts.dtype(at::kFloat));
  at::Tensor dkn = at::empty({256}, opts.dtype(at::kFloat));
  at::Tensor ntl, gtl;
  run(grad_query, grad_key, grad_value, hidden_states, q_weight, k_weight, v_weight, q_norm_weight,
      k_norm_weight, q_rstd, k_rstd, q_normed, k_normed, dx, dw.narrow(0, 0, 1024),
      dw.narrow(0, 1024, 256), dw.narrow(0, 1280, 256), dqn, dkn, mode, &ntl, &gtl);
  return {dx, dw, dqn, dkn, ntl, gtl};
}

std::map<std::string, double> plan(int64_t tokens, int64_t num_sms, int64_t bm) {
  const kidx::GemmPlan p = kidx::make_gemm_plan(static_cast<int>(tokens), static_cast<int>(num_sms),
                                                static_cast<int>(bm));
  return {{"bm", p.bm}, {"mx", p.mx}, {"sx", p.sx}, {"kbw", p.kbw}, {"sw", p.sw},
          {"nwt", p.nwt}, {"nxt", p.nxt}, {"w_first", p.w_first}, {"grid", p.grid},
          {"predicted_us", p.predicted_us},
          {"norm_blocks", kidx::norm_grid_size(static_cast<int>(tokens), static_cast<int>(num_sms))}};
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "KernelIndex: Gemma-3 Q/K/V projection backward with Q/K RMSNorm (sm_90a)";
  m.def("forward", &forward, "returns (grad_hidden_states, grad_q_weight, grad_k_weight, "
                             "grad_v_weight, grad_q_norm_weight, grad_k_norm_weight)");
  m.def("forward_out", &forward_out, "destination-passing variant");
  m.def("plan", &plan, "the GEMM plan for a token count (debugging)");
  m.def("timeline", &timeline, "one call with globaltimer timelines (debugging)");
}
