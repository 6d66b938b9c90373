// ext-cluster: the Q/K/V projection backward with Q/K RMSNorm on sm_90a, as two kernels chained by
// programmatic dependent launch (PDL):
//
// 1. norm_qk_kernel: RMSNorm backward of the Q and K heads, transposed into GQK = [GQ|GK]
//    ([T,1280] bf16), plus per-block partial sums of grad_norm_weight. GV is not copied:
//    grad_value [B,1,S,256] already is GV [T,256], and the GEMMs read it in place.
// 2. cluster_gemm_kernel: both GEMMs, one output tile per CTA group, split-K across the CTAs of a
//    thread-block cluster, the partial tiles summed through distributed shared memory (DSMEM):
//      dX [T,640]    = [GQK|GV] [T,1536] · [Wq;Wk;Wv] [1536,640]   (A K-major, B MN-major)
//      dW [1536,640] = [GQK|GV]ᵀ [1536,T] · X [T,640]              (A MN-major, B MN-major)
//    A cluster of C CTAs holds C/s output tiles, s CTAs per tile, each over 1/s of the k-blocks
//    (s = sw for dW, sx for dX). After the mainloop every CTA writes its fp32 partial into its own
//    shared memory, the cluster synchronizes, and CTA i of a tile's group sums rows
//    [i·BM/s, (i+1)·BM/s) of all s partials (fixed order: deterministic) and stores bf16.
//    Non-persistent: no global workspace, no counters, nothing to zero between calls.
//    Work that reads only GV and X/W (dW rows 1280..1535) does not wait for the norm kernel.
//
// Warp roles per CTA (384 threads, all within the 168-register launch bound, so no setmaxnreg):
// warp 0 lane 0 issues TMA loads (128-byte swizzle, 64x64 boxes) into a STAGES-deep ring; warps
// 1-3 sum the norm kernel's grad_norm_weight partials (a slice of the 512 values per CTA, fixed
// order); warpgroups 1 and 2 each compute BM/2 rows with wgmma m64n128k16 and then do the DSMEM
// reduction and the bf16 stores.
//
// Host API (extern "C", for ctypes; no torch headers): kidxc_plan, kidxc_launch, kidxc_error.
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "sm90_ptx.cuh"

namespace kidxc {

using namespace kidx;

namespace {

constexpr int kHidden = 640;
constexpr int kD = 256;
constexpr int kQK = 1280;       // GQ|GK columns (materialized by the norm kernel)
constexpr int kGCols = 1536;    // [GQ|GK|GV]
constexpr int kBN = 128;
constexpr int kNT = kHidden / kBN;  // 5 column tiles
constexpr int kBK = 64;
constexpr int kKBX = kGCols / kBK;  // 24 k-blocks of dX
constexpr int kKBQK = kQK / kBK;    // 20 of them read GQ|GK
constexpr int kBox = 64 * 64 * 2;   // bytes of one TMA box
constexpr int kThreads = 384;

// ---------------------------------------------------------------- cluster PTX
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t map_rank(uint32_t saddr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(saddr), "r"(rank));
  return r;
}
__device__ __forceinline__ float4 ld_dsmem_f4(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr));
  return v;
}

// ================================================================ 1. norm kernel (Q and K heads)

constexpr int kNormWarps = 8;
constexpr int kNormThreads = kNormWarps * 32;
constexpr int kQKHeads = 5;  // 4 query heads, 1 key head

struct NormArgs {
  const __nv_bfloat16* grad_query;     // [B,4,S,256]
  const __nv_bfloat16* grad_key;       // [B,1,S,256]
  const __nv_bfloat16* q_normed;       // [B,4,S,256]
  const __nv_bfloat16* k_normed;       // [B,1,S,256]
  const __nv_bfloat16* q_norm_weight;  // [256]
  const __nv_bfloat16* k_norm_weight;  // [256]
  const float* q_rstd;                 // [B,4,S]
  const float* k_rstd;                 // [B,1,S]
  __nv_bfloat16* g;                    // GQK [T,1280] out
  float* partials;                     // [blocks,512] out (q dims 0..255, k dims 256..511)
  int batch, seq;
  unsigned long long* timeline;        // debug: [blocks][4] entry, exit, SM; or null
};

__device__ __forceinline__ uint32_t smid() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

// bf16 -> fp32 is a shift: 8 values from one 16-byte load with integer ops only.
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}
// Two fp32 -> bf16 (round to nearest even) in one instruction; `lo` goes to the lower address.
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// One (token, head) row as a lane sees it: 8 of the 256 values. The norm is bound by instruction
// issue more than by DRAM (measured: ~20 GB/s per SM whatever the bytes in flight), so each value
// is rounded to bf16 once, two at a time, and kept packed between the passes (unpacking is a
// shift).
struct Row {
  uint4 g;  // g; after the first pass ĝ = bf16(g·(1+w))
  uint4 x;  // x̂
  float rstd;
  int head;  // 0..3 query, 4 key; -1 none
  int token;
};

__device__ __forceinline__ Row load_row_at(const NormArgs& a, int h, int t, int lane) {
  Row row;
  const int b = t / a.seq;
  const int s = t - b * a.seq;
  row.head = h;
  row.token = t;
  const bool q = h < 4;
  const int64_t idx = q ? static_cast<int64_t>(b * 4 + h) * a.seq + s : static_cast<int64_t>(b) * a.seq + s;
  row.g = __ldg(reinterpret_cast<const uint4*>((q ? a.grad_query : a.grad_key) + idx * kD) + lane);
  row.x = __ldg(reinterpret_cast<const uint4*>((q ? a.q_normed : a.k_normed) + idx * kD) + lane);
  row.rstd = __ldg((q ? a.q_rstd : a.k_rstd) + idx);
  return row;
}

__device__ __forceinline__ Row load_row(const NormArgs& a, int r, int tokens, int lane) {
  if (r >= kQKHeads * tokens) {
    Row row;
    row.head = -1;
    return row;
  }
  const int h = r / tokens;
  return load_row_at(a, h, r - h * tokens, lane);
}

// First pass: grad_norm_weight partials (Σ g·x̂), ĝ = bf16(g·(1+w)) with w1 = 1+w (the Q or K
// norm's, selected per element so that no array is indexed at run time), and this lane's part
// of Σ ĝ·x̂.
__device__ __forceinline__ float row_dot(Row& row, const float (&w1q)[8], const float (&w1k)[8],
                                         float (&accq)[8], float (&acck)[8]) {
  if (row.head < 0) return 0.f;
  const bool is_q = row.head < 4;
  float g[8], xf[8], gh[8];
  unpack8(row.g, g);
  unpack8(row.x, xf);
  if (is_q) {
#pragma unroll
    for (int i = 0; i < 8; ++i) accq[i] = fmaf(g[i], xf[i], accq[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) acck[i] = fmaf(g[i], xf[i], acck[i]);
  }
  uint32_t* pk = &row.g.x;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    pk[i] = pack_bf16x2(g[2 * i] * (is_q ? w1q[2 * i] : w1k[2 * i]), g[2 * i + 1] * (is_q ? w1q[2 * i + 1] : w1k[2 * i + 1]));
  unpack8(row.g, gh);
  float dot = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) dot = fmaf(gh[i], xf[i], dot);
  return dot;
}

