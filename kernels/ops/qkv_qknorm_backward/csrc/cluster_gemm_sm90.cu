// The cluster split-K wgmma GEMM of 051's backward on sm_90a: both GEMMs, one output tile per CTA
// group, split-K across the CTAs of a thread-block cluster, the partial tiles summed through
// distributed shared memory (DSMEM):
//   dX [T,640]    = [GQK|GV] [T,1536] · [Wq;Wk;Wv] [1536,640]   (A K-major, B MN-major)
//   dW [1536,640] = [GQK|GV]ᵀ [1536,T] · X [T,640]              (A MN-major, B MN-major)
// A cluster of C CTAs holds C/s output tiles, s CTAs per tile, each over 1/s of the k-blocks
// (s = sw for dW, sx for dX). After the mainloop every CTA writes its fp32 partial into its own
// shared memory, the cluster synchronizes, and CTA i of a tile's group sums rows
// [i·BM/s, (i+1)·BM/s) of all s partials (fixed order: deterministic) and stores bf16 (common/
// epilogue.cuh); an unsplit tile is staged as bf16 and stored by TMA. Non-persistent: no global
// workspace, no counters, nothing to zero between calls. GQK comes from the norm kernel launched
// just before (programmatic dependent launch): work that reads only GV and X/W (dW rows
// 1280..1535, and every B tile) does not wait for it.
//
// Warp roles per CTA (384 threads, all within the 168-register launch bound, so no setmaxnreg):
// warp 0 lane 0 issues TMA loads (128-byte swizzle, 64x64 boxes) into a STAGES-deep ring
// (common/pipeline.cuh); warps 1-3 sum the norm kernel's grad_norm_weight partials (a slice of the
// 512 values per CTA, fixed order); warpgroups 1 and 2 each compute BM/2 rows with wgmma
// m64n128k16 and then do the epilogue.
#include "cluster_gemm.h"

#include <stdint.h>

#include "common/epilogue.cuh"
#include "common/launch.cuh"
#include "common/pipeline.cuh"
#include "common/sm90.cuh"
#include "common/tensor_map.cuh"

namespace kidx {
namespace gemm {
namespace {

constexpr int kHidden = 640;
constexpr int kD = 256;
constexpr int kGCols = 1536;    // [GQ|GK|GV]
constexpr int kBN = kTileCols;  // 128
constexpr int kNT = kHidden / kBN;  // 5 column tiles
constexpr int kBK = 64;
constexpr int kKBX = kGCols / kBK;  // 24 k-blocks of dX
constexpr int kKBQK = kQK / kBK;    // 20 of them read GQ|GK
constexpr int kThreads = 384;

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
  unsigned long long* timeline;  // debug: [grid][kStamps] globaltimer stamps; or null
};
// What one CTA computes. Invalid CTAs (past the last tile of a partly filled cluster) only take
// part in the cluster barriers.
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


template <int R, int TA>
__device__ __forceinline__ void mma_kblock(float (&acc)[R][64], uint32_t a_base, uint32_t b_base, bool first) {
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const uint64_t db = make_desc_sw128(b_base + ks * 2048, kBoxBytes, 1024);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const uint32_t a_addr = TA ? (a_base + r * kBoxBytes + ks * 2048) : (a_base + r * kBoxBytes + ks * 32);
      const uint64_t da = TA ? make_desc_sw128(a_addr, kBoxBytes, 1024) : make_desc_sw128(a_addr, 16, 1024);
      wgmma_m64n128k16<TA, 1>(acc[r], da, db, (first && ks == 0) ? 0 : 1);
    }
  }
}

