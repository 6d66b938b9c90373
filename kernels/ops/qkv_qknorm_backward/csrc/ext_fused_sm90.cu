// ext-fused (issue 28), sm_90a: the Q/K norm backward inside the GEMMs' operand stage, so that
// G = [GQ|GK|GV] is never written to memory.
//
// The norm is local to one (token, head) row of 256: gq = bf16(rstd·(ĝ − m·x̂)), ĝ = bf16(g·(1+w)),
// m = mean(ĝ·x̂). Given the row's scalar m, every element of G is a pointwise function of g, x̂,
// w[d], rstd and m. So:
//   1. stats_kernel streams the Q and K rows once (grad_q/q_normed, grad_k/k_normed: 5 KiB per
//      token) and writes m per row (20 bytes per token) and per-block Σ g·x̂ partials;
//   2. fused_gemm_kernel (cluster_gemm_sm90.cu's design, 128-row tiles) computes
//        dX [T,640]    = G·[Wq;Wk;Wv]   (A = G rows: tokens × 64 columns of one head)
//        dW [1536,640] = Gᵀ·X           (A = Gᵀ: 128 columns of one head × 64 tokens)
//      where the producer's TMA brings the g and x̂ boxes of a Q/K k-block (3-D tensor maps over
//      [B·H, S, 256], so a tile never crosses a batch: rows past S are zero-filled and clipped),
//      and a transform warpgroup turns the g box into the G box in place in shared memory (it
//      knows each element's (head, d) from its swizzled position) before the wgmma warpgroups
//      read it. V's k-blocks are grad_value as it is. Tiles run over (batch, position) blocks.
//   Split-K across a cluster and the DSMEM reduction, the bf16 staging + TMA store epilogue and
//   the norm-weight finalize are cluster_gemm_sm90.cu's. Launched with programmatic dependent
//   launch after stats_kernel: the TMA loads of inputs start at once; only the transform (m)
//   and the finalize (partials) wait for the stats kernel.
//
// Warp roles (512 threads): warp 0 TMA producer; warps 1-3 norm-weight finalize; warpgroup 1
// the transform; warpgroups 2-3 wgmma consumers (64 rows each, m64n128k16).
// The 9th session's 128×256 variant (mode w256, `wide_gemm_kernel`) was deleted in the 10th after
// its per-stage timeline (lab/qkv_qknorm_backward/LOG.md; its code is in git at 2a2f293).
// Host API (extern "C", ctypes): kidxf_plan, kidxf_launch, kidxf_error.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "common/epilogue.cuh"
#include "common/launch.cuh"
#include "common/pipeline.cuh"
#include "common/ptx.cuh"
#include "common/sm90.cuh"
#include "common/tensor_map.cuh"

namespace kidxf {
namespace {

using namespace kidx;

constexpr int kHidden = 640;
constexpr int kD = 256;
constexpr int kQK = 1280;
constexpr int kGCols = 1536;
constexpr int kBN = kTileCols;       // 128
constexpr int kNT = kHidden / kBN;   // 5
constexpr int kBK = 64;
constexpr int kKBX = kGCols / kBK;   // 24 k-blocks of dX
constexpr int kBM = 128;
constexpr int kWM = 64;
constexpr int kThreads = 512;
constexpr int kThreadsT2 = 640;  // kT2: a second transform warpgroup
constexpr int kThreadsRS = 384;  // kRS: no transform warpgroup
constexpr int kStages = 4;
constexpr int kABytes = kBM * kBK * 2;   // 16 KiB: g, then G
constexpr int kXBytes = kBM * kBK * 2;   // 16 KiB: x̂
constexpr int kBBytes = kBK * kBN * 2;   // 16 KiB
constexpr int kStageBytes = kABytes + kXBytes + kBBytes;
constexpr int kRowSlot = 2 * kBM * 4;  // rstd and m of a k-block's (up to) 128 rows, fp32
constexpr int kSmemBytes = kStages * kStageBytes + 1024 + 512 + 2 * kD * 4 + 2 * kStages * kRowSlot + 2 * kD * 2;
constexpr int kPrefetch = kStages - 1;  // k-blocks of rstd/m in flight ahead of the transform
// Variants (flags bits 1-2; the default is kFast): kFast takes rstd and m of each k-block's rows
// from a shared-memory ring filled by cp.async kPrefetch k-blocks ahead; kV1 is the first version
// (each transform thread loads them from global memory after the stage's wait, on the critical
// path); kNoTransform is a diagnostic (timing only, wrong results): the transform warpgroup only
// passes the stages on, so the pipeline runs with the same bytes and no transform work; kNoX is
// kNoTransform without the x̂ boxes (the producer skips them): the bytes of a plain GEMM reading G.
// kFastDiag is kFast with parts of the transform left out by Params::diag (timing only). kFast
// makes ĝ = bf16(g·(1+w)) with one bf16x2 FMA (g + g·w, rounded once: the definition's fp32
// product rounded to bf16 whenever that product is exact in fp32, which holds for |w| ≥ 2^-8;
// else within one bf16 ulp) where kFastF32 (call 2's kFast) computes it in fp32 and rounds with
// a conversion (16 per clock per SM: the transform's bottleneck, call 3).
// kConsumer: each consumer warpgroup transforms the box its own wgmma reads (the same arithmetic
// as kFast) while its previous k-block's wgmma runs; the transform warpgroup only fills the
// rstd/m ring (slot = stage, refilled once the consumers release the stage) and arrives `ready`.
// kT2: kFast with two transform warpgroups (640 threads), each taking alternate k-blocks (so
// alternate stages) with its own rstd/m ring; setmaxnreg gives the producer warpgroup 48
// registers, the transforms 104 and the consumers 112. An increase draws only on what this CTA's
// own decreases released (launched at 96 × 640), so 48 + 2·104 + 2·112 = 5 · 96 (8th session's
// call 1 asked for more and hung). The 7th session's call 4: the transform's throughput, not its
// latency, held each stage.
// kRS (10th session, flags bit 8): no transform warpgroup and G never in shared memory. Each
// consumer warpgroup builds its A fragments in registers from the g and x̂ boxes (ldmatrix, .trans
// for dW's Gᵀ) and issues wgmma with A from registers, building k-block i + 1's while wgmma i runs;
// each consumer warpgroup brings the rstd and m of its 64 rows (dX) / the k-block's 64 tokens (dW)
// into its own ring by cp.async, kPrefetch k-blocks ahead (as t2's transform warpgroups do). Shared-memory bytes per k-block: 48 KiB in, 32 KiB to the
// fragments, 32 KiB of B to the wgmma = 112 KiB, where t2 moves 144 (LOG.md, 10th session).
enum Variant { kFast = 0, kV1 = 1, kNoTransform = 2, kNoX = 3, kFastDiag = 4, kFastF32 = 5, kConsumer = 6, kT2 = 7, kRS = 8 };
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
// Lab timelines (kStamp kernels only; the shipped ones compile without): per CTA a header of
// kTlHead words (globaltimer at entry, clock64 at entry, SM, local k-blocks | is_w << 16 | tile
// << 17, globaltimer / clock64 when the consumers' mainloop ends and at exit), then kTlPer clock64
// stamps for each of the first kTlMax local k-blocks: the producer before / after its `empty`
// wait, the transform (the warpgroup that takes the k-block) at its iteration's start, after its
// ring barrier, after the `full` wait, after its `ready` arrive, consumer warpgroup 0 before /
// after the `ready` wait and after the wait for the previous k-block's wgmma (its release).
constexpr int kTlHead = 8, kTlMax = 160, kTlPer = 9;
constexpr int kTlWords = kTlHead + kTlMax * kTlPer;
enum StampAt { kSP0, kSP1, kST0, kSTb, kST1, kST2, kSC0, kSC1, kSC2 };
__device__ __forceinline__ uint64_t clock_stamp() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}
template <bool kOn>
__device__ __forceinline__ void stamp(unsigned long long* tl, int i, int at) {
  if (kOn && i >= 0 && i < kTlMax) tl[kTlHead + i * kTlPer + at] = clock_stamp();
}
template <bool kOn>
__device__ __forceinline__ void stamp_head(unsigned long long* tl, int at, bool clock) {
  if (kOn) tl[at] = clock ? clock_stamp() : globaltimer();
}
static_assert(kBM * kBN * 4 <= kStages * kStageBytes, "the partial tile fits in the stages");

// ------------------------------------------------------------------ PTX: 3-D TMA
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
// Four 8×8 bf16 matrices from shared memory into the mma fragment layout (lanes 8j..8j+7 give the
// row addresses of matrix j); .trans delivers them transposed.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&d)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(smem_u32(row))
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&d)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(smem_u32(row))
               : "memory");
}
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, const void* src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(smem_u32(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

// ------------------------------------------------------------------ 1. the row statistics
struct StatsArgs {
  const uint4* gq;  // grad_query [B,4,S,256]
  const uint4* xq;  // q_normed
  const uint4* gk;  // grad_key [B,1,S,256]
  const uint4* xk;  // k_normed
  const uint4* wq;  // q_norm_weight [256] bf16
  const uint4* wk;
  float* m;         // [5T]: Q rows in grad_query's row order, then K rows
  float* partials;  // [grid, 512]: Σ g·x̂ per block (Q dims, then K dims)
  int rows, qrows;  // 5T, 4T
  int per_warp;
};
constexpr int kStatsWarps = 8;
constexpr int kStatsUnroll = 8;
// Two blocks per SM and 8 rows' loads in flight per warp (9th session: 1 block of 8 warps with 4
// rows in flight streamed 42 MB at 1.9 TB/s, 22 µs at T = 8192 under Nsight Compute — a fifth of
// ext-fused's time there, latency-bound; nothing runs beside it).
constexpr int kStatsBlocksPerSm = 2;

// Rows in memory order, a contiguous run per warp, kStatsUnroll rows' loads in flight; lane l
// holds dims 8l..8l+7 of a row. Deterministic: fixed assignment, fixed reduction order.
__global__ void __launch_bounds__(kStatsWarps * 32, kStatsBlocksPerSm) stats_kernel(StatsArgs a) {
  pdl_launch_dependents();  // the GEMM's TMA loads of inputs may start now
  __shared__ float red[kStatsWarps][2 * kD];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float wq[8], wk[8], accq[8], acck[8];
  unpack8(__ldg(a.wq + lane), wq);
  unpack8(__ldg(a.wk + lane), wk);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    wq[i] += 1.f;
    wk[i] += 1.f;
    accq[i] = acck[i] = 0.f;
  }
  const long long r0 = static_cast<long long>(blockIdx.x * kStatsWarps + warp) * a.per_warp;
  const long long r1 = r0 + a.per_warp < a.rows ? r0 + a.per_warp : a.rows;
  for (long long r = r0; r < r1; r += kStatsUnroll) {
    uint4 g[kStatsUnroll], x[kStatsUnroll];
#pragma unroll
    for (int u = 0; u < kStatsUnroll; ++u) {
      const long long row = r + u;
      if (row < r1) {
        const bool q = row < a.qrows;
        const long long off = (q ? row : row - a.qrows) * 32 + lane;
        g[u] = __ldcs((q ? a.gq : a.gk) + off);
        x[u] = __ldcs((q ? a.xq : a.xk) + off);
      }
    }
#pragma unroll
    for (int u = 0; u < kStatsUnroll; ++u) {
      const long long row = r + u;
      if (row >= r1) break;
      const bool q = row < a.qrows;
      float gf[8], xf[8];
      unpack8(g[u], gf);
      unpack8(x[u], xf);
      float dot = 0.f;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float gh = __bfloat162float(__float2bfloat16_rn(gf[i] * (q ? wq[i] : wk[i])));
        dot += gh * xf[i];
        if (q) accq[i] += gf[i] * xf[i];
        else acck[i] += gf[i] * xf[i];
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      if (lane == 0) a.m[row] = dot * (1.f / kD);
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    red[warp][lane * 8 + i] = accq[i];
    red[warp][kD + lane * 8 + i] = acck[i];
  }
  __syncthreads();
  for (int d = threadIdx.x; d < 2 * kD; d += kStatsWarps * 32) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < kStatsWarps; ++w) s += red[w][d];
    a.partials[static_cast<long long>(blockIdx.x) * 2 * kD + d] = s;
  }
}