// Second pass: GQK[token, head*256 + ...] = bf16(rstd · (ĝ − m·x̂)), m = Σ ĝ·x̂ / 256.
__device__ __forceinline__ void row_store(const NormArgs& a, const Row& row, float dot, int lane) {
  if (row.head < 0) return;
  const float m = dot * (1.0f / kD);
  float gh[8], xf[8];
  unpack8(row.g, gh);
  unpack8(row.x, xf);
  uint4 out;
  uint32_t* o = &out.x;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    o[i] = pack_bf16x2(row.rstd * fmaf(-m, xf[2 * i], gh[2 * i]), row.rstd * fmaf(-m, xf[2 * i + 1], gh[2 * i + 1]));
  reinterpret_cast<uint4*>(a.g + static_cast<int64_t>(row.token) * kQK + row.head * kD)[lane] = out;
}

// 1 + w of the Q and K norms for this lane's 8 values.
__device__ __forceinline__ void norm_scales(const NormArgs& a, int lane, float (&w1q)[8], float (&w1k)[8]) {
  unpack8(__ldg(reinterpret_cast<const uint4*>(a.q_norm_weight) + lane), w1q);
  unpack8(__ldg(reinterpret_cast<const uint4*>(a.k_norm_weight) + lane), w1k);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    w1q[i] = 1.0f + w1q[i];
    w1k[i] = 1.0f + w1k[i];
  }
}

// Each warp takes RPW consecutive rows (same head, consecutive tokens: contiguous memory), issues
// all their loads before using any, and reduces the rows' dots together. Fixed row-to-warp mapping
// and reduction order: deterministic.
template <int RPW, int BPS>
__global__ void __launch_bounds__(kNormThreads, BPS) norm_qk_kernel(NormArgs a) {
  __shared__ float red[kNormWarps][2 * kD];
  // The GEMM kernel may be scheduled now: it waits (griddepcontrol.wait) before reading GQK or
  // the partials, and starts its V-only tiles and its W/X loads meanwhile.
  pdl_launch_dependents();
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int tokens = a.batch * a.seq;
  if (a.timeline != nullptr && threadIdx.x == 0) {
    a.timeline[4 * blockIdx.x] = globaltimer();
    a.timeline[4 * blockIdx.x + 2] = smid();
  }
  float w1q[8], w1k[8], accq[8], acck[8];
  norm_scales(a, lane, w1q, w1k);
#pragma unroll
  for (int i = 0; i < 8; ++i) accq[i] = acck[i] = 0.f;

  const int rows = kQKHeads * tokens;
  const int step = gridDim.x * kNormWarps * RPW;
  for (int base = (blockIdx.x * kNormWarps + warp) * RPW; base < rows; base += step) {
    Row rr[RPW];
#pragma unroll
    for (int i = 0; i < RPW; ++i) rr[i] = load_row(a, base + i, tokens, lane);
    float dot[RPW];
#pragma unroll
    for (int i = 0; i < RPW; ++i) dot[i] = row_dot(rr[i], w1q, w1k, accq, acck);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int i = 0; i < RPW; ++i) dot[i] += __shfl_xor_sync(0xffffffffu, dot[i], o);
#pragma unroll
    for (int i = 0; i < RPW; ++i) row_store(a, rr[i], dot[i], lane);
  }

#pragma unroll
  for (int i = 0; i < 8; ++i) {
    red[warp][lane * 8 + i] = accq[i];
    red[warp][kD + lane * 8 + i] = acck[i];
  }
  __syncthreads();
  for (int d = threadIdx.x; d < 2 * kD; d += kNormThreads) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < kNormWarps; ++w) s += red[w][d];
    a.partials[static_cast<int64_t>(blockIdx.x) * 2 * kD + d] = s;
  }
  if (a.timeline != nullptr && threadIdx.x == 0) a.timeline[4 * blockIdx.x + 1] = globaltimer();
}

// Rows per warp and resident blocks per SM: 4 rows (all their loads in flight; 2 blocks per SM so
// the rows fit in registers) when that fills the GPU, else 2 or 1 row with 3 blocks per SM.
struct NormShape {
  int rpw, grid;
};

NormShape norm_shape(int tokens, int num_sms) {
  const int64_t rows = static_cast<int64_t>(kQKHeads) * tokens;
  NormShape n;
  int bps = 3;
  if (rows >= static_cast<int64_t>(num_sms) * 2 * kNormWarps * 4) {
    n.rpw = 4;
    bps = 2;
  } else if (rows >= static_cast<int64_t>(num_sms) * 3 * kNormWarps * 2) {
    n.rpw = 2;
  } else {
    n.rpw = 1;
  }
  const int64_t want = (rows + kNormWarps * n.rpw - 1) / (kNormWarps * n.rpw);
  n.grid = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(want, static_cast<int64_t>(num_sms) * bps)));
  return n;
}

// ---------------------------------------------------------------- token-block flags (fused mode)
constexpr int kTB = 64;                      // tokens per token block (= one dW k-block)
constexpr uint64_t kTimeoutNs = 2000000000ull;  // a spin-wait traps after 2 s instead of hanging

__device__ __forceinline__ int ld_acquire(const int* ptr) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(ptr) : "memory");
  return v;
}
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}
// Rows of token block tb that exist (the last block may be partial).
__device__ __forceinline__ int rows_in_tb(int tb, int tokens) {
  return kQKHeads * min(kTB, tokens - tb * kTB);
}
// Wait until token blocks [tb0, tb1) are written; then their rows may be read by TMA (async proxy).
__device__ __forceinline__ void wait_token_blocks(const int* flags, int tb0, int tb1, int tokens) {
  const uint64_t t0 = globaltimer();
  uint32_t n = 0;
  for (int tb = tb0; tb < tb1; ++tb) {
    const int need = rows_in_tb(tb, tokens);
    while (ld_acquire(flags + tb) < need) {
      __nanosleep(128);  // back off: many producers poll the same few lines
      if ((++n & 255u) == 0 && globaltimer() - t0 > kTimeoutNs) __trap();
    }
  }
  fence_proxy_async_global();
}

// ================================================================ 2. cluster GEMM kernel