template <int R, int TA, int STAGES, int A_BYTES, int B_BYTES>
__device__ __forceinline__ void mainloop(float (&acc)[R][64], int kb0, int kb1, uint8_t* smem_a,
                                         uint8_t* smem_b, uint64_t* full, uint64_t* empty, int wg, int lane) {
  RingPos<STAGES> pos;
  int prev = -1;
  for (int kb = kb0; kb < kb1; ++kb) {
    mbar_wait(&full[pos.stage], pos.phase);
    wgmma_fence();
    const uint32_t a_base = smem_u32(smem_a + pos.stage * A_BYTES) + wg * R * kBoxBytes;
    const uint32_t b_base = smem_u32(smem_b + pos.stage * B_BYTES);
    mma_kblock<R, TA>(acc, a_base, b_base, kb == kb0);
    wgmma_commit();
    wgmma_wait<1>();
    // The previous stage's wgmma reads are done (at most this one is in flight): release it.
    if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
    prev = pos.stage;
    pos.advance();
  }
  wgmma_wait<0>();
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


// Row r of the output matrix a tile belongs to (dX, or dW split over its three tensors).
__device__ __forceinline__ __nv_bfloat16* out_row(const Params& p, int is_w, int r) {
  if (!is_w) return p.dx + static_cast<int64_t>(r) * kHidden;
  if (r < 1024) return p.dwq + static_cast<int64_t>(r) * kHidden;
  if (r < kQK) return p.dwk + static_cast<int64_t>(r - 1024) * kHidden;
  return p.dwv + static_cast<int64_t>(r - kQK) * kHidden;
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

  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* smem_a = smem;
  uint8_t* smem_b = smem + STAGES * A_BYTES;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * (A_BYTES + B_BYTES));
  uint64_t* empty = full + STAGES;
  float* fin = reinterpret_cast<float*>(empty + STAGES);  // [3][8] norm-weight finalize
  // After the mainloop the stages hold this CTA's fp32 partial tile (all loads were consumed).
  uint8_t* red = smem;

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
    ring_init<STAGES>(full, empty, 8);  // empty: lane 0 of each consumer warp
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
            if (col < kQK) tma_load_2d(a + c * kBoxBytes, &tm_g, &full[st], col, kb * kBK);
            else tma_load_2d(a + c * kBoxBytes, &tm_v, &full[st], col - kQK, kb * kBK);
          }
        } else {
          // A = G rows [m0, m0+BM) (M), columns [kb*64, +64) (K)
#pragma unroll
          for (int c = 0; c < BM / 64; ++c) {
            if (kb < kKBQK) tma_load_2d(a + c * kBoxBytes, &tm_g, &full[st], kb * kBK, m0 + c * 64);
            else tma_load_2d(a + c * kBoxBytes, &tm_v, &full[st], (kb - kKBQK) * kBK, m0 + c * 64);
          }
        }
      };
      auto load_b = [&](int kb, int st) {
        uint8_t* b = smem_b + st * B_BYTES;
        if (w.is_w) {
          // B = X rows [kb*64, +64) (K), columns [nt*128, +128) (N)
#pragma unroll
          for (int c = 0; c < 2; ++c) tma_load_2d(b + c * kBoxBytes, &tm_x, &full[st], w.nt * kBN + c * 64, kb * kBK);
        } else {
          // B = rows [kb*64, +64) of [Wq;Wk;Wv] (K), columns [nt*128, +128) (N)
          const CUtensorMap* wmap = kb < 16 ? &tm_wq : (kb < 20 ? &tm_wk : &tm_wv);
          const int wrow = (kb < 16 ? kb : (kb < 20 ? kb - 16 : kb - 20)) * kBK;
#pragma unroll
          for (int c = 0; c < 2; ++c) tma_load_2d(b + c * kBoxBytes, wmap, &full[st], w.nt * kBN + c * 64, wrow);
        }
      };
      // W, X and GV are inputs: fetch the B tiles of the first stages (and everything of a
      // V-only tile) before waiting for the norm kernel; only GQK loads wait for it.
      const bool reads_gqk = w.is_w ? (m0 < kQK) : (w.kb0 < kKBQK);
      const int npre = min(STAGES, nkb);
      for (int i = 0; i < npre; ++i) {
        mbar_expect_tx(&full[i], STAGE_TX);
        load_b(w.kb0 + i, i);
      }
      if (tl) tl[2] = globaltimer();
      if (reads_gqk) pdl_wait();
      if (tl) tl[3] = globaltimer();
      for (int i = 0; i < npre; ++i) load_a(w.kb0 + i, i);
      RingPos<STAGES> pos{npre % STAGES, npre == STAGES ? 1u : 0u};  // after the npre stages above
      for (int kb = w.kb0 + npre; kb < w.kb1; ++kb) {
        ring_acquire(full, empty, pos, STAGE_TX);
        load_a(kb, pos.stage);
        load_b(kb, pos.stage);
        pos.advance();
      }
    } else if (warp >= 1 && p.norm_parts > 0) {
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
          for (int cb = 0; cb < 2; ++cb) tma_store_2d(map, stage + (rb * 2 + cb) * kBoxBytes, w.nt * kBN + cb * 64, row0 + rb * 64);
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
    auto out = [&](int row) { return out_row(p, w.is_w, m0 + row) + w.nt * kBN; };
    switch (w.grp_size) {
      case 2: reduce_store<2>(red_addr, w.grp_base, r0, rows, row_limit, ctid, out); break;
      case 4: reduce_store<4>(red_addr, w.grp_base, r0, rows, row_limit, ctid, out); break;
      default: reduce_store<8>(red_addr, w.grp_base, r0, rows, row_limit, ctid, out); break;
    }
  }
  if (rec) tl[7] = globaltimer();
  cluster_sync_all();
  if (rec) tl[8] = globaltimer();
}


int smem_bytes(int bm) {
  const int stages = bm == 128 ? 6 : 4;
  return stages * (bm * kBK * 2 + kBK * kBN * 2) + 1024 + 512;
}