// ------------------------------------------------------------------ 2. the fused GEMM
struct Maps {
  CUtensorMap gq, xq, gk, xk, gv;  // 3-D [B·H, S, 256] boxes 64×64
  CUtensorMap x, dx;               // 3-D [B, S, 640]
  CUtensorMap wq, wk, wv, dwq, dwk, dwv;  // 2-D
};

struct Params {
  __nv_bfloat16* dx;
  __nv_bfloat16* dwq;
  __nv_bfloat16* dwk;
  __nv_bfloat16* dwv;
  const float* m;          // [5T]
  const float* rq;         // q_rstd [B,4,S]
  const float* rk;         // k_rstd [B,1,S]
  const __nv_bfloat16* nwq;  // q_norm_weight [256]
  const __nv_bfloat16* nwk;
  const float* norm_partials;
  int norm_parts;
  float* dq_norm;
  float* dk_norm;
  int batch, seq, tokens;
  int nsb;                 // ceil(S/128): dX row blocks per batch
  int nkbs;                // ceil(S/64): dW k-blocks per batch
  int kbw;                 // B·nkbs
  int cl, sw, sx, nwt, nxt, ncw, ncx, x_first;
  int diag;                // kFastDiag only: bit 0 no arithmetic, 1 no proxy fence, 2 no shared loads/stores
  int early_loads;         // the norm-weight table behind a named barrier, not the CTA barrier
  unsigned long long* timeline;
};

struct Work {
  int is_w, tile, mt, nt, kb0, kb1, grp_base, grp_idx, grp_size, valid;
};

__device__ __forceinline__ Work decode_work(const Params& p) {
  const int cid = static_cast<int>(blockIdx.x) / p.cl;
  const int rank = static_cast<int>(cluster_ctarank());
  int c = cid;
  int is_w;
  if (p.x_first) {
    is_w = c >= p.ncx;
    if (is_w) c -= p.ncx;
  } else {
    is_w = c < p.ncw;
    if (!is_w) c -= p.ncw;
  }
  Work w;
  const int s = is_w ? p.sw : p.sx;
  w.is_w = is_w;
  w.grp_size = s;
  w.grp_idx = rank % s;
  w.grp_base = rank - w.grp_idx;
  w.tile = c * (p.cl / s) + rank / s;
  w.valid = w.tile < (is_w ? p.nwt : p.nxt);
  const int kbt = is_w ? p.kbw : kKBX;
  w.kb0 = w.grp_idx * kbt / s;
  w.kb1 = (w.grp_idx + 1) * kbt / s;
  w.mt = w.tile / kNT;
  w.nt = w.tile - w.mt * kNT;
  return w;
}

template <int TA>
__device__ __forceinline__ void mma_kblock(float (&acc)[64], uint32_t a_base, uint32_t b_base, bool first) {
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const uint64_t db = make_desc_sw128(b_base + ks * 2048, kBoxBytes, 1024);
    const uint64_t da = TA ? make_desc_sw128(a_base + ks * 2048, kBoxBytes, 1024) : make_desc_sw128(a_base + ks * 32, 16, 1024);
    wgmma_m64n128k16<TA, 1>(acc, da, db, (first && ks == 0) ? 0 : 1);
  }
}

// The consumers' mainloop over k-blocks [kb0, kb1): wait for the transformed stage, wgmma, release
// the previous stage (at most one wgmma group in flight).
template <int TA, bool kStamp, class StageA, class StageB>
__device__ __forceinline__ void mainloop(float (&acc)[64], int kb0, int kb1, uint64_t* ready, uint64_t* empty, int wg,
                                         int lane, StageA sa, StageB sb, unsigned long long* tl, bool stamper) {
  RingPos<kStages> pos;
  int prev = -1;
  for (int kb = kb0; kb < kb1; ++kb) {
    if (stamper) stamp<kStamp>(tl, kb - kb0, kSC0);
    mbar_wait(&ready[pos.stage], pos.phase);
    if (stamper) stamp<kStamp>(tl, kb - kb0, kSC1);
    wgmma_fence();
    mma_kblock<TA>(acc, smem_u32(sa(pos.stage)) + wg * kBoxBytes, smem_u32(sb(pos.stage)), kb == kb0);
    wgmma_commit();
    wgmma_wait<1>();
    if (stamper) stamp<kStamp>(tl, kb - kb0 - 1, kSC2);
    if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
    prev = pos.stage;
    pos.advance();
  }
  wgmma_wait<0>();
  if (stamper) stamp<kStamp>(tl, kb1 - kb0 - 1, kSC2);
}

// grad_{q,k}_norm_weight from the stats kernel's partials (cluster_gemm_sm90.cu's finalize); kT2
// unrolls by 1 so that it fits the producer warpgroup's 48 registers.
template <int kUnroll>
__device__ __forceinline__ void finalize_norm_weight(const Params& p, float* fin, int f) {
  const int per = (2 * kD + gridDim.x - 1) / gridDim.x;
  const int d0 = blockIdx.x * per;
  const int d1 = min(2 * kD, d0 + per);
  const int lane = f & 31;
  const int wq = f >> 5;
  for (int dc = d0; dc < d1; dc += 8) {
    float acc[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] = 0.f;
#pragma unroll kUnroll
    for (int q = f; q < p.norm_parts; q += 96) {
      const float* row = p.norm_partials + static_cast<int64_t>(q) * 2 * kD;
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (dc + j < d1) acc[j] += __ldcg(row + dc + j);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], o);
    if (lane == 0)
#pragma unroll
      for (int j = 0; j < 8; ++j) fin[wq * 8 + j] = acc[j];
    named_barrier_sync(2, 96);
    if (f < 8 && dc + f < d1) {
      const float v = fin[f] + fin[8 + f] + fin[16 + f];
      const int d = dc + f;
      if (d < kD) p.dq_norm[d] = v; else p.dk_norm[d - kD] = v;
    }
    named_barrier_sync(2, 96);
  }
}