struct Params {
  __nv_bfloat16* dx;
  __nv_bfloat16* dwq;
  __nv_bfloat16* dwk;
  __nv_bfloat16* dwv;
  const float* norm_partials;  // [norm_parts,512]
  int norm_parts;              // 0: no finalize (debug: norm skipped)
  float* dq_norm;
  float* dk_norm;
  int tokens, kbw;             // kbw = ceil(T/64): dW k-blocks
  int cl, sw, sx;              // cluster size; CTAs per dW / dX tile (each divides cl)
  int nwt, nxt;                // dW tiles, dX tiles
  int ncw, ncx;                // dW clusters, dX clusters
  int x_first;                 // dX clusters launch first
  // Fused mode (norm_ctas > 0): the first norm_ctas CTAs of the grid do the Q/K norm backward in
  // token-block order and count finished rows in flags[tb]; GEMM CTAs wait for the token blocks
  // they read instead of for the norm kernel. flags[ntb] counts finished norm CTAs.
  int norm_ctas;
  int* flags;                  // [ntb + 1], zero on entry
  int dbg_no_fence;            // debug (timing only, results may be wrong): publish without fences
  int dbg_norm_only;           // debug (timing only, results wrong): GEMM CTAs exit at once
  NormArgs na;
  unsigned long long* timeline;  // debug: [grid][kStamps] globaltimer stamps (see kidxc_launch); or null
};
constexpr int kStamps = 12;

// What one CTA computes. Invalid CTAs (past the last tile of a partly filled cluster) only take
// part in the cluster barriers.
struct Work {
  int is_w, tile, mt, nt, kb0, kb1, grp_base, grp_idx, grp_size, valid;
};

__device__ __forceinline__ Work decode_work(const Params& p) {
  const int cid = (static_cast<int>(blockIdx.x) - p.norm_ctas) / p.cl;
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

template <int R, int TA>
__device__ __forceinline__ void mma_kblock(float (&acc)[R][64], uint32_t a_base, uint32_t b_base, bool first) {
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const uint64_t db = make_desc_sw128(b_base + ks * 2048, kBox, 1024);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const uint32_t a_addr = TA ? (a_base + r * kBox + ks * 2048) : (a_base + r * kBox + ks * 32);
      const uint64_t da = TA ? make_desc_sw128(a_addr, kBox, 1024) : make_desc_sw128(a_addr, 16, 1024);
      wgmma_m64n128k16<TA, 1>(acc[r], da, db, (first && ks == 0) ? 0 : 1);
    }
  }
}

template <int R, int TA, int STAGES, int A_BYTES, int B_BYTES>
__device__ __forceinline__ void mainloop(float (&acc)[R][64], int kb0, int kb1, uint8_t* smem_a,
                                         uint8_t* smem_b, uint64_t* full, uint64_t* empty, int wg, int lane) {
  int stage = 0;
  uint32_t phase = 0;
  int prev = -1;
  for (int kb = kb0; kb < kb1; ++kb) {
    mbar_wait(&full[stage], phase);
    wgmma_fence();
    const uint32_t a_base = smem_u32(smem_a + stage * A_BYTES) + wg * R * kBox;
    const uint32_t b_base = smem_u32(smem_b + stage * B_BYTES);
    mma_kblock<R, TA>(acc, a_base, b_base, kb == kb0);
    wgmma_commit();
    wgmma_wait<1>();
    if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
    prev = stage;
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1;
    }
  }
  wgmma_wait<0>();
}

// fp32 partial tile in shared memory: row-major [BM][128], the 16-byte chunks of each row XOR-
// swizzled by (row & 7) so that fragment writes and row reads are both bank-conflict free.
__device__ __forceinline__ uint32_t red_offset(int row, int col) {  // bytes
  return static_cast<uint32_t>((row * kBN + ((((col >> 2) ^ (row & 7))) << 2) + (col & 3)) * 4);
}

// grad_{q,k}_norm_weight[d] = Σ_q partials[q][d] for this CTA's slice of the 512 values, by the
// 96 threads of warps 1-3 (f = 0..95): each thread sums rows f, f+96, ... of a chunk of 8 values
// (all loads in flight), then warp shuffles and a 3-way sum in shared memory. Fixed order:
// deterministic. Runs beside the mainloop, so it must not be slower than a short one.
__device__ __forceinline__ void finalize_norm_weight(const Params& p, float* fin, int f) {
  const int per = (2 * kD + gridDim.x - 1) / gridDim.x;
  const int d0 = blockIdx.x * per;
  const int d1 = min(2 * kD, d0 + per);
  const int lane = f & 31;
  const int wq = f >> 5;  // 0..2
  for (int dc = d0; dc < d1; dc += 8) {
    float acc[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] = 0.f;
#pragma unroll 4
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
    named_barrier_sync(2, 96);  // fin is reused by the next chunk
  }
}

// Unsplit tiles skip the fp32 partial: a thread's fragment values of 8-column group j (tile rows
// `row` and `row + 8`) go straight into a bf16 staging tile of 64x64 boxes ([64 rows][128 bytes],
// 128-byte swizzled as the TMA store expects).
__device__ __forceinline__ void stage_put(uint8_t* stage, int row, int j, int lane, float a, float b,
                                          float c, float d) {
  const int cb = j >> 3;
  const int chunk = j & 7;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int rr = row + 8 * h;
    const int rin = rr & 63;
    uint8_t* box = stage + ((rr >> 6) * 2 + cb) * kBox;
    const uint32_t off = rin * 128 + ((chunk ^ (rin & 7)) << 4) + (lane & 3) * 4;
    *reinterpret_cast<__nv_bfloat162*>(box + off) = h ? __floats2bfloat162_rn(c, d) : __floats2bfloat162_rn(a, b);
  }
}

// Row r of the output matrix a tile belongs to (dX, or dW split over its three tensors).
__device__ __forceinline__ __nv_bfloat16* out_row(const Params& p, int is_w, int r) {
  if (!is_w) return p.dx + static_cast<int64_t>(r) * kHidden;
  if (r < 1024) return p.dwq + static_cast<int64_t>(r) * kHidden;
  if (r < kQK) return p.dwk + static_cast<int64_t>(r - 1024) * kHidden;
  return p.dwv + static_cast<int64_t>(r - kQK) * kHidden;
}