Plan shape_plan(int tokens, int bm, int cl, int sw, int sx, int x_first) {
  Plan p{};
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
  p.grid = (p.ncw + p.ncx) * cl;
  return p;
}

// The plan for T tokens, from measurements on the H200 (kernels/BENCHMARKS.md, the plan sweep of
// lab/qkv_qknorm_backward/cluster_check.py: every plan at every distinct T of the 16 cases): the fastest
// plan per range of T. Few tokens: dX (K = 1536) split over a cluster, dW (K = T) not; ~1k
// tokens: no split; more: 256-row tiles with split dW.
struct TableRow {
  int max_tokens, bm, cl, sw, sx, x_first;
};
constexpr TableRow kPlanTable[] = {
    {384, 128, 4, 1, 4, 1},
    {768, 128, 2, 1, 2, 1},
    {1792, 128, 1, 1, 1, 1},
    {3072, 256, 4, 2, 1, 1},
    {6144, 128, 1, 1, 1, 0},
    {1 << 30, 256, 4, 2, 1, 0},
};

template <int WM>
cudaError_t launch_as(const Plan& plan, const Maps& m, const Params& p, cudaStream_t stream, bool pdl) {
  const void* kernel = reinterpret_cast<const void*>(cluster_gemm_kernel<WM>);
  cudaError_t err = allow_dynamic_smem(kernel, smem_bytes(plan.bm));
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
  cfg.numAttrs = pdl ? 2 : 1;
  return launched(cudaLaunchKernelEx(&cfg, cluster_gemm_kernel<WM>, m.g, m.v, m.x, m.wq, m.wk, m.wv, m.dx, m.dwq,
                                     m.dwk, m.dwv, p));
}

}  // namespace

bool valid_forced(const int* f) {
  if (f == nullptr || f[0] == 0) return true;
  const int bm = f[0], cl = f[1], sw = f[2], sx = f[3];
  auto pow2 = [](int v) { return v == 1 || v == 2 || v == 4 || v == 8; };
  return (bm == 128 || bm == 256) && pow2(cl) && pow2(sw) && pow2(sx) && sw <= cl && sx <= cl &&
         (f[4] == 0 || f[4] == 1);
}

Plan make_plan(int tokens, const int* forced) {
  if (forced != nullptr && forced[0] != 0)
    return shape_plan(tokens, forced[0], forced[1], forced[2], forced[3], forced[4]);
  for (const TableRow& r : kPlanTable)
    if (tokens <= r.max_tokens) return shape_plan(tokens, r.bm, r.cl, r.sw, r.sx, r.x_first);
  return shape_plan(tokens, 128, 1, 1, 1, 0);
}

void plan_fields(const Plan& p, long long* out) {
  const long long v[kPlanFields] = {p.bm, p.cl, p.sw, p.sx, p.x_first, p.grid, p.ncw, p.ncx, p.nwt, p.nxt};
  for (int i = 0; i < kPlanFields; ++i) out[i] = v[i];
}

bool encode_maps(const Operands& o, Maps* m) {
  const int64_t t = o.tokens;
  return make_map(&m->g, o.gqk, t, kQK, kQK) && make_map(&m->v, o.gv, t, kD, kD) &&
         make_map(&m->x, o.x, t, kHidden, kHidden) && make_map(&m->wq, o.wq, 1024, kHidden, kHidden) &&
         make_map(&m->wk, o.wk, 256, kHidden, kHidden) && make_map(&m->wv, o.wv, 256, kHidden, kHidden) &&
         make_map(&m->dx, o.dx, t, kHidden, kHidden) && make_map(&m->dwq, o.dwq, 1024, kHidden, kHidden) &&
         make_map(&m->dwk, o.dwk, 256, kHidden, kHidden) && make_map(&m->dwv, o.dwv, 256, kHidden, kHidden);
}

cudaError_t launch(const Plan& plan, const Maps& maps, const Operands& o, cudaStream_t stream, bool pdl) {
  Params p{};
  p.dx = o.dx;
  p.dwq = o.dwq;
  p.dwk = o.dwk;
  p.dwv = o.dwv;
  p.norm_partials = o.norm_partials;
  p.norm_parts = o.norm_parts;
  p.dq_norm = o.dq_norm;
  p.dk_norm = o.dk_norm;
  p.tokens = o.tokens;
  p.kbw = plan.kbw;
  p.cl = plan.cl;
  p.sw = plan.sw;
  p.sx = plan.sx;
  p.nwt = plan.nwt;
  p.nxt = plan.nxt;
  p.ncw = plan.ncw;
  p.ncx = plan.ncx;
  p.x_first = plan.x_first;
  p.timeline = o.timeline;
  return plan.bm == 128 ? launch_as<64>(plan, maps, p, stream, pdl) : launch_as<128>(plan, maps, p, stream, pdl);
}

}  // namespace gemm
}  // namespace kidx