// The transform of one 64×64 box in place: g -> G. Box rows are tokens s = s_row0 + r of batch
// b; columns d0 + 8c of head `head` (0..3 Q, 4 K); physical 16-byte chunk p of row r holds
// logical chunk p ^ (r & 7) (128-byte swizzle). Thread t (0..127) takes chunk t & 7 of rows
// (t >> 3) + 16i.
__device__ __forceinline__ void transform_box(uint8_t* gbox, const uint8_t* xbox, const float* wtab, const Params& p,
                                              int b, int s_row0, int head, int d0, int t) {
  const int pch = t & 7;
  const float* wt = wtab + (head < 4 ? 0 : kD) + d0;
  const long long base = head < 4 ? (static_cast<long long>(b) * 4 + head) * p.seq
                                  : static_cast<long long>(b) * p.seq;
  const float* rstd = head < 4 ? p.rq : p.rk;
  const float* mrow = p.m + (head < 4 ? 0 : 4LL * p.tokens);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = (t >> 3) + 16 * i;
    const int s = s_row0 + r;
    if (s >= p.seq) continue;  // zero-filled by TMA, and G is zero there
    const float rs = __ldg(rstd + base + s);
    const float mm = __ldg(mrow + base + s);
    const int off = r * 128 + pch * 16;
    const int c = pch ^ (r & 7);
    float gf[8], xf[8];
    unpack8(*reinterpret_cast<const uint4*>(gbox + off), gf);
    unpack8(*reinterpret_cast<const uint4*>(xbox + off), xf);
    const float4 w0 = *reinterpret_cast<const float4*>(wt + c * 8);
    const float4 w1 = *reinterpret_cast<const float4*>(wt + c * 8 + 4);
    const float w[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
    float o[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float gh = __bfloat162float(__float2bfloat16_rn(gf[k] * w[k]));
      o[k] = rs * (gh - mm * xf[k]);
    }
    uint4 v;
    v.x = pack_bf16x2(o[0], o[1]);
    v.y = pack_bf16x2(o[2], o[3]);
    v.z = pack_bf16x2(o[4], o[5]);
    v.w = pack_bf16x2(o[6], o[7]);
    *reinterpret_cast<uint4*>(gbox + off) = v;
  }
}

// The transform of a k-block's two boxes in place (kFast): box c's rows start at token
// s_row0 + c·row_step, its columns at d0 + c·col_step of head `head`; rstd and m of row j of the
// k-block at rsm[j] and rsm[kBM + j] (shared memory, j = c·row_step + r). Every shared-memory
// load of both boxes is issued before the first store (the stores could alias them in the
// compiler's eyes, which serialized the first version chunk by chunk). Thread t takes physical
// chunk t & 7 of rows (t >> 3) + 16i; r & 7 is the same for its 4 rows, so is its logical chunk.
__device__ __forceinline__ uint32_t hfma2_bf16(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

template <bool kHfma>
__device__ __forceinline__ void transform_kblock(uint8_t* gbox, const uint8_t* xbox, const float* wtab,
                                                 const __nv_bfloat16* wtab16, const float* rsm, int seq, int s_row0,
                                                 int row_step, int head, int d0, int col_step, int t) {
  const int pch = t & 7;
  const int r0 = t >> 3;
  const int c = pch ^ (r0 & 7);
  const float* wt = wtab + (head < 4 ? 0 : kD) + d0 + c * 8;
  const __nv_bfloat16* wt16 = wtab16 + (head < 4 ? 0 : kD) + d0 + c * 8;
  uint4 g[2][4], x[2][4];
  float4 w[2][2];
  uint4 w16[2];
  float rs[2][4], mm[2][4];
#pragma unroll
  for (int bx = 0; bx < 2; ++bx) {
    if (kHfma) {
      w16[bx] = *reinterpret_cast<const uint4*>(wt16 + bx * col_step);
    } else {
      w[bx][0] = *reinterpret_cast<const float4*>(wt + bx * col_step);
      w[bx][1] = *reinterpret_cast<const float4*>(wt + bx * col_step + 4);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = r0 + 16 * i;
      const int off = bx * kBoxBytes + r * 128 + pch * 16;
      g[bx][i] = *reinterpret_cast<const uint4*>(gbox + off);
      x[bx][i] = *reinterpret_cast<const uint4*>(xbox + off);
      rs[bx][i] = rsm[bx * row_step + r];
      mm[bx][i] = rsm[kBM + bx * row_step + r];
    }
  }
#pragma unroll
  for (int bx = 0; bx < 2; ++bx) {
    float wv[8];
    if (!kHfma) {
      wv[0] = w[bx][0].x, wv[1] = w[bx][0].y, wv[2] = w[bx][0].z, wv[3] = w[bx][0].w;
      wv[4] = w[bx][1].x, wv[5] = w[bx][1].y, wv[6] = w[bx][1].z, wv[7] = w[bx][1].w;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = r0 + 16 * i;
      float gf[8], xf[8], o[8];
      if (kHfma) {  // ĝ pairs = g + g·w, one rounding to bf16
        const uint4 gh2 = make_uint4(hfma2_bf16(g[bx][i].x, w16[bx].x, g[bx][i].x), hfma2_bf16(g[bx][i].y, w16[bx].y, g[bx][i].y),
                                     hfma2_bf16(g[bx][i].z, w16[bx].z, g[bx][i].z), hfma2_bf16(g[bx][i].w, w16[bx].w, g[bx][i].w));
        unpack8(gh2, gf);
      } else {
        unpack8(g[bx][i], gf);
#pragma unroll
        for (int k = 0; k < 8; ++k) gf[k] = __bfloat162float(__float2bfloat16_rn(gf[k] * wv[k]));
      }
      unpack8(x[bx][i], xf);
#pragma unroll
      for (int k = 0; k < 8; ++k) o[k] = rs[bx][i] * (gf[k] - mm[bx][i] * xf[k]);
      uint4 v;
      v.x = pack_bf16x2(o[0], o[1]);
      v.y = pack_bf16x2(o[2], o[3]);
      v.z = pack_bf16x2(o[4], o[5]);
      v.w = pack_bf16x2(o[6], o[7]);
      // rows past S: zero-filled by TMA, and G is zero there (their rsm entries are stale)
      if (s_row0 + bx * row_step + r < seq) *reinterpret_cast<uint4*>(gbox + bx * kBoxBytes + r * 128 + pch * 16) = v;
    }
  }
}

// kConsumer: one 64×64 box in place by the 128 threads of the consumer warpgroup that reads it;
// box rows from token s_row0, rstd/m of box row r at rsm[r] / rsm[kBM + r], w (bf16) of the
// box's columns at wt16. Two rows per thread at a time (the accumulators stay live).
__device__ __forceinline__ void transform_own_box(uint8_t* gbox, const uint8_t* xbox, const __nv_bfloat16* wt16,
                                                  const float* rsm, int seq, int s_row0, int t) {
  const int pch = t & 7;
  const int r0 = t >> 3;
  const uint4 w16 = *reinterpret_cast<const uint4*>(wt16 + (pch ^ (r0 & 7)) * 8);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    uint4 g[2], x[2];
    float rs[2], mm[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int r = r0 + 16 * (2 * h + k);
      g[k] = *reinterpret_cast<const uint4*>(gbox + r * 128 + pch * 16);
      x[k] = *reinterpret_cast<const uint4*>(xbox + r * 128 + pch * 16);
      rs[k] = rsm[r];
      mm[k] = rsm[kBM + r];
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int r = r0 + 16 * (2 * h + k);
      float gf[8], xf[8], o[8];
      unpack8(make_uint4(hfma2_bf16(g[k].x, w16.x, g[k].x), hfma2_bf16(g[k].y, w16.y, g[k].y),
                         hfma2_bf16(g[k].z, w16.z, g[k].z), hfma2_bf16(g[k].w, w16.w, g[k].w)),
              gf);
      unpack8(x[k], xf);
#pragma unroll
      for (int e = 0; e < 8; ++e) o[e] = rs[k] * (gf[e] - mm[k] * xf[e]);
      if (s_row0 + r < seq)
        *reinterpret_cast<uint4*>(gbox + r * 128 + pch * 16) =
            make_uint4(pack_bf16x2(o[0], o[1]), pack_bf16x2(o[2], o[3]), pack_bf16x2(o[4], o[5]), pack_bf16x2(o[6], o[7]));
    }
  }
}