// Sum rows [r0, r0 + rows) of the S partials of this tile's group (ranks grp_base.., in rank
// order: deterministic) and store them as bf16; rows at or past row_limit (dX past T) are skipped.
// 256 threads; each keeps 8 DSMEM loads in flight; a warp reads and writes whole 128-column rows.
template <int S>
__device__ __forceinline__ void reduce_store(const Params& p, const Work& w, uint32_t red_addr, int m0,
                                             int r0, int rows, int row_limit, int ctid) {
  constexpr int U = 8 / S;  // float4 units per thread and batch
  uint32_t peer[S];
#pragma unroll
  for (int q = 0; q < S; ++q) peer[q] = map_rank(red_addr, w.grp_base + q);
  const int units = rows * 32;  // 32 float4 units per 128-column row
  for (int u0 = ctid; u0 < units; u0 += 256 * U) {
    float4 v[U][S];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const int u = u0 + j * 256;
      if (u < units) {
        const int row = r0 + (u >> 5);
        const int c4 = u & 31;
        const uint32_t off = static_cast<uint32_t>((row * kBN + ((c4 ^ (row & 7)) << 2)) * 4);
#pragma unroll
        for (int q = 0; q < S; ++q) v[j][q] = ld_dsmem_f4(peer[q] + off);
      }
    }
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const int u = u0 + j * 256;
      const int row = r0 + (u >> 5);
      if (u >= units || row >= row_limit) continue;
      float4 s = v[j][0];
#pragma unroll
      for (int q = 1; q < S; ++q) {
        s.x += v[j][q].x;
        s.y += v[j][q].y;
        s.z += v[j][q].z;
        s.w += v[j][q].w;
      }
      uint2 packed;
      *reinterpret_cast<__nv_bfloat162*>(&packed.x) = __floats2bfloat162_rn(s.x, s.y);
      *reinterpret_cast<__nv_bfloat162*>(&packed.y) = __floats2bfloat162_rn(s.z, s.w);
      *reinterpret_cast<uint2*>(out_row(p, w.is_w, m0 + row) + w.nt * kBN + (u & 31) * 4) = packed;
    }
  }
}

// Fused mode, norm CTAs. Work unit = (token block tb of 64 tokens, head h): 64 rows of g and of
// x̂ (512 bytes each, contiguous within a batch), copied by the bulk-copy engine into a 3-deep
// ring of 64 KiB slots (one thread issues, so ~192 KiB per SM are in flight: the norm is
// DRAM-bound, and registers alone could not keep that much in flight). Units go to the norm CTAs
// round-robin in token-block order; 8 compute warps take 8 rows each, write GQK rows, and publish
// them (visible to other SMs' TMA loads) by adding their row count to flags[tb].
// Norm-weight partials: one row per norm CTA; the last CTA to finish sums them in a fixed order.
constexpr int kNormSlots = 3;
constexpr int kUnitBytes = kTB * kD * 2;  // 32 KiB of g (and as much of x̂) per unit

__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}

__device__ void norm_role(const Params& p, uint8_t* smem) {
  const NormArgs& a = p.na;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int tokens = p.tokens;
  const int ntb = (tokens + kTB - 1) / kTB;
  const int units = ntb * kQKHeads;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kNormSlots * 2 * kUnitBytes);
  uint64_t* empty = full + kNormSlots;
  if (a.timeline != nullptr && threadIdx.x == 0) {
    a.timeline[4 * blockIdx.x] = globaltimer();
    a.timeline[4 * blockIdx.x + 2] = smid();
  }
  if (threadIdx.x == 0) {
    for (int i = 0; i < kNormSlots; ++i) {
      mbar_init(&full[i], 1);
      mbar_init(&empty[i], 8);  // lane 0 of each compute warp
    }
    fence_barrier_init();
  }
  __syncthreads();

  constexpr int kComputeWarp0 = 4;  // warps 4..11 compute; warp 0 lane 0 copies
  float accq[8], acck[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) accq[i] = acck[i] = 0.f;

  if (warp == 0 && lane == 0) {
    int slot = 0;
    uint32_t phase = 0;
    for (int u = blockIdx.x; u < units; u += p.norm_ctas) {
      mbar_wait(&empty[slot], phase ^ 1);
      const int tb = u / kQKHeads;
      const int h = u - tb * kQKHeads;
      const int t0 = tb * kTB;
      const int n = min(kTB, tokens - t0);
      mbar_expect_tx(&full[slot], static_cast<uint32_t>(n) * 2 * kD * 2);
      uint8_t* sg = smem + slot * 2 * kUnitBytes;
      uint8_t* sx = sg + kUnitBytes;
      for (int t = t0; t < t0 + n;) {  // one copy per run of tokens inside one batch
        const int bb = t / a.seq;
        const int ss = t - bb * a.seq;
        const int len = min(t0 + n - t, a.seq - ss);
        const int64_t row = h < 4 ? static_cast<int64_t>(bb * 4 + h) * a.seq + ss : static_cast<int64_t>(bb) * a.seq + ss;
        const uint32_t bytes = static_cast<uint32_t>(len) * kD * 2;
        bulk_copy_g2s(sg + (t - t0) * kD * 2, (h < 4 ? a.grad_query : a.grad_key) + row * kD, bytes, &full[slot]);
        bulk_copy_g2s(sx + (t - t0) * kD * 2, (h < 4 ? a.q_normed : a.k_normed) + row * kD, bytes, &full[slot]);
        t += len;
      }
      if (++slot == kNormSlots) {
        slot = 0;
        phase ^= 1;
      }
    }
  } else if (warp >= kComputeWarp0) {
    const int cw = warp - kComputeWarp0;  // rows [cw*8, cw*8+8) of each unit
    float w1q[8], w1k[8];
    norm_scales(a, lane, w1q, w1k);
    // rstd of this warp's 8 rows: lane i < 8 loads row i's, one unit ahead (a DRAM round trip
    // per unit would otherwise sit on the critical path).
    auto load_rstd = [&](int u) -> float {
      if (u >= units || lane >= 8) return 0.f;
      const int tb = u / kQKHeads;
      const int h = u - tb * kQKHeads;
      const int t = tb * kTB + cw * 8 + lane;
      if (t >= tokens) return 0.f;
      const int bb = t / a.seq;
      const int ss = t - bb * a.seq;
      return h < 4 ? __ldg(a.q_rstd + static_cast<int64_t>(bb * 4 + h) * a.seq + ss)
                   : __ldg(a.k_rstd + static_cast<int64_t>(bb) * a.seq + ss);
    };
    float rstd_next = load_rstd(blockIdx.x);
    int slot = 0;
    uint32_t phase = 0;
    for (int u = blockIdx.x; u < units; u += p.norm_ctas) {
      const int tb = u / kQKHeads;
      const int h = u - tb * kQKHeads;
      const int t0 = tb * kTB;
      const int n = min(kTB, tokens - t0);
      const float rstd_cur = rstd_next;
      rstd_next = load_rstd(u + p.norm_ctas);
      mbar_wait(&full[slot], phase);
      const uint8_t* sg = smem + slot * 2 * kUnitBytes;
      const uint8_t* sx = sg + kUnitBytes;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        Row rr[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int r = cw * 8 + half * 4 + i;
          rr[i].head = -1;
          rr[i].rstd = __shfl_sync(0xffffffffu, rstd_cur, half * 4 + i);
          if (r < n) {
            rr[i].head = h;
            rr[i].token = t0 + r;
            rr[i].g = *reinterpret_cast<const uint4*>(sg + r * kD * 2 + lane * 16);
            rr[i].x = *reinterpret_cast<const uint4*>(sx + r * kD * 2 + lane * 16);
          }
        }
        float dot[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) dot[i] = row_dot(rr[i], w1q, w1k, accq, acck);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
#pragma unroll
          for (int i = 0; i < 4; ++i) dot[i] += __shfl_xor_sync(0xffffffffu, dot[i], o);
#pragma unroll
        for (int i = 0; i < 4; ++i) row_store(a, rr[i], dot[i], lane);
      }
      // Publish: every lane's stores reach the GPU and the async proxy before the count does.
      if (!p.dbg_no_fence) {
        __threadfence();
        fence_proxy_async_global();
      }
      __syncwarp();
      if (lane == 0) {
        const int done = min(8, n - cw * 8);
        if (done > 0) atomicAdd(p.flags + tb, done);
        mbar_arrive(&empty[slot]);
      }
      if (++slot == kNormSlots) {
        slot = 0;
        phase ^= 1;
      }
    }
  }
  // Norm-weight partials of this CTA (the ring is idle now: every copy was consumed).
  __syncthreads();
  float* red = reinterpret_cast<float*>(smem);
  if (warp >= kComputeWarp0) {
    const int cw = warp - kComputeWarp0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      red[cw * 2 * kD + lane * 8 + i] = accq[i];
      red[cw * 2 * kD + kD + lane * 8 + i] = acck[i];
    }
  }
  __syncthreads();
  float* partials = const_cast<float*>(p.norm_partials);
  for (int d = threadIdx.x; d < 2 * kD; d += kThreads) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < 8; ++w) sum += red[w * 2 * kD + d];
    partials[static_cast<int64_t>(blockIdx.x) * 2 * kD + d] = sum;
  }
  __threadfence();
  __syncthreads();
  if (a.timeline != nullptr && threadIdx.x == 0) a.timeline[4 * blockIdx.x + 1] = globaltimer();
  int* last = reinterpret_cast<int*>(red + 8 * 2 * kD);
  if (threadIdx.x == 0) *last = atomicAdd(p.flags + ntb, 1) == p.norm_ctas - 1;
  __syncthreads();
  if (*last) {
    __threadfence();
    for (int d = threadIdx.x; d < 2 * kD; d += kThreads) {
      float sum = 0.f;
      for (int q = 0; q < p.norm_ctas; ++q) sum += __ldcg(partials + static_cast<int64_t>(q) * 2 * kD + d);
      if (d < kD) p.dq_norm[d] = sum; else p.dk_norm[d - kD] = sum;
    }
  }
}

