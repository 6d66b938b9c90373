// ext-portable: the Q/K RMSNorm backward of 051 for any GPU from sm_80 up (no wgmma, no TMA, no
// clusters: built for sm_90a, sm_100a and sm_120 alike); the two GEMMs are cuBLAS's, called by
// ext_portable.py through torch with destination-passing outputs.
//
// portable_norm_kernel writes G = [GQ | GK | GV] as [T, 1536] bf16 (one row per token, so dX = G·W
// is a single GEMM), for a token range [t0, t1) so that the caller can pipeline token chunks with
// the GEMMs. Each warp takes a contiguous run of tokens; a token is six 512-byte rows (four Q
// heads, K, V) that sit apart in memory. The warp streams them through a ring of shared-memory
// slots, one token (5.6 KiB) per slot, filled with cp.async: the next tokens are in flight while
// one is computed, and those bytes cost no registers (ring depth: the block configs below).
// (token → batch, position) is advanced token by token, never divided in the loop. Per lane: 8 of
// the 256 dims of every row.
//
// grad_norm_weight: each block writes its Σ g·x̂ (Q dims 0..255, K dims 256..511) to a partials
// row; finalize_kernel sums the rows in a fixed order (deterministic), after dW, beside the other
// stream's dX.
//
// Host API (extern "C", for ctypes): kidxp_norm_shape, kidxp_norm, kidxp_finalize, kidxp_finish
// (finalize + dW rounded from fp32), kidxp_error.
#include "common/launch.cuh"
#include "common/ptx.cuh"