// kFastDiag bit 0: the transform's shared-memory traffic without its arithmetic (g and x̂ read,
// g + x̂ written back; wrong results, timing only).
__device__ __forceinline__ void copy_kblock(uint8_t* gbox, int t) {
  const uint8_t* xbox = gbox + kABytes;
  uint4 g[8], x[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int off = (i >> 2) * kBoxBytes + ((t >> 3) + 16 * (i & 3)) * 128 + (t & 7) * 16;
    g[i] = *reinterpret_cast<const uint4*>(gbox + off);
    x[i] = *reinterpret_cast<const uint4*>(xbox + off);
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int off = (i >> 2) * kBoxBytes + ((t >> 3) + 16 * (i & 3)) * 128 + (t & 7) * 16;
    *reinterpret_cast<uint4*>(gbox + off) = make_uint4(g[i].x + x[i].x, g[i].y + x[i].y, g[i].z + x[i].z, g[i].w + x[i].w);
  }
}

__device__ __forceinline__ __nv_bfloat16* dw_row(const Params& p, int r) {
  if (r < 1024) return p.dwq + static_cast<int64_t>(r) * kHidden;
  if (r < kQK) return p.dwk + static_cast<int64_t>(r - 1024) * kHidden;
  return p.dwv + static_cast<int64_t>(r - kQK) * kHidden;
}

template <int kVariant, bool kStamp = false>
__global__ void __launch_bounds__(kVariant == kT2 ? kThreadsT2 : kVariant == kRS ? kThreadsRS : kThreads, 1) fused_gemm_kernel(const __grid_constant__ Maps maps, const Params p) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* stage_base = smem;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kStages * kStageBytes);
  uint64_t* ready = full + kStages;
  uint64_t* empty = ready + kStages;
  float* fin = reinterpret_cast<float*>(empty + kStages);  // [3][8]
  float* wtab = reinterpret_cast<float*>(smem + kStages * kStageBytes + 512);  // [2][256]: 1 + w
  float* rsm_ring = wtab + 2 * kD;  // [2][kStages][2][kBM]: rstd, m of a k-block's rows (kFast; kT2 a ring per transform WG)
  __nv_bfloat16* wtab16 = reinterpret_cast<__nv_bfloat16*>(rsm_ring + 2 * kStages * 2 * kBM);  // [2][256]: w
  uint8_t* red = smem;
  auto sa = [&](int st) { return stage_base + st * kStageBytes; };
  auto sx = [&](int st) { return stage_base + st * kStageBytes + kABytes; };
  auto sb = [&](int st) { return stage_base + st * kStageBytes + kABytes + kXBytes; };

  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const Work w = decode_work(p);
  const int nkb = w.valid ? w.kb1 - w.kb0 : 0;
  const int m0 = w.mt * kBM;           // dW: G column of the tile
  const int xb = w.mt / p.nsb;         // dX: batch of the tile
  const int xs0 = (w.mt - xb * p.nsb) * kBM;  // dX: first position
  unsigned long long* tl = kStamp ? p.timeline + static_cast<int64_t>(blockIdx.x) * kTlWords : nullptr;
  if (threadIdx.x == 0) {
    stamp_head<kStamp>(tl, 0, false);
    stamp_head<kStamp>(tl, 1, true);
    if (kStamp) tl[2] = smid(), tl[3] = nkb | w.is_w << 16 | w.tile << 17;
  }

  // the head (0..3 Q, 4 K, 5 V) and first column of A's k-block kb (dX) / of the tile (dW)
  auto kb_head = [&](int kb) { return w.is_w ? (m0 >> 8) : (kb >> 2); };
  // the TMA loads of k-block kb into `stage` (thread 0, the producer, once the stage is free)
  auto produce = [&](int kb, int stage) {
    const int head = kb_head(kb);
    const bool normed = head < 5 && kVariant != kNoX;
    mbar_expect_tx(&full[stage], (normed ? kABytes + kXBytes : kABytes) + kBBytes);
    uint8_t* a = sa(stage);
    uint8_t* x = sx(stage);
    uint8_t* bt = sb(stage);
    uint64_t* bar = &full[stage];
    if (w.is_w) {
      const int b = kb / p.nkbs;
      const int s0 = (kb - b * p.nkbs) * kBK;
      const CUtensorMap* gm = head < 4 ? &maps.gq : (head == 4 ? &maps.gk : &maps.gv);
      const CUtensorMap* xm = head < 4 ? &maps.xq : &maps.xk;
      const int z = head < 4 ? b * 4 + head : b;
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int d0 = (m0 + c * 64) & 255;
        tma_load_3d(a + c * kBoxBytes, gm, bar, d0, s0, z);
        if (normed) tma_load_3d(x + c * kBoxBytes, xm, bar, d0, s0, z);
      }
#pragma unroll
      for (int c = 0; c < 2; ++c) tma_load_3d(bt + c * kBoxBytes, &maps.x, bar, w.nt * kBN + c * 64, s0, b);
    } else {
      const CUtensorMap* gm = head < 4 ? &maps.gq : (head == 4 ? &maps.gk : &maps.gv);
      const CUtensorMap* xm = head < 4 ? &maps.xq : &maps.xk;
      const int z = head < 4 ? xb * 4 + head : xb;
      const int d0 = (kb & 3) * kBK;
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        tma_load_3d(a + c * kBoxBytes, gm, bar, d0, xs0 + c * 64, z);
        if (normed) tma_load_3d(x + c * kBoxBytes, xm, bar, d0, xs0 + c * 64, z);
      }
      const CUtensorMap* wmap = kb < 16 ? &maps.wq : (kb < 20 ? &maps.wk : &maps.wv);
      const int wrow = (kb < 16 ? kb : (kb < 20 ? kb - 16 : kb - 20)) * kBK;