template <int WM>
__global__ void __launch_bounds__(kThreads, 1)
    cluster_gemm_kernel(const __grid_constant__ CUtensorMap tm_g, const __grid_constant__ CUtensorMap tm_v,
                        const __grid_constant__ CUtensorMap tm_x, const __grid_constant__ CUtensorMap tm_wq,
                        const __grid_constant__ CUtensorMap tm_wk, const __grid_constant__ CUtensorMap tm_wv,
                        const __grid_constant__ CUtensorMap tm_dx, const __grid_constant__ CUtensorMap tm_dwq,
                        const __grid_constant__ CUtensorMap tm_dwk, const __grid_constant__ CUtensorMap tm_dwv,
                        const Params p) {
  constexpr int R = WM / 64;  // m64 blocks per consumer warpgroup
  constexpr int BM = 2 * WM;  // CTA tile rows
  constexpr int A_BYTES = BM * kBK * 2;
  constexpr int B_BYTES = kBK * kBN * 2;
  constexpr int STAGES = (WM == 64) ? 6 : 4;
  constexpr uint32_t STAGE_TX = A_BYTES + B_BYTES;
  static_assert(BM * kBN * 4 <= STAGES * (A_BYTES + B_BYTES), "partial tile must fit in the stages");
  static_assert(kNormSlots * 2 * kUnitBytes <= STAGES * (A_BYTES + B_BYTES), "norm ring must fit in the stages");

  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* smem_a = smem;
  uint8_t* smem_b = smem + STAGES * A_BYTES;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * (A_BYTES + B_BYTES));
  uint64_t* empty = full + STAGES;
  float* fin = reinterpret_cast<float*>(empty + STAGES);  // [3][8] norm-weight finalize
  // After the mainloop the stages hold this CTA's fp32 partial tile (all loads were consumed).
  uint8_t* red = smem;

  if (static_cast<int>(blockIdx.x) < p.norm_ctas) {
    norm_role(p, smem);
    return;
  }
  if (p.dbg_norm_only) return;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const Work w = decode_work(p);
  const int nkb = w.valid ? w.kb1 - w.kb0 : 0;
  const int m0 = w.mt * BM;
  unsigned long long* tl = p.timeline ? p.timeline + static_cast<int64_t>(blockIdx.x) * kStamps : nullptr;
  if (tl && threadIdx.x == 0) {
    tl[0] = globaltimer();
    tl[1] = smid();
    tl[9] = nkb;
    tl[10] = w.is_w;
  }

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 8);  // lane 0 of each consumer warp
    }
    fence_barrier_init();
    tma_prefetch_desc(&tm_g);
    tma_prefetch_desc(&tm_v);
    tma_prefetch_desc(&tm_x);
    tma_prefetch_desc(&tm_wq);
    tma_prefetch_desc(&tm_wk);
    tma_prefetch_desc(&tm_wv);
    tma_prefetch_desc(w.is_w ? (m0 < 1024 ? &tm_dwq : (m0 < kQK ? &tm_dwk : &tm_dwv)) : &tm_dx);
  }
  __syncthreads();

  if (warp < 4) {
    // ------------------------------------------------------------ producer warpgroup
    if (warp == 0 && lane == 0 && nkb > 0) {
      auto load_a = [&](int kb, int st) {
        uint8_t* a = smem_a + st * A_BYTES;
        if (w.is_w) {
          // A = Gᵀ: G columns [m0, m0+BM) (M), G rows [kb*64, +64) (K); GV read in place.
#pragma unroll
          for (int c = 0; c < BM / 64; ++c) {
            const int col = m0 + c * 64;
            if (col < kQK) tma_load_2d(a + c * kBox, &tm_g, &full[st], col, kb * kBK);
            else tma_load_2d(a + c * kBox, &tm_v, &full[st], col - kQK, kb * kBK);
          }
        } else {
          // A = G rows [m0, m0+BM) (M), columns [kb*64, +64) (K)
#pragma unroll
          for (int c = 0; c < BM / 64; ++c) {
            if (kb < kKBQK) tma_load_2d(a + c * kBox, &tm_g, &full[st], kb * kBK, m0 + c * 64);
            else tma_load_2d(a + c * kBox, &tm_v, &full[st], (kb - kKBQK) * kBK, m0 + c * 64);
          }
        }
      };
      auto load_b = [&](int kb, int st) {
        uint8_t* b = smem_b + st * B_BYTES;
        if (w.is_w) {
          // B = X rows [kb*64, +64) (K), columns [nt*128, +128) (N)
#pragma unroll
          for (int c = 0; c < 2; ++c) tma_load_2d(b + c * kBox, &tm_x, &full[st], w.nt * kBN + c * 64, kb * kBK);
        } else {
          // B = rows [kb*64, +64) of [Wq;Wk;Wv] (K), columns [nt*128, +128) (N)
          const CUtensorMap* wmap = kb < 16 ? &tm_wq : (kb < 20 ? &tm_wk : &tm_wv);
          const int wrow = (kb < 16 ? kb : (kb < 20 ? kb - 16 : kb - 20)) * kBK;
#pragma unroll
          for (int c = 0; c < 2; ++c) tma_load_2d(b + c * kBox, wmap, &full[st], w.nt * kBN + c * 64, wrow);
        }
      };
      // W, X and GV are inputs: fetch the B tiles of the first stages (and everything of a
      // V-only tile) before waiting for the norm kernel; only GQK loads wait for it.
      const bool reads_gqk = w.is_w ? (m0 < kQK) : (w.kb0 < kKBQK);
      const bool fused = p.norm_ctas > 0;
      // Fused mode: a dW tile waits for each token block (= k-block) it reads, a dX tile once for
      // the token blocks of its rows.
      const bool wait_per_kb = fused && reads_gqk && w.is_w;
      const int npre = min(STAGES, nkb);
      for (int i = 0; i < npre; ++i) {
        mbar_expect_tx(&full[i], STAGE_TX);
        load_b(w.kb0 + i, i);
      }
      if (tl) tl[2] = globaltimer();
      if (reads_gqk && !fused) pdl_wait();
      if (reads_gqk && fused && !w.is_w)
        wait_token_blocks(p.flags, m0 / kTB, min((m0 + BM + kTB - 1) / kTB, (p.tokens + kTB - 1) / kTB), p.tokens);
      if (tl) tl[3] = globaltimer();
      for (int i = 0; i < npre; ++i) {
        if (wait_per_kb) wait_token_blocks(p.flags, w.kb0 + i, w.kb0 + i + 1, p.tokens);
        load_a(w.kb0 + i, i);
      }
      int stage = npre % STAGES;
      uint32_t phase = npre == STAGES ? 1 : 0;
      for (int kb = w.kb0 + npre; kb < w.kb1; ++kb) {
        mbar_wait(&empty[stage], phase ^ 1);
        mbar_expect_tx(&full[stage], STAGE_TX);
        if (wait_per_kb) wait_token_blocks(p.flags, kb, kb + 1, p.tokens);
        load_a(kb, stage);
        load_b(kb, stage);
        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
      }
    } else if (warp >= 1 && p.norm_parts > 0 && p.norm_ctas == 0) {
      pdl_wait();
      finalize_norm_weight(p, fin, threadIdx.x - 32);
    }
    // A cluster holds tiles of one kind, so all its CTAs agree on grp_size.
    if (w.grp_size > 1) {
      cluster_sync_all();  // partials written (consumers of every CTA in the cluster)
      cluster_sync_all();  // partials read: shared memory may go
    }
    return;
  }

  // -------------------------------------------------------------- consumer warpgroups
  const int wg = (threadIdx.x >> 7) - 1;  // 0 or 1
  const int ctid = threadIdx.x - 128;     // 0..255
  float acc[R][64];
  const bool rec = tl != nullptr && threadIdx.x == 128;
  if (rec && nkb > 0) {
    mbar_wait(&full[0], 0);
    tl[4] = globaltimer();
  }
  if (nkb > 0) {
    if (w.is_w) mainloop<R, 1, STAGES, A_BYTES, B_BYTES>(acc, w.kb0, w.kb1, smem_a, smem_b, full, empty, wg, lane);
    else mainloop<R, 0, STAGES, A_BYTES, B_BYTES>(acc, w.kb0, w.kb1, smem_a, smem_b, full, empty, wg, lane);
  } else {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int j = 0; j < 64; ++j) acc[r][j] = 0.f;
  }
  if (rec) tl[5] = globaltimer();
  // Both warpgroups' wgmma reads of the stages are done before either overwrites them.
  named_barrier_sync(1, 256);
  const int frow = wg * WM + (warp & 3) * 16 + (lane >> 2);  // tile row of this thread's fragment
  if (w.grp_size == 1) {
    // Unsplit tile: bf16 staging tile in the stages, then TMA stores (rows past T are clipped).
    if (w.valid) {
      uint8_t* stage = smem;
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int j = 0; j < 16; ++j)
          stage_put(stage, frow + r * 64, j, lane, acc[r][4 * j], acc[r][4 * j + 1], acc[r][4 * j + 2],
                    acc[r][4 * j + 3]);
      fence_proxy_async_shared();
      named_barrier_sync(1, 256);
      if (rec) tl[6] = globaltimer();
      if (ctid == 0) {
        const CUtensorMap* map = w.is_w ? (m0 < 1024 ? &tm_dwq : (m0 < kQK ? &tm_dwk : &tm_dwv)) : &tm_dx;
        const int row0 = w.is_w ? (m0 < 1024 ? m0 : (m0 < kQK ? m0 - 1024 : m0 - kQK)) : m0;
#pragma unroll
        for (int rb = 0; rb < BM / 64; ++rb) {
          if (!w.is_w && m0 + rb * 64 >= p.tokens) break;  // rows past T: nothing to store
#pragma unroll
          for (int cb = 0; cb < 2; ++cb) tma_store_2d(map, stage + (rb * 2 + cb) * kBox, w.nt * kBN + cb * 64, row0 + rb * 64);
        }
        bulk_commit();
        bulk_wait_read0();  // the staging tile must outlive the reads of the stores
      }
    }
    if (rec) tl[7] = tl[8] = globaltimer();
    return;
  }
  // Split tile: fp32 partial into this CTA's shared memory, summed across the group via DSMEM.
  if (w.valid) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const int row = frow + r * 64;
        const int col = j * 8 + (lane & 3) * 2;
        *reinterpret_cast<float2*>(red + red_offset(row, col)) = make_float2(acc[r][4 * j], acc[r][4 * j + 1]);
        *reinterpret_cast<float2*>(red + red_offset(row + 8, col)) = make_float2(acc[r][4 * j + 2], acc[r][4 * j + 3]);
      }
  }
  cluster_sync_all();
  if (rec) tl[6] = globaltimer();
  if (w.valid) {
    const int row_limit = w.is_w ? BM : min(BM, p.tokens - m0);
    const int rows = BM / w.grp_size;
    const int r0 = w.grp_idx * rows;
    const uint32_t red_addr = smem_u32(red);
    switch (w.grp_size) {
      case 2: reduce_store<2>(p, w, red_addr, m0, r0, rows, row_limit, ctid); break;
      case 4: reduce_store<4>(p, w, red_addr, m0, r0, rows, row_limit, ctid); break;
      default: reduce_store<8>(p, w, red_addr, m0, r0, rows, row_limit, ctid); break;
    }
  }
  if (rec) tl[7] = globaltimer();
  cluster_sync_all();
  if (rec) tl[8] = globaltimer();
}