namespace kidxp {
namespace {

using namespace kidx;

constexpr int kD = 256;             // head dim
constexpr int kRowU4 = kD / 8;      // 32 uint4 per bf16 row
// slot: g rows (4 Q heads + K), x̂ rows (same), the V row, then 5 rstd (padded to 16 bytes)
constexpr int kSlotBytes = 11 * 512 + 32;
// Block shapes (warps per block, slots per warp = tokens in flight + 1), chosen per call: with
// few tokens per warp the run is a chain of DRAM latencies, so deeper rings pay at large T.
//   config 0: 8 warps × 2 slots (90.6 KiB: fits sm_120's 99 KiB per block; 2 blocks per SM on
//             sm_90 / sm_100: 16 warps, 16 tokens in flight per SM)
//   config 1: 6 warps × 3 slots (102 KiB; 2 blocks: 12 warps, 24 tokens in flight per SM)
//   config 2: 4 warps × 4 slots (90.6 KiB; 2 blocks: 8 warps, 24 tokens in flight per SM)
template <int W, int S>
struct Shape {
  static constexpr int kWarps = W, kStages = S, kThreads = W * 32;
  static constexpr int kWarpBytes = S * kSlotBytes;
  static constexpr int kSmemBytes = W * kWarpBytes;
  static_assert(2 * kD * 4 <= kWarpBytes, "a warp's sums are parked in its own ring after the loop");
};

struct NormArgs {
  const uint4* gq;   // grad_query [B,4,S,256]
  const uint4* xq;   // q_normed
  const float* rq;   // q_rstd [B,4,S]
  const uint4* gk;   // grad_key [B,1,S,256]
  const uint4* xk;   // k_normed
  const float* rk;   // k_rstd [B,1,S]
  const uint4* gv;   // grad_value [B,1,S,256]: already GV [T,256]
  const uint4* wq;   // q_norm_weight [256] bf16
  const uint4* wk;   // k_norm_weight
  uint4* g;          // G [T,1536] out
  float* partials;   // [grid,512] out, this launch's rows
  int seq, t0, t1, per_warp;
};

// Token t of batch b, position s: its six source rows and their rstd, into one slot (lane's 16
// bytes of each row; lanes 0..4 copy the rstd). Always one commit group, empty past the run.
__device__ __forceinline__ void fetch(const NormArgs& a, int t, int b, int s, bool live, int lane, uint32_t slot) {
  if (live) {
    const int64_t qrow = static_cast<int64_t>(b) * 4 * a.seq + s;  // head 0; head h adds h·S
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const int64_t r = (qrow + static_cast<int64_t>(h) * a.seq) * kRowU4 + lane;
      cp_async16(slot + h * 512 + lane * 16, a.gq + r);
      cp_async16(slot + (5 + h) * 512 + lane * 16, a.xq + r);
    }
    const int64_t kr = static_cast<int64_t>(t) * kRowU4 + lane;  // K and V: one head, row = token
    cp_async16(slot + 4 * 512 + lane * 16, a.gk + kr);
    cp_async16(slot + 9 * 512 + lane * 16, a.xk + kr);
    cp_async16(slot + 10 * 512 + lane * 16, a.gv + kr);
    if (lane < 4) cp_async4(slot + 11 * 512 + lane * 4, a.rq + qrow + static_cast<int64_t>(lane) * a.seq);
    if (lane == 4) cp_async4(slot + 11 * 512 + 16, a.rk + t);
  }
  cp_async_commit();
}

template <int kWarps, int kStages>
__global__ void __launch_bounds__(kWarps * 32, 2) portable_norm_kernel(NormArgs a) {
  constexpr int kThreads = kWarps * 32;
  constexpr int kWarpBytes = Shape<kWarps, kStages>::kWarpBytes;
  extern __shared__ __align__(16) uint8_t smem[];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  uint8_t* ring = smem + warp * kWarpBytes;
  const uint32_t ring_addr = smem_u32(ring);

  // this lane's 8 norm weights, packed (unpacked per row: 8 registers, not 16, stay live)
  const uint4 wq = __ldg(a.wq + lane), wk = __ldg(a.wk + lane);
  float accq[8], acck[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) accq[i] = acck[i] = 0.f;

  const int64_t first = a.t0 + static_cast<int64_t>(blockIdx.x * kWarps + warp) * a.per_warp;
  const int lo = static_cast<int>(first < a.t1 ? first : a.t1);
  const int hi = static_cast<int>(first + a.per_warp < a.t1 ? first + a.per_warp : a.t1);
  // (b, s) of the next token to fetch, advanced one token at a time. Slots hold tokens
  // lo, lo + 1, ... in turn; kStages - 1 of them are in flight ahead of the one computed.
  int fb = lo / a.seq, fs = lo - fb * a.seq;
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    fetch(a, lo + i, fb, fs, lo + i < hi, lane, ring_addr + i * kSlotBytes);
    if (++fs == a.seq) fs = 0, ++fb;
  }
  int stage = 0;
  for (int t = lo; t < hi; ++t) {
    // refill the slot consumed last step with token t + kStages - 1
    __syncwarp();
    const int refill = stage == 0 ? kStages - 1 : stage - 1;
    fetch(a, t + kStages - 1, fb, fs, t + kStages - 1 < hi, lane, ring_addr + refill * kSlotBytes);
    if (++fs == a.seq) fs = 0, ++fb;
    cp_async_wait<kStages - 1>();  // token t's group has landed
    __syncwarp();      // the rstd words came from lanes 0..4
    const uint8_t* slot = ring + stage * kSlotBytes;
    const float* rstd = reinterpret_cast<const float*>(slot + 11 * 512);
    // Pass 1: Σ g·x̂, ĝ (kept packed) and ĝ·x̂ per row; pass 2 reads x̂ from the slot again
    // (cheaper than keeping 40 floats live across the reductions).
    float dot[5];
    uint4 gh[5];  // ĝ = bf16(g·(1+w)), packed
#pragma unroll
    for (int r = 0; r < 5; ++r) {
      float g[8], x[8], ghf[8];
      unpack8(*reinterpret_cast<const uint4*>(slot + r * 512 + lane * 16), g);
      unpack8(*reinterpret_cast<const uint4*>(slot + (5 + r) * 512 + lane * 16), x);
      float w1[8];
      unpack8(r < 4 ? wq : wk, w1);
#pragma unroll
      for (int j = 0; j < 8; ++j) w1[j] += 1.0f;
      float* acc = r < 4 ? accq : acck;
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j] = fmaf(g[j], x[j], acc[j]);
      gh[r].x = pack_bf16x2(g[0] * w1[0], g[1] * w1[1]);
      gh[r].y = pack_bf16x2(g[2] * w1[2], g[3] * w1[3]);
      gh[r].z = pack_bf16x2(g[4] * w1[4], g[5] * w1[5]);
      gh[r].w = pack_bf16x2(g[6] * w1[6], g[7] * w1[7]);
      unpack8(gh[r], ghf);
      float d0 = 0.f, d1 = 0.f;
#pragma unroll
      for (int j = 0; j < 8; j += 2) {
        d0 = fmaf(ghf[j], x[j], d0);
        d1 = fmaf(ghf[j + 1], x[j + 1], d1);
      }
      dot[r] = d0 + d1;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
#pragma unroll
      for (int r = 0; r < 5; ++r) dot[r] += __shfl_xor_sync(0xffffffffu, dot[r], o);
    }
    uint4* out = a.g + static_cast<int64_t>(t) * 6 * kRowU4 + lane;  // G row: 192 uint4
#pragma unroll
    for (int r = 0; r < 5; ++r) {
      // g_in = rstd·(ĝ − m·x̂), m = Σ ĝ·x̂ / 256
      const float rs = rstd[r < 4 ? r : 4];
      const float c = rs * dot[r] * (1.0f / kD);
      float ghf[8], x[8];
      unpack8(gh[r], ghf);
      unpack8(*reinterpret_cast<const uint4*>(slot + (5 + r) * 512 + lane * 16), x);
      uint4 o;
      o.x = pack_bf16x2(fmaf(-c, x[0], rs * ghf[0]), fmaf(-c, x[1], rs * ghf[1]));
      o.y = pack_bf16x2(fmaf(-c, x[2], rs * ghf[2]), fmaf(-c, x[3], rs * ghf[3]));
      o.z = pack_bf16x2(fmaf(-c, x[4], rs * ghf[4]), fmaf(-c, x[5], rs * ghf[5]));
      o.w = pack_bf16x2(fmaf(-c, x[6], rs * ghf[6]), fmaf(-c, x[7], rs * ghf[7]));
      out[r * kRowU4] = o;
    }
    out[5 * kRowU4] = *reinterpret_cast<const uint4*>(slot + 10 * 512 + lane * 16);  // GV as it is
    stage = stage == kStages - 1 ? 0 : stage + 1;
  }
  cp_async_wait<0>();
  __syncwarp();  // the ring is idle now: it holds this warp's sums
  float* mine = reinterpret_cast<float*>(ring);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    mine[lane * 8 + i] = accq[i];
    mine[kD + lane * 8 + i] = acck[i];
  }
  __syncthreads();
  for (int d = threadIdx.x; d < 2 * kD; d += kThreads) {
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += reinterpret_cast<const float*>(smem + w * kWarpBytes)[d];  // fixed order
    a.partials[static_cast<int64_t>(blockIdx.x) * 2 * kD + d] = total;
  }
}