#pragma unroll
      for (int c = 0; c < 2; ++c) tma_load_2d(bt + c * kBoxBytes, wmap, bar, w.nt * kBN + c * 64, wrow);
    }
  };

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&ready[s], kVariant == kConsumer ? 128 : 4);  // each transform thread / lane 0 of each transform warp
      mbar_init(&empty[s], 8);  // lane 0 of each consumer warp
    }
    fence_barrier_init();
  }
  // early_loads (10th session): the CTA barrier only publishes the mbarriers; the norm-weight
  // table's global loads wait behind a named barrier of the threads that read it, so the producer
  // starts at once (in call 1's timeline the first load left 1.0-2.0 µs after entry, behind those
  // loads; call 2's first try issued 4 k-blocks before the CTA barrier and held every warp there)
  if (p.early_loads) __syncthreads();
  if (threadIdx.x >= 128 && threadIdx.x < 256) {
    const int i = threadIdx.x - 128;
    wtab[i] = 1.f + __bfloat162float(p.nwq[i]);
    wtab[i + 128] = 1.f + __bfloat162float(p.nwq[i + 128]);
    wtab[kD + i] = 1.f + __bfloat162float(p.nwk[i]);
    wtab[kD + i + 128] = 1.f + __bfloat162float(p.nwk[i + 128]);
    wtab16[i] = p.nwq[i];
    wtab16[i + 128] = p.nwq[i + 128];
    wtab16[kD + i] = p.nwk[i];
    wtab16[kD + i + 128] = p.nwk[i + 128];
  }
  if (!p.early_loads) __syncthreads();
  else if (threadIdx.x >= 128) named_barrier_sync(7, blockDim.x - 128);

  if (warp < 4) {
    if (kVariant == kT2) setmaxnreg_dec<48>();
    if (warp == 0 && lane == 0 && nkb > 0) {
      // ------------------------------------------------------------ TMA producer
      RingPos<kStages> pos;
      for (int kb = w.kb0; kb < w.kb1; ++kb) {
        stamp<kStamp>(tl, kb - w.kb0, kSP0);
        mbar_wait(&empty[pos.stage], pos.phase ^ 1);
        stamp<kStamp>(tl, kb - w.kb0, kSP1);
        produce(kb, pos.stage);
        pos.advance();
      }
    } else if (warp >= 1 && p.norm_parts > 0) {
      pdl_wait();
      finalize_norm_weight<kVariant == kT2 ? 1 : 4>(p, fin, threadIdx.x - 32);
    }
    if (w.grp_size > 1) {
      cluster_sync_all();
      cluster_sync_all();
    }
    return;
  }

  if (kVariant != kRS && warp < (kVariant == kT2 ? 12 : 8)) {
    // -------------------------------------------------------------- transform warpgroup(s)
    const int t = (threadIdx.x - 128) & 127;
    if (kVariant == kT2) {
      setmaxnreg_inc<104>();
      const int tw = (threadIdx.x - 128) >> 7;  // this warpgroup takes local k-blocks tw, tw + 2, ...
      const int nown = nkb > tw ? (nkb - tw + 1) / 2 : 0;
      float* ring = rsm_ring + tw * kStages * 2 * kBM;
      auto issue = [&](int j) {  // rstd, m of the rows of own k-block j (local tw + 2j) into slot j % kStages
        const int i = tw + 2 * j;
        const int kb = w.kb0 + i;
        const int head = kb_head(kb);
        if (j < nown && head < 5 && t < (w.is_w ? kBK : kBM)) {
          const int b = w.is_w ? kb / p.nkbs : xb;
          const int s = (w.is_w ? (kb - b * p.nkbs) * kBK : xs0) + t;
          if (s < p.seq) {
            const long long base = head < 4 ? (static_cast<long long>(b) * 4 + head) * p.seq
                                            : static_cast<long long>(b) * p.seq;
            const float* rstd = head < 4 ? p.rq : p.rk;
            const float* mrow = p.m + (head < 4 ? 0 : 4LL * p.tokens);
            const uint32_t slot = smem_u32(ring + (j % kStages) * 2 * kBM);
            cp_async4(slot + t * 4, rstd + base + s);
            cp_async4(slot + (kBM + t) * 4, mrow + base + s);
          }
        }
        cp_async_commit();
      };
      const bool any_norm = nkb > 0 && (w.is_w ? (m0 >> 8) < 5 : w.kb0 < 20);
      if (any_norm) pdl_wait();  // m comes from the stats kernel
#pragma unroll
      for (int j = 0; j < kPrefetch; ++j) issue(j);
      for (int j = 0; j < nown; ++j) {
        const int i = tw + 2 * j;
        const int kb = w.kb0 + i;
        const int head = kb_head(kb);
        const int stage = i % kStages;
        if (t == 0) stamp<kStamp>(tl, i, kST0);
        cp_async_wait<kPrefetch - 1>();
        named_barrier_sync(tw ? 6 : 3, 128);  // every row of slot j landed; slot j - 1 is free
        if (t == 0) stamp<kStamp>(tl, i, kSTb);
        issue(j + kPrefetch);
        mbar_wait(&full[stage], (i / kStages) & 1);
        if (t == 0) stamp<kStamp>(tl, i, kST1);
        if (head < 5) {
          const float* rsm = ring + (j % kStages) * 2 * kBM;
          if (w.is_w) {
            const int b = kb / p.nkbs;
            transform_kblock<true>(sa(stage), sx(stage), wtab, wtab16, rsm, p.seq, (kb - b * p.nkbs) * kBK, 0, head,
                                   m0 & 255, 64, t);
          } else {
            transform_kblock<true>(sa(stage), sx(stage), wtab, wtab16, rsm, p.seq, xs0, 64, head, (kb & 3) * kBK, 0, t);
          }
          fence_proxy_async_shared();
        }
        __syncwarp();
        if (lane == 0) mbar_arrive(&ready[stage]);
        if (t == 0) stamp<kStamp>(tl, i, kST2);
      }
      cp_async_wait<0>();
    } else if (kVariant == kConsumer) {
      auto issue = [&](int i, int stage) {  // rstd, m of the rows of local k-block i into slot `stage`
        const int kb = w.kb0 + i;
        if (i < nkb && kb_head(kb) < 5 && t < (w.is_w ? kBK : kBM)) {
          const int head = kb_head(kb);
          const int b = w.is_w ? kb / p.nkbs : xb;
          const int s = (w.is_w ? (kb - b * p.nkbs) * kBK : xs0) + t;
          if (s < p.seq) {
            const long long base = head < 4 ? (static_cast<long long>(b) * 4 + head) * p.seq
                                            : static_cast<long long>(b) * p.seq;
            const float* rstd = head < 4 ? p.rq : p.rk;
            const float* mrow = p.m + (head < 4 ? 0 : 4LL * p.tokens);
            const uint32_t slot = smem_u32(rsm_ring + stage * 2 * kBM);
            cp_async4(slot + t * 4, rstd + base + s);
            cp_async4(slot + (kBM + t) * 4, mrow + base + s);
          }
        }
        cp_async_commit();
      };
      const bool any_norm = nkb > 0 && (w.is_w ? (m0 >> 8) < 5 : w.kb0 < 20);
      if (any_norm) pdl_wait();  // m comes from the stats kernel
      RingPos<kStages> pos, jpos;
#pragma unroll
      for (int j = 0; j < kPrefetch; ++j) {  // the first round's stages are free
        issue(j, jpos.stage);
        jpos.advance();
      }
      for (int i = 0; i < nkb; ++i) {
        cp_async_wait<kPrefetch - 1>();  // this thread's rows of k-block i landed
        mbar_arrive(&ready[pos.stage]);  // release: the consumers' wait acquires them
        if (i + kPrefetch < nkb) mbar_wait(&empty[jpos.stage], jpos.phase ^ 1);
        issue(i + kPrefetch, jpos.stage);
        pos.advance();
        jpos.advance();
      }
      cp_async_wait<0>();
    } else if (kVariant == kFast || kVariant == kFastDiag || kVariant == kFastF32) {
      constexpr bool kH = kVariant != kFastF32;
      const int diag = kVariant == kFastDiag ? p.diag : 0;
      // k-block kb's rows: dW tokens s0 .. s0+63 of batch b (both boxes); dX the tile's 128 positions
      auto kb_rows = [&](int kb, int& b, int& s0) {
        if (w.is_w) {
          b = kb / p.nkbs;
          s0 = (kb - b * p.nkbs) * kBK;
        } else {
          b = xb;
          s0 = xs0;
        }
      };
      auto issue = [&](int i) {  // rstd, m of the rows of local k-block i into slot i % kStages
        const int kb = w.kb0 + i;
        const int head = kb_head(kb);
        if (i < nkb && head < 5 && t < (w.is_w ? kBK : kBM)) {
          int b, s0;
          kb_rows(kb, b, s0);
          const int s = s0 + t;
          if (s < p.seq) {
            const long long base = head < 4 ? (static_cast<long long>(b) * 4 + head) * p.seq
                                            : static_cast<long long>(b) * p.seq;
            const float* rstd = head < 4 ? p.rq : p.rk;
            const float* mrow = p.m + (head < 4 ? 0 : 4LL * p.tokens);
            const uint32_t slot = smem_u32(rsm_ring + (i % kStages) * 2 * kBM);
            cp_async4(slot + t * 4, rstd + base + s);
            cp_async4(slot + (kBM + t) * 4, mrow + base + s);
          }
        }
        cp_async_commit();
      };
      const bool any_norm = nkb > 0 && (w.is_w ? (m0 >> 8) < 5 : w.kb0 < 20);
      if (any_norm) pdl_wait();  // m comes from the stats kernel
#pragma unroll
      for (int i = 0; i < kPrefetch; ++i) issue(i);
      RingPos<kStages> pos;
      for (int i = 0; i < nkb; ++i) {
        const int kb = w.kb0 + i;
        const int head = kb_head(kb);
        cp_async_wait<kPrefetch - 1>();
        named_barrier_sync(3, 128);  // every row of slot i landed; slot i - 1 is free
        issue(i + kPrefetch);
        mbar_wait(&full[pos.stage], pos.phase);
        if (head < 5) {
          const float* rsm = rsm_ring + (i % kStages) * 2 * kBM;
          int b, s0;
          kb_rows(kb, b, s0);
          if (diag & 4) {
          } else if (diag & 1) {
            copy_kblock(sa(pos.stage), t);
          } else if (w.is_w) {  // both boxes: tokens s0.., dims m0 and m0 + 64
            transform_kblock<kH>(sa(pos.stage), sx(pos.stage), wtab, wtab16, rsm, p.seq, s0, 0, head, m0 & 255, 64, t);
          } else {  // box c: positions xs0 + 64c.., dims (kb & 3)·64
            transform_kblock<kH>(sa(pos.stage), sx(pos.stage), wtab, wtab16, rsm, p.seq, s0, 64, head, (kb & 3) * kBK, 0, t);
          }
          if (!(diag & 2)) fence_proxy_async_shared();
        }
        __syncwarp();
        if (lane == 0) mbar_arrive(&ready[pos.stage]);
        pos.advance();
      }
      cp_async_wait<0>();
    } else {
      bool waited = false;
      RingPos<kStages> pos;
      for (int kb = w.kb0; kb < w.kb0 + nkb; ++kb) {
        const int head = kb_head(kb);
        if (t == 0) stamp<kStamp>(tl, kb - w.kb0, kST0), stamp<kStamp>(tl, kb - w.kb0, kSTb);
        mbar_wait(&full[pos.stage], pos.phase);
        if (t == 0) stamp<kStamp>(tl, kb - w.kb0, kST1);
        if (head < 5 && kVariant == kV1) {
          if (!waited) {
            pdl_wait();  // m comes from the stats kernel
            waited = true;
          }
          if (w.is_w) {
            const int b = kb / p.nkbs;
            const int s0 = (kb - b * p.nkbs) * kBK;
#pragma unroll
            for (int c = 0; c < 2; ++c)
              transform_box(sa(pos.stage) + c * kBoxBytes, sx(pos.stage) + c * kBoxBytes, wtab, p, b, s0, head,
                            (m0 + c * 64) & 255, t);
          } else {
#pragma unroll
            for (int c = 0; c < 2; ++c)
              transform_box(sa(pos.stage) + c * kBoxBytes, sx(pos.stage) + c * kBoxBytes, wtab, p, xb, xs0 + c * 64,
                            head, (kb & 3) * kBK, t);
          }
          fence_proxy_async_shared();
        }
        __syncwarp();
        if (lane == 0) mbar_arrive(&ready[pos.stage]);
        if (t == 0) stamp<kStamp>(tl, kb - w.kb0, kST2);
        pos.advance();
      }
    }
    if (w.grp_size > 1) {
      cluster_sync_all();
      cluster_sync_all();
    }
    return;
  }

  // ---------------------------------------------------------------- consumer warpgroups
  if (kVariant == kT2) setmaxnreg_inc<112>();
  constexpr int kConsumerBase = kVariant == kT2 ? 384 : kVariant == kRS ? 128 : 256;
  const int wg = (threadIdx.x - kConsumerBase) >> 7;  // 0 or 1
  const int ctid = threadIdx.x - kConsumerBase;       // 0..255
  float acc[64];
  if (kVariant == kConsumer && nkb > 0) {
    const int t = ctid - wg * 128;
    RingPos<kStages> pos;
    int prev = -1;
    for (int kb = w.kb0; kb < w.kb1; ++kb) {
      mbar_wait(&full[pos.stage], pos.phase);
      mbar_wait(&ready[pos.stage], pos.phase);
      const int head = kb_head(kb);
      if (head < 5) {
        const float* rsm = rsm_ring + pos.stage * 2 * kBM;
        const __nv_bfloat16* wt16 = wtab16 + (head < 4 ? 0 : kD);
        uint8_t* gbox = sa(pos.stage) + wg * kBoxBytes;
        const uint8_t* xbox = sx(pos.stage) + wg * kBoxBytes;
        if (w.is_w) {  // box wg: dims (m0 & 255) + 64·wg of all 64 tokens s0..
          const int b = kb / p.nkbs;
          transform_own_box(gbox, xbox, wt16 + (m0 & 255) + 64 * wg, rsm, p.seq, (kb - b * p.nkbs) * kBK, t);
        } else {  // box wg: positions xs0 + 64·wg.., dims (kb & 3)·64
          transform_own_box(gbox, xbox, wt16 + (kb & 3) * kBK, rsm + 64 * wg, p.seq, xs0 + 64 * wg, t);
        }
        fence_proxy_async_shared();
        named_barrier_sync(4 + wg, 128);
      }
      wgmma_fence();
      if (w.is_w) mma_kblock<1>(acc, smem_u32(sa(pos.stage)) + wg * kBoxBytes, smem_u32(sb(pos.stage)), kb == w.kb0);
      else mma_kblock<0>(acc, smem_u32(sa(pos.stage)) + wg * kBoxBytes, smem_u32(sb(pos.stage)), kb == w.kb0);
      wgmma_commit();
      wgmma_wait<1>();
      if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
      prev = pos.stage;
      pos.advance();
    }
    wgmma_wait<0>();
  } else if (kVariant == kRS && nkb > 0) {
    // A fragments of k-block kb (stage `st`) for this warp's 16 rows of the warpgroup's 64
    const int wq = warp & 3;
    const int li = lane & 7, lj = lane >> 3;
    const int t = ctid - wg * 128;
    float* ring = rsm_ring + wg * kStages * 2 * kBM;  // this warpgroup's: rstd, m of its 64 rows / tokens
    auto issue = [&](int i) {  // rstd (t < 64) or m (t ≥ 64) of row t & 63 of local k-block i into slot i % kStages
      const int kb = w.kb0 + i;
      const int head = kb_head(kb);
      if (i < nkb && head < 5) {
        const int b = w.is_w ? kb / p.nkbs : xb;
        const int s = (w.is_w ? (kb - b * p.nkbs) * kBK : xs0 + 64 * wg) + (t & 63);
        float* dst = ring + (i % kStages) * 2 * kBM + t;
        if (s < p.seq) {
          const long long row = (head < 4 ? static_cast<long long>(b) * 4 + head : b) * p.seq + s;
          cp_async4(smem_u32(dst), t < 64 ? (head < 4 ? p.rq : p.rk) + row : p.m + (head < 4 ? 0 : 4LL * p.tokens) + row);
        } else {
          *dst = 0.f;  // rows past S: g and x̂ are zero-filled, so is G (no stale value times zero)
        }
      }
      cp_async_commit();
    };
    auto prep = [&](int i) {  // slot i landed for every thread of the warpgroup; slot i - 1 is free
      cp_async_wait<kPrefetch - 1>();
      named_barrier_sync(wg ? 6 : 3, 128);
      issue(i + kPrefetch);
    };
    auto build = [&](uint32_t (&f)[4][4], int st, int kb) {
      const int head = kb_head(kb);
      const uint8_t* gbox = sa(st) + wg * kBoxBytes;
      const uint8_t* xbox = sx(st) + wg * kBoxBytes;
      const float* slot = ring + ((kb - w.kb0) % kStages) * 2 * kBM;  // rstd at [0, 64), m at [64, 128)
      const __nv_bfloat16* wt16 = wtab16 + (head < 4 ? 0 : kD);
      if (!w.is_w) {  // A = G rows (tokens 64·wg..) × dims (kb & 3)·64..: ldmatrix, one row per thread pair
        const int ra = 16 * wq + (lane >> 2);
        float rs[2] = {0.f, 0.f}, mm[2] = {0.f, 0.f};
        if (head < 5) rs[0] = slot[ra], rs[1] = slot[ra + 8], mm[0] = slot[64 + ra], mm[1] = slot[64 + ra + 8];
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {
          const int r = 16 * wq + li + 8 * (lj & 1);
          const int off = r * 128 + (((2 * ks + (lj >> 1)) ^ (r & 7)) << 4);
          uint32_t g[4];
          ldmatrix_x4(g, gbox + off);
          if (head < 5) {
            uint32_t x[4];
            ldmatrix_x4(x, xbox + off);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int d = (kb & 3) * kBK + 16 * ks + 8 * (q >> 1) + 2 * (lane & 3);
              const uint32_t w2 = *reinterpret_cast<const uint32_t*>(wt16 + d);
              const uint32_t gh = hfma2_bf16(g[q], w2, g[q]);
              const float g0 = __uint_as_float(gh << 16), g1 = __uint_as_float(gh & 0xffff0000u);
              const float x0 = __uint_as_float(x[q] << 16), x1 = __uint_as_float(x[q] & 0xffff0000u);
              f[ks][q] = pack_bf16x2(rs[q & 1] * (g0 - mm[q & 1] * x0), rs[q & 1] * (g1 - mm[q & 1] * x1));
            }
          } else {
#pragma unroll
            for (int q = 0; q < 4; ++q) f[ks][q] = g[q];
          }
        }
      } else {  // A = Gᵀ: dims (m0 & 255) + 64·wg.. × the k-block's 64 tokens: ldmatrix .trans
        const int da = (m0 & 255) + 64 * wg + 16 * wq + (lane >> 2);
        uint32_t w2[2] = {0u, 0u};
        if (head < 5) {
          const uint32_t wa = reinterpret_cast<const uint16_t*>(wt16)[da];
          const uint32_t wb = reinterpret_cast<const uint16_t*>(wt16)[da + 8];
          w2[0] = wa | wa << 16, w2[1] = wb | wb << 16;
        }
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {
          const int tr = 16 * ks + 8 * (lj >> 1) + li;
          const int off = tr * 128 + (((2 * wq + (lj & 1)) ^ (tr & 7)) << 4);
          uint32_t g[4];
          ldmatrix_x4_trans(g, gbox + off);
          if (head < 5) {
            uint32_t x[4];
            ldmatrix_x4_trans(x, xbox + off);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int t0 = 16 * ks + 8 * (q >> 1) + 2 * (lane & 3);
              const float2 rs = *reinterpret_cast<const float2*>(slot + t0);
              const float2 mm = *reinterpret_cast<const float2*>(slot + 64 + t0);
              const uint32_t gh = hfma2_bf16(g[q], w2[q & 1], g[q]);
              const float g0 = __uint_as_float(gh << 16), g1 = __uint_as_float(gh & 0xffff0000u);
              const float x0 = __uint_as_float(x[q] << 16), x1 = __uint_as_float(x[q] & 0xffff0000u);
              f[ks][q] = pack_bf16x2(rs.x * (g0 - mm.x * x0), rs.y * (g1 - mm.y * x1));
            }
          } else {
#pragma unroll
            for (int q = 0; q < 4; ++q) f[ks][q] = g[q];
          }
        }
      }
    };
    RingPos<kStages> pos;
    auto step = [&](int i, uint32_t (&cur)[4][4], uint32_t (&nxt)[4][4]) {
      const int st = pos.stage;
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        wgmma_m64n128k16_rs(acc, cur[ks], make_desc_sw128(smem_u32(sb(st)) + ks * 2048, kBoxBytes, 1024),
                            (i == 0 && ks == 0) ? 0 : 1);
      wgmma_commit();
      pos.advance();
      if (i + 1 < nkb) {  // the next k-block's fragments while wgmma i runs
        if (ctid == 0) stamp<kStamp>(tl, i + 1, kST0), stamp<kStamp>(tl, i + 1, kSC0);
        prep(i + 1);
        if (ctid == 0) stamp<kStamp>(tl, i + 1, kSTb);
        mbar_wait(&full[pos.stage], pos.phase);
        if (ctid == 0) stamp<kStamp>(tl, i + 1, kST1);
        build(nxt, pos.stage, w.kb0 + i + 1);
        if (ctid == 0) stamp<kStamp>(tl, i + 1, kST2), stamp<kStamp>(tl, i + 1, kSC1);
      }
      wgmma_wait<0>();
      if (ctid == 0) stamp<kStamp>(tl, i, kSC2);
      if (lane == 0) mbar_arrive(&empty[st]);
    };
    uint32_t fa[4][4], fb[4][4];
    if (w.is_w ? (m0 >> 8) < 5 : w.kb0 < 20) pdl_wait();  // m comes from the stats kernel