// ---------------------------------------------------------------- host side

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    cudaDriverEntryPointQueryResult q;
    void* ptr = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &q) ==
            cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(ptr);
  });
  return fn;
}

// 2-D bf16 row-major [rows, cols] with a row stride of `stride` elements, 64x64 boxes, 128-byte
// swizzle, zero fill out of bounds.
bool make_map(CUtensorMap* map, const void* ptr, int64_t rows, int64_t cols, int64_t stride) {
  auto fn = encode_fn();
  if (!fn) return false;
  cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride * 2)};
  cuuint32_t box[2] = {64, 64};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(ptr), dims, strides, box, estr,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

int smem_bytes(int bm) {
  const int stages = bm == 128 ? 6 : 4;
  return stages * (bm * kBK * 2 + kBK * kBN * 2) + 1024 + 512;
}

template <int WM>
void* kernel_ptr() {
  return reinterpret_cast<void*>(cluster_gemm_kernel<WM>);
}

// The dynamic shared-memory limit, raised once per device and tile size.
cudaError_t ensure_smem_attr(int bm) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, bool> done;
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  std::lock_guard<std::mutex> lock(mu);
  if (done.count({dev, bm})) return cudaSuccess;
  err = cudaFuncSetAttribute(bm == 128 ? kernel_ptr<64>() : kernel_ptr<128>(),
                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes(bm));
  if (err == cudaSuccess) done[{dev, bm}] = true;
  return err;
}