// grad_q_norm_weight / grad_k_norm_weight = Σ over the partial rows, in row order. 16 blocks of
// 32 dims × 8 row groups; each group sums every 8th row, then the 8 group sums are added in order.
constexpr int kFinBlocks = 16;
__global__ void __launch_bounds__(256) finalize_kernel(const float* partials, int rows, float* dq, float* dk) {
  __shared__ float part[8][32];
  const int d = blockIdx.x * 32 + (threadIdx.x & 31);
  const int group = threadIdx.x >> 5;
  float sum = 0.f;
  for (int r = group; r < rows; r += 8) sum += partials[static_cast<int64_t>(r) * 2 * kD + d];
  part[group][threadIdx.x & 31] = sum;
  __syncthreads();
  if (group == 0) {
    float total = 0.f;
#pragma unroll
    for (int i = 0; i < 8; ++i) total += part[i][threadIdx.x];
    if (d < kD) dq[d] = total;
    else dk[d - kD] = total;
  }
}

// dW = Gᵀ·X is computed by cuBLAS with an fp32 output (a bf16 output lets the library reduce in
// bf16: max|err|/rms 0.1 at T = 16385 on the H200, issue 28) and rounded once here, 8 values per
// thread, into the three weight gradients (rows 0..1023 Q, 1024..1279 K, 1280..1535 V).
constexpr int kDwElems = 1536 * 640;
constexpr int kRoundBlocks = kDwElems / 8 / 256;  // 480
static_assert(kDwElems % (8 * 256) == 0, "whole blocks");
struct RoundArgs {
  const float4* dw32;  // [1536,640] fp32
  uint4* dwq;          // [1024,640] bf16
  uint4* dwk;          // [256,640]
  uint4* dwv;          // [256,640]
};
__device__ __forceinline__ void round_dw(const RoundArgs& r, int i) {  // i: 8-value chunk
  const float4 a = __ldcs(r.dw32 + 2 * i), b = __ldcs(r.dw32 + 2 * i + 1);
  uint4 o;
  o.x = pack_bf16x2(a.x, a.y);
  o.y = pack_bf16x2(a.z, a.w);
  o.z = pack_bf16x2(b.x, b.y);
  o.w = pack_bf16x2(b.z, b.w);
  constexpr int kQ = 1024 * 640 / 8, kK = 256 * 640 / 8;
  if (i < kQ) r.dwq[i] = o;
  else if (i < kQ + kK) r.dwk[i - kQ] = o;
  else r.dwv[i - kQ - kK] = o;
}