#pragma unroll
    for (int j = 0; j < kPrefetch; ++j) issue(j);
    if (ctid == 0) stamp<kStamp>(tl, 0, kST0), stamp<kStamp>(tl, 0, kSC0);
    prep(0);
    if (ctid == 0) stamp<kStamp>(tl, 0, kSTb);
    mbar_wait(&full[pos.stage], pos.phase);
    if (ctid == 0) stamp<kStamp>(tl, 0, kST1);
    build(fa, pos.stage, w.kb0);
    if (ctid == 0) stamp<kStamp>(tl, 0, kST2), stamp<kStamp>(tl, 0, kSC1);
    for (int i = 0; i < nkb; i += 2) {
      step(i, fa, fb);
      if (i + 1 < nkb) step(i + 1, fb, fa);
    }
    cp_async_wait<0>();
  } else if (nkb > 0) {
    if (w.is_w) mainloop<1, kStamp>(acc, w.kb0, w.kb1, ready, empty, wg, lane, sa, sb, tl, ctid == 0);
    else mainloop<0, kStamp>(acc, w.kb0, w.kb1, ready, empty, wg, lane, sa, sb, tl, ctid == 0);
  } else {
#pragma unroll
    for (int j = 0; j < 64; ++j) acc[j] = 0.f;
  }
  if (ctid == 0) stamp_head<kStamp>(tl, 4, false), stamp_head<kStamp>(tl, 5, true);
  named_barrier_sync(1, 256);
  const int frow = wg * kWM + (warp & 3) * 16 + (lane >> 2);
  if (w.grp_size == 1) {
    if (w.valid) {
      uint8_t* stage = smem;
#pragma unroll
      for (int j = 0; j < 16; ++j) stage_put(stage, frow, j, lane, acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
      fence_proxy_async_shared();
      named_barrier_sync(1, 256);
      if (ctid == 0) {
        if (w.is_w) {
          const CUtensorMap* map = m0 < 1024 ? &maps.dwq : (m0 < kQK ? &maps.dwk : &maps.dwv);
          const int row0 = m0 < 1024 ? m0 : (m0 < kQK ? m0 - 1024 : m0 - kQK);
#pragma unroll
          for (int rb = 0; rb < 2; ++rb)
#pragma unroll
            for (int cb = 0; cb < 2; ++cb) tma_store_2d(map, stage + (rb * 2 + cb) * kBoxBytes, w.nt * kBN + cb * 64, row0 + rb * 64);
        } else {
#pragma unroll
          for (int rb = 0; rb < 2; ++rb) {
            if (xs0 + rb * 64 >= p.seq) break;
#pragma unroll
            for (int cb = 0; cb < 2; ++cb)
              tma_store_3d(&maps.dx, stage + (rb * 2 + cb) * kBoxBytes, w.nt * kBN + cb * 64, xs0 + rb * 64, xb);
          }
        }
        bulk_commit();
        bulk_wait_read0();
      }
    }
    if (ctid == 0) stamp_head<kStamp>(tl, 6, false), stamp_head<kStamp>(tl, 7, true);
    return;
  }
  if (w.valid) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int col = j * 8 + (lane & 3) * 2;
      *reinterpret_cast<float2*>(red + red_offset(frow, col)) = make_float2(acc[4 * j], acc[4 * j + 1]);
      *reinterpret_cast<float2*>(red + red_offset(frow + 8, col)) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    }
  }
  cluster_sync_all();
  if (w.valid) {
    const int row_limit = w.is_w ? kBM : min(kBM, p.seq - xs0);
    const int rows = kBM / w.grp_size;
    const int r0 = w.grp_idx * rows;
    const uint32_t red_addr = smem_u32(red);
    __nv_bfloat16* xbase = p.dx + (static_cast<int64_t>(xb) * p.seq + xs0) * kHidden + w.nt * kBN;
    auto out = [&](int row) { return w.is_w ? dw_row(p, m0 + row) + w.nt * kBN : xbase + static_cast<int64_t>(row) * kHidden; };
    switch (w.grp_size) {
      case 2: reduce_store<2>(red_addr, w.grp_base, r0, rows, row_limit, ctid, out); break;
      case 4: reduce_store<4>(red_addr, w.grp_base, r0, rows, row_limit, ctid, out); break;
      default: reduce_store<8>(red_addr, w.grp_base, r0, rows, row_limit, ctid, out); break;
    }
  }
  cluster_sync_all();
  if (ctid == 0) stamp_head<kStamp>(tl, 6, false), stamp_head<kStamp>(tl, 7, true);
}