struct Plan {
  int bm, cl, sw, sx, x_first, norm_ctas;
  int tokens, kbw, nwt, nxt, ncw, ncx, grid, norm_blocks;
};

// grid counts every CTA launched (the norm CTAs of fused mode too); norm_blocks = rows of the
// norm-weight partials (norm kernel blocks, or the norm CTAs in fused mode).
Plan shape_plan(int tokens, int num_sms, int bm, int cl, int sw, int sx, int x_first, int norm_ctas) {
  Plan p{};
  p.norm_ctas = (norm_ctas + cl - 1) / cl * cl;  // whole clusters
  p.bm = bm;
  p.cl = cl;
  p.sw = sw;
  p.sx = sx;
  p.x_first = x_first;
  p.tokens = tokens;
  p.kbw = (tokens + kBK - 1) / kBK;
  p.nwt = (kGCols / bm) * kNT;
  p.nxt = ((tokens + bm - 1) / bm) * kNT;
  p.ncw = (p.nwt + cl / sw - 1) / (cl / sw);
  p.ncx = (p.nxt + cl / sx - 1) / (cl / sx);
  p.grid = (p.ncw + p.ncx) * cl + p.norm_ctas;
  p.norm_blocks = p.norm_ctas > 0 ? p.norm_ctas : norm_shape(tokens, num_sms).grid;
  return p;
}

// The plan for T tokens, from measurements on the H200 (kernels/BENCHMARKS.md, the plan sweep of
// kernels/bench/cluster_check.py: every plan at every distinct T of the 16 cases): the fastest
// plan per range of T. Few tokens: dX (K = 1536) split over a cluster, dW (K = T) not; ~1k
// tokens: no split; more: 256-row tiles with split dW.
struct TableRow {
  int max_tokens, bm, cl, sw, sx, x_first, norm_ctas;
};
constexpr TableRow kPlanTable[] = {
    {384, 128, 4, 1, 4, 1, 0},
    {768, 128, 2, 1, 2, 1, 0},
    {1792, 128, 1, 1, 1, 1, 0},
    {3072, 256, 4, 2, 1, 1, 0},
    {6144, 128, 1, 1, 1, 0, 0},
    {1 << 30, 256, 4, 2, 1, 0, 0},
};

Plan make_plan(int tokens, int num_sms, const int* forced) {
  if (forced != nullptr && forced[0] != 0)
    return shape_plan(tokens, num_sms, forced[0], forced[1], forced[2], forced[3], forced[4], forced[5]);
  for (const TableRow& r : kPlanTable)
    if (tokens <= r.max_tokens)
      return shape_plan(tokens, num_sms, r.bm, r.cl, r.sw, r.sx, r.x_first, r.norm_ctas);
  return shape_plan(tokens, num_sms, 128, 1, 1, 1, 0, 0);
}

bool valid_forced(const int* f) {
  if (f == nullptr || f[0] == 0) return true;
  const int bm = f[0], cl = f[1], sw = f[2], sx = f[3];
  auto pow2 = [](int v) { return v == 1 || v == 2 || v == 4 || v == 8; };
  return (bm == 128 || bm == 256) && pow2(cl) && pow2(sw) && pow2(sx) && sw <= cl && sx <= cl &&
         (f[4] == 0 || f[4] == 1) && f[5] >= 0 && f[5] <= 1024;
}

}  // namespace
}  // namespace kidxc