// One launch after dW: blocks 0..kFinBlocks-1 sum the norm-weight partials, the rest round dW.
__global__ void __launch_bounds__(256) finish_kernel(const float* partials, int rows, float* dq, float* dk, RoundArgs r) {
  if (blockIdx.x >= kFinBlocks) {
    round_dw(r, (blockIdx.x - kFinBlocks) * 256 + threadIdx.x);
    return;
  }
  __shared__ float part[8][32];
  const int d = blockIdx.x * 32 + (threadIdx.x & 31);
  const int group = threadIdx.x >> 5;
  float sum = 0.f;
  for (int q = group; q < rows; q += 8) sum += partials[static_cast<int64_t>(q) * 2 * kD + d];
  part[group][threadIdx.x & 31] = sum;
  __syncthreads();
  if (group == 0) {
    float total = 0.f;
#pragma unroll
    for (int i = 0; i < 8; ++i) total += part[i][threadIdx.x];
    if (d < kD) dq[d] = total;
    else dk[d - kD] = total;
  }
}

constexpr int kConfigs = 3;
constexpr int kConfigWarps[kConfigs] = {8, 6, 4};
using Kernel = void (*)(NormArgs);
constexpr Kernel kKernels[kConfigs] = {portable_norm_kernel<8, 2>, portable_norm_kernel<6, 3>, portable_norm_kernel<4, 4>};
constexpr int kConfigSmem[kConfigs] = {Shape<8, 2>::kSmemBytes, Shape<6, 3>::kSmemBytes, Shape<4, 4>::kSmemBytes};

// Blocks per SM of a config that fit here (shared memory, registers), per device, asked once;
// 0 when none fits (config 1 on sm_120).
int blocks_per_sm(int config) {
  static int cached[64][kConfigs] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 0;
  if (cached[dev][config] == 0) {
    int n = 0;
    if (allow_dynamic_smem(reinterpret_cast<const void*>(kKernels[config]), kConfigSmem[config]) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kKernels[config], kConfigWarps[config] * 32,
                                                      kConfigSmem[config]) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error of a config that does not fit
      n = 0;
    }
    cached[dev][config] = n > 0 ? n : -1;
  }
  return cached[dev][config] > 0 ? cached[dev][config] : 0;
}

}  // namespace
}  // namespace kidxp