// ------------------------------------------------------------------ host
struct Plan {
  int cl, sw, sx, x_first;
  int nsb, nkbs, kbw, nwt, nxt, ncw, ncx, grid;
  int stats_blocks, stats_per_warp;
};
constexpr int kPlanFields = 12;

Plan shape_plan(int batch, int seq, int num_sms, int cl, int sw, int sx, int x_first) {
  Plan p{};
  p.cl = cl;
  p.sw = sw;
  p.sx = sx;
  p.x_first = x_first;
  p.nsb = (seq + kBM - 1) / kBM;
  p.nkbs = (seq + kBK - 1) / kBK;
  p.kbw = batch * p.nkbs;
  p.nwt = (kGCols / kBM) * kNT;
  p.nxt = batch * p.nsb * kNT;
  p.ncw = (p.nwt + cl / sw - 1) / (cl / sw);
  p.ncx = (p.nxt + cl / sx - 1) / (cl / sx);
  p.grid = (p.ncw + p.ncx) * cl;
  const long long rows = 5LL * batch * seq;
  const long long warps = static_cast<long long>(num_sms) * kStatsBlocksPerSm * kStatsWarps;
  long long per = (rows + warps - 1) / warps;
  per = (per + kStatsUnroll - 1) / kStatsUnroll * kStatsUnroll;
  p.stats_per_warp = static_cast<int>(per);
  p.stats_blocks = static_cast<int>((rows + per * kStatsWarps - 1) / (per * kStatsWarps));
  return p;
}

// By token count (128-row tiles only; the 7th session's 13-plan sweep, then the 8th session's
// sweep of kT2 (call 2), lab/qkv_qknorm_backward/LOG.md): few tokens split dX over a cluster;
// ~1k no split; ~2k dW split in two, dX first; 4k–9k dW tiles first, no split; above, dW split
// in two (the 60 dW tiles' long K would otherwise finish last; not measured there with kT2).
struct TableRow {
  int max_tokens, cl, sw, sx, x_first;
};
constexpr TableRow kPlanTable[] = {
    {384, 4, 1, 4, 1}, {768, 2, 1, 2, 1}, {1792, 1, 1, 1, 1}, {3072, 2, 2, 1, 1}, {9216, 1, 1, 1, 0}, {1 << 30, 2, 2, 1, 0},
};
bool valid_forced(const int* f) {
  if (f == nullptr || f[0] == 0) return true;
  auto pow2 = [](int v) { return v == 1 || v == 2 || v == 4 || v == 8; };
  return pow2(f[0]) && pow2(f[1]) && pow2(f[2]) && f[1] <= f[0] && f[2] <= f[0] && (f[3] == 0 || f[3] == 1);
}

Plan make_plan(int batch, int seq, int num_sms, const int* f) {
  if (f != nullptr && f[0] != 0) return shape_plan(batch, seq, num_sms, f[0], f[1], f[2], f[3]);
  const long long tokens = static_cast<long long>(batch) * seq;
  for (const TableRow& r : kPlanTable)
    if (tokens <= r.max_tokens) return shape_plan(batch, seq, num_sms, r.cl, r.sw, r.sx, r.x_first);
  return shape_plan(batch, seq, num_sms, 1, 1, 1, 0);
}

PFN_cuTensorMapEncodeTiled_v12000 encode() { return encode_fn(); }

// 3-D bf16 [d2, d1, d0] row-major (d0 contiguous), boxes 64×64×1, 128-byte swizzle, zero fill.
bool make_map_3d(CUtensorMap* map, const void* ptr, int64_t d2, int64_t d1, int64_t d0) {
  auto fn = encode();
  if (!fn) return false;
  cuuint64_t dims[3] = {static_cast<cuuint64_t>(d0), static_cast<cuuint64_t>(d1), static_cast<cuuint64_t>(d2)};
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(d0 * 2), static_cast<cuuint64_t>(d0 * d1 * 2)};
  cuuint32_t box[3] = {64, 64, 1};
  cuuint32_t estr[3] = {1, 1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(ptr), dims, strides, box, estr,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace
}  // namespace kidxf