extern "C" {

// forced: NULL or 6 ints {bm, cluster, sw, sx, x_first, norm CTAs (0: two kernels)} (bm 0 = the
// planner's choice). out[0..11]: bm, cluster, sw, sx, x_first, grid, ncw, ncx, nwt, nxt, norm
// blocks (partials rows), norm CTAs (fused mode; 0 = separate norm kernel).
// Returns the number of values written, or -1 for bad arguments.
int kidxc_plan(long long tokens, int num_sms, const int* forced, long long* out, int nout) {
  using namespace kidxc;
  if (tokens < 1 || tokens >= (1LL << 30) || num_sms < 1 || nout < 12 || !valid_forced(forced)) return -1;
  const Plan p = make_plan(static_cast<int>(tokens), num_sms, forced);
  const long long v[12] = {p.bm, p.cl, p.sw, p.sx, p.x_first, p.grid, p.ncw, p.ncx, p.nwt, p.nxt,
                           p.norm_blocks, p.norm_ctas};
  for (int i = 0; i < 12; ++i) out[i] = v[i];
  return 12;
}

// args (device pointers, then ints), in this order:
//  0 grad_query 1 grad_key 2 grad_value 3 hidden_states 4 q_weight 5 k_weight 6 v_weight
//  7 q_norm_weight 8 k_norm_weight 9 q_rstd 10 k_rstd 11 q_normed 12 k_normed
//  13 grad_hidden 14 grad_q_weight 15 grad_k_weight 16 grad_v_weight 17 grad_q_norm_weight
//  18 grad_k_norm_weight 19 gqk [T,1280] 20 norm partials [norm blocks,512]
//  21 batch 22 seq 23 num_sms 24..29 forced plan (bm 0 = auto) 30 flags (bit 0: PDL;
//  debug bits, timing parts only, results wrong or unreliable: bit 1 skip the norm kernel,
//  bit 2 skip the GEMM kernel (two-kernel plans); bit 3 publish norm rows without fences,
//  bit 4 GEMM CTAs exit at once (fused plans)) 31 token-block flags [ceil(T/64) + 1] int32,
//  zeroed (fused plans; else 0)
//  [32 debug: norm timeline [norm blocks][4] u64 or 0, 33 GEMM timeline [grid][12] u64 or 0:
//   0 entry, 1 SM, 2 B tiles issued, 3 norm wait returned, 4 first k-block arrived, 5 mainloop
//   done, 6 partials visible in the cluster, 7 sums stored, 8 exit, 9 k-blocks, 10 is dW]
// Returns a cudaError_t value (0 = success), -1 when a tensor map could not be encoded, -2 for
// bad arguments.
int kidxc_launch(const unsigned long long* a, int n, void* stream_ptr) {
  using namespace kidxc;
  if (n < 32) return -2;
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_ptr);
  auto bf = [&](int i) { return reinterpret_cast<__nv_bfloat16*>(a[i]); };
  const int batch = static_cast<int>(a[21]);
  const int seq = static_cast<int>(a[22]);
  const int sms = static_cast<int>(a[23]);
  int forced[6];
  for (int i = 0; i < 6; ++i) forced[i] = static_cast<int>(a[24 + i]);
  const int flags = static_cast<int>(a[30]);
  int* token_flags = reinterpret_cast<int*>(a[31]);
  const int64_t tokens = static_cast<int64_t>(batch) * seq;
  if (batch < 1 || seq < 1 || tokens >= (1LL << 30) || sms < 1 || !valid_forced(forced)) return -2;
  const Plan plan = make_plan(static_cast<int>(tokens), sms, forced);

  NormArgs na;
  na.grad_query = bf(0);
  na.grad_key = bf(1);
  na.q_normed = bf(11);
  na.k_normed = bf(12);
  na.q_norm_weight = bf(7);
  na.k_norm_weight = bf(8);
  na.q_rstd = reinterpret_cast<const float*>(a[9]);
  na.k_rstd = reinterpret_cast<const float*>(a[10]);
  na.g = bf(19);
  na.partials = reinterpret_cast<float*>(a[20]);
  na.batch = batch;
  na.seq = seq;
  na.timeline = n > 32 ? reinterpret_cast<unsigned long long*>(a[32]) : nullptr;
  const bool fused = plan.norm_ctas > 0;
  if (fused && token_flags == nullptr) return -2;
  const bool run_norm = !(flags & 2) || fused;
  const bool run_gemm = !(flags & 4) || fused;
  // Encode the GEMM's tensor maps first: the two launches then follow each other closely.
  CUtensorMap tm_g, tm_v, tm_x, tm_wq, tm_wk, tm_wv, tm_dx, tm_dwq, tm_dwk, tm_dwv;
  if (!make_map(&tm_g, bf(19), tokens, kQK, kQK) || !make_map(&tm_v, bf(2), tokens, kD, kD) ||
      !make_map(&tm_x, bf(3), tokens, kHidden, kHidden) || !make_map(&tm_wq, bf(4), 1024, kHidden, kHidden) ||
      !make_map(&tm_wk, bf(5), 256, kHidden, kHidden) || !make_map(&tm_wv, bf(6), 256, kHidden, kHidden) ||
      !make_map(&tm_dx, bf(13), tokens, kHidden, kHidden) || !make_map(&tm_dwq, bf(14), 1024, kHidden, kHidden) ||
      !make_map(&tm_dwk, bf(15), 256, kHidden, kHidden) || !make_map(&tm_dwv, bf(16), 256, kHidden, kHidden))
    return -1;
  if (run_norm && !fused) {
    switch (norm_shape(static_cast<int>(tokens), sms).rpw) {
      case 4: norm_qk_kernel<4, 2><<<plan.norm_blocks, kNormThreads, 0, stream>>>(na); break;
      case 2: norm_qk_kernel<2, 3><<<plan.norm_blocks, kNormThreads, 0, stream>>>(na); break;
      default: norm_qk_kernel<1, 3><<<plan.norm_blocks, kNormThreads, 0, stream>>>(na); break;
    }
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  if (!run_gemm) return 0;


  Params p;
  p.dx = bf(13);
  p.dwq = bf(14);
  p.dwk = bf(15);
  p.dwv = bf(16);
  p.norm_partials = reinterpret_cast<const float*>(a[20]);
  p.norm_parts = run_norm ? plan.norm_blocks : 0;
  p.dq_norm = reinterpret_cast<float*>(a[17]);
  p.dk_norm = reinterpret_cast<float*>(a[18]);
  p.tokens = static_cast<int>(tokens);
  p.kbw = plan.kbw;
  p.cl = plan.cl;
  p.sw = plan.sw;
  p.sx = plan.sx;
  p.nwt = plan.nwt;
  p.nxt = plan.nxt;
  p.ncw = plan.ncw;
  p.ncx = plan.ncx;
  p.x_first = plan.x_first;
  p.timeline = n > 33 ? reinterpret_cast<unsigned long long*>(a[33]) : nullptr;
  p.norm_ctas = plan.norm_ctas;
  p.dbg_no_fence = (flags & 8) ? 1 : 0;
  p.dbg_norm_only = (flags & 16) ? 1 : 0;
  p.flags = token_flags;
  p.na = na;

  cudaError_t err = ensure_smem_attr(plan.bm);
  if (err != cudaSuccess) return err;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(plan.grid);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem_bytes(plan.bm);
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = plan.cl;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = (flags & 1) && run_norm && !fused ? 2 : 1;
  if (plan.bm == 128)
    err = cudaLaunchKernelEx(&cfg, cluster_gemm_kernel<64>, tm_g, tm_v, tm_x, tm_wq, tm_wk, tm_wv, tm_dx, tm_dwq,
                             tm_dwk, tm_dwv, p);
  else
    err = cudaLaunchKernelEx(&cfg, cluster_gemm_kernel<128>, tm_g, tm_v, tm_x, tm_wq, tm_wk, tm_wv, tm_dx, tm_dwq,
                             tm_dwk, tm_dwv, p);
  if (err != cudaSuccess) return err;
  return cudaGetLastError();
}

const char* kidxc_error(int code) {
  if (code == -1) return "a tensor map could not be encoded (cuTensorMapEncodeTiled)";
  if (code == -2) return "bad launch arguments";
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

}  // extern "C"