extern "C" {

// Grid of a norm launch over n tokens on num_sms SMs with block config `config`: out[0] = tokens
// per warp, out[1] = norm blocks (the tokens spread evenly over every warp of every resident
// block). Returns 0, or -2 for bad arguments / a config that fits no block on this device.
int kidxp_norm_shape(long long n, int num_sms, int config, int* out) {
  using namespace kidxp;
  if (config < 0 || config >= kConfigs) return kErrArguments;
  const int per_sm = blocks_per_sm(config);
  if (n < 1 || n >= (1LL << 28) || num_sms < 1 || per_sm < 1) return kErrArguments;
  const int warps_per_block = kConfigWarps[config];
  const long long warps = static_cast<long long>(num_sms) * per_sm * warps_per_block;
  const long long per_warp = (n + warps - 1) / warps;
  out[0] = static_cast<int>(per_warp);
  out[1] = static_cast<int>((n + per_warp * warps_per_block - 1) / (per_warp * warps_per_block));
  return 0;
}

// One norm launch over tokens [t0, t1). p: grad_query, grad_key, grad_value, q_normed, k_normed,
// q_rstd, k_rstd, q_norm_weight, k_norm_weight, G, partials (this launch's first row). Returns a cudaError_t value, or -2 for bad arguments.
int kidxp_norm(const unsigned long long* p, int seq, int t0, int t1, int num_sms, int config, void* stream) {
  using namespace kidxp;
  int shape[2];
  if (seq < 1 || t0 < 0 || t1 <= t0 || kidxp_norm_shape(t1 - t0, num_sms, config, shape) != 0) return kErrArguments;
  NormArgs a;
  a.gq = reinterpret_cast<const uint4*>(p[0]);
  a.gk = reinterpret_cast<const uint4*>(p[1]);
  a.gv = reinterpret_cast<const uint4*>(p[2]);
  a.xq = reinterpret_cast<const uint4*>(p[3]);
  a.xk = reinterpret_cast<const uint4*>(p[4]);
  a.rq = reinterpret_cast<const float*>(p[5]);
  a.rk = reinterpret_cast<const float*>(p[6]);
  a.wq = reinterpret_cast<const uint4*>(p[7]);
  a.wk = reinterpret_cast<const uint4*>(p[8]);
  a.g = reinterpret_cast<uint4*>(p[9]);
  a.partials = reinterpret_cast<float*>(p[10]);
  a.seq = seq;
  a.t0 = t0;
  a.t1 = t1;
  a.per_warp = shape[0];
  kKernels[config]<<<shape[1], kConfigWarps[config] * 32, kConfigSmem[config], static_cast<cudaStream_t>(stream)>>>(a);
  return static_cast<int>(launched(cudaSuccess));
}

// grad_q_norm_weight (dq) and grad_k_norm_weight (dk) from `rows` partial rows.
int kidxp_finalize(const float* partials, int rows, float* dq, float* dk, void* stream) {
  using namespace kidxp;
  if (rows < 1) return kErrArguments;
  finalize_kernel<<<kFinBlocks, 256, 0, static_cast<cudaStream_t>(stream)>>>(partials, rows, dq, dk);
  return static_cast<int>(launched(cudaSuccess));
}

// The finalize above, and dW (fp32 [1536,640], as cuBLAS wrote it) rounded once into the three
// bf16 weight gradients, in one launch.
int kidxp_finish(const float* partials, int rows, float* dq, float* dk, const float* dw32, void* dwq, void* dwk,
                 void* dwv, void* stream) {
  using namespace kidxp;
  if (rows < 1) return kErrArguments;
  const RoundArgs r{reinterpret_cast<const float4*>(dw32), static_cast<uint4*>(dwq), static_cast<uint4*>(dwk),
                    static_cast<uint4*>(dwv)};
  finish_kernel<<<kFinBlocks + kRoundBlocks, 256, 0, static_cast<cudaStream_t>(stream)>>>(partials, rows, dq, dk, r);
  return static_cast<int>(launched(cudaSuccess));
}

const char* kidxp_error(int code) { return kidx::error_string(code); }

}  // extern "C"