extern "C" {

// forced: NULL or 4 ints {cluster, sw, sx, x_first} (cluster 0 = the planner's). out[0..11]: cluster, sw, sx, x_first, grid, ncw, ncx,
// nwt, nxt, kbw, stats blocks, stats rows per warp. Returns the number of values, or -1 for bad
// arguments.
int kidxf_plan(int batch, int seq, int num_sms, const int* forced, long long* out, int nout) {
  using namespace kidxf;
  if (batch < 1 || seq < 1 || num_sms < 1 || nout < kPlanFields || !valid_forced(forced) ||
      5LL * batch * seq >= (1LL << 31))
    return -1;
  const Plan p = make_plan(batch, seq, num_sms, forced);
  const long long v[kPlanFields] = {p.cl, p.sw, p.sx, p.x_first, p.grid, p.ncw, p.ncx, p.nwt, p.nxt, p.kbw,
                                    p.stats_blocks, p.stats_per_warp};
  for (int i = 0; i < kPlanFields; ++i) out[i] = v[i];
  return kPlanFields;
}

// args: 0 grad_query 1 grad_key 2 grad_value 3 hidden_states 4 q_weight 5 k_weight 6 v_weight
// 7 q_norm_weight 8 k_norm_weight 9 q_rstd 10 k_rstd 11 q_normed 12 k_normed 13 grad_hidden
// 14 grad_q_weight 15 grad_k_weight 16 grad_v_weight 17 grad_q_norm_weight 18 grad_k_norm_weight
// 19 m [5T] fp32 20 partials [stats blocks, 512] fp32 21 batch 22 seq 23 num_sms 24..27 forced
// 28 flags (bit 0 PDL; bits 1-3 the variant: 0 kFast, 1 kV1, 2 kNoTransform, 3 kNoX, 4 kFastDiag, 5 kFastF32, 6 kConsumer, 7 kT2; bits 4-6 Params::diag;
// bit 7 Params::early_loads; bit 8 kRS, bits 1-3 then ignored; bit 9 no stats kernel (timing only))
// [29 timeline [grid][kTlWords] u64 or 0: the stamped build, t2, rs, diag-notransform and diag-nox only;
// in rs the "transform" stamps are consumer warpgroup 0's ring barrier, `full` wait and fragment build]
int kidxf_launch(const unsigned long long* a, int n, void* stream_ptr) {
  using namespace kidxf;
  if (n < 29) return kErrArguments;
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_ptr);
  auto ptr = [&](int i) { return reinterpret_cast<void*>(a[i]); };
  const int batch = static_cast<int>(a[21]), seq = static_cast<int>(a[22]), sms = static_cast<int>(a[23]);
  int forced[4];
  for (int i = 0; i < 4; ++i) forced[i] = static_cast<int>(a[24 + i]);
  const int flags = static_cast<int>(a[28]);
  if (batch < 1 || seq < 1 || sms < 1 || !valid_forced(forced) || 5LL * batch * seq >= (1LL << 31)) return kErrArguments;
  const Plan pl = make_plan(batch, seq, sms, forced);
  const long long tokens = static_cast<long long>(batch) * seq;

  Maps m;
  bool ok = make_map_3d(&m.gq, ptr(0), 4LL * batch, seq, kD) && make_map_3d(&m.xq, ptr(11), 4LL * batch, seq, kD) &&
            make_map_3d(&m.gk, ptr(1), batch, seq, kD) && make_map_3d(&m.xk, ptr(12), batch, seq, kD) &&
            make_map_3d(&m.gv, ptr(2), batch, seq, kD) && make_map_3d(&m.x, ptr(3), batch, seq, kHidden) &&
            make_map_3d(&m.dx, ptr(13), batch, seq, kHidden) && make_map(&m.wq, ptr(4), 1024, kHidden, kHidden) &&
            make_map(&m.wk, ptr(5), 256, kHidden, kHidden) && make_map(&m.wv, ptr(6), 256, kHidden, kHidden) &&
            make_map(&m.dwq, ptr(14), 1024, kHidden, kHidden) && make_map(&m.dwk, ptr(15), 256, kHidden, kHidden) &&
            make_map(&m.dwv, ptr(16), 256, kHidden, kHidden);
  if (!ok) return kErrTensorMap;

  StatsArgs s;
  s.gq = static_cast<const uint4*>(ptr(0));
  s.xq = static_cast<const uint4*>(ptr(11));
  s.gk = static_cast<const uint4*>(ptr(1));
  s.xk = static_cast<const uint4*>(ptr(12));
  s.wq = static_cast<const uint4*>(ptr(7));
  s.wk = static_cast<const uint4*>(ptr(8));
  s.m = static_cast<float*>(ptr(19));
  s.partials = static_cast<float*>(ptr(20));
  s.rows = static_cast<int>(5 * tokens);
  s.qrows = static_cast<int>(4 * tokens);
  s.per_warp = pl.stats_per_warp;
  // flags bit 9 ("diag-nostats", timing only, results wrong): no stats kernel, so that the op's
  // time without it shows what that kernel costs beside the GEMM's PDL start
  if (!((flags >> 9) & 1)) stats_kernel<<<pl.stats_blocks, kStatsWarps * 32, 0, stream>>>(s);
  cudaError_t err = launched(cudaSuccess);
  if (err != cudaSuccess) return err;

  Params p{};
  p.dx = static_cast<__nv_bfloat16*>(ptr(13));
  p.dwq = static_cast<__nv_bfloat16*>(ptr(14));
  p.dwk = static_cast<__nv_bfloat16*>(ptr(15));
  p.dwv = static_cast<__nv_bfloat16*>(ptr(16));
  p.m = static_cast<const float*>(ptr(19));
  p.rq = static_cast<const float*>(ptr(9));
  p.rk = static_cast<const float*>(ptr(10));
  p.nwq = static_cast<const __nv_bfloat16*>(ptr(7));
  p.nwk = static_cast<const __nv_bfloat16*>(ptr(8));
  p.norm_partials = static_cast<const float*>(ptr(20));
  p.norm_parts = pl.stats_blocks;
  p.dq_norm = static_cast<float*>(ptr(17));
  p.dk_norm = static_cast<float*>(ptr(18));
  p.batch = batch;
  p.seq = seq;
  p.tokens = static_cast<int>(tokens);
  p.nsb = pl.nsb;
  p.nkbs = pl.nkbs;
  p.kbw = pl.kbw;
  p.cl = pl.cl;
  p.sw = pl.sw;
  p.sx = pl.sx;
  p.nwt = pl.nwt;
  p.nxt = pl.nxt;
  p.ncw = pl.ncw;
  p.ncx = pl.ncx;
  p.x_first = pl.x_first;
  p.diag = (flags >> 4) & 7;
  p.early_loads = (flags >> 7) & 1;
  p.timeline = n > 29 ? reinterpret_cast<unsigned long long*>(a[29]) : nullptr;

  const int variant = (flags >> 8) & 1 ? kRS : (flags >> 1) & 7;
  // a timeline (lab only) runs the stamped build of t2 or of a skeleton (kNoTransform, kNoX)
  const bool stamped = p.timeline != nullptr;
  if (stamped && variant != kT2 && variant != kNoX && variant != kNoTransform && variant != kRS) return kErrArguments;
  auto kfn = stamped ? (variant == kT2 ? fused_gemm_kernel<kT2, true> : variant == kRS ? fused_gemm_kernel<kRS, true>
                        : variant == kNoX ? fused_gemm_kernel<kNoX, true> : fused_gemm_kernel<kNoTransform, true>)
             : variant == kV1            ? fused_gemm_kernel<kV1>
              : variant == kNoTransform ? fused_gemm_kernel<kNoTransform>
              : variant == kNoX         ? fused_gemm_kernel<kNoX>
              : variant == kFastDiag    ? fused_gemm_kernel<kFastDiag>
              : variant == kFastF32     ? fused_gemm_kernel<kFastF32>
              : variant == kConsumer    ? fused_gemm_kernel<kConsumer>
              : variant == kT2          ? fused_gemm_kernel<kT2>
              : variant == kRS          ? fused_gemm_kernel<kRS>
                                        : fused_gemm_kernel<kFast>;
  const void* kernel = reinterpret_cast<const void*>(kfn);
  const int smem_bytes = kSmemBytes;
  err = allow_dynamic_smem(kernel, smem_bytes);
  if (err != cudaSuccess) return err;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(pl.grid);
  cfg.blockDim = dim3(variant == kT2 ? kThreadsT2 : variant == kRS ? kThreadsRS : kThreads);
  cfg.dynamicSmemBytes = smem_bytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = pl.cl;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = (flags & 1) ? 2 : 1;
  return launched(cudaLaunchKernelEx(&cfg, kfn, m, p));
}

const char* kidxf_error(int code) { return kidx::error_string(code); }

int kidxf_timeline_words() { return kidxf::kTlWords; }

}  // extern "C"
