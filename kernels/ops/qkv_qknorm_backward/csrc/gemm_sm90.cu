// One persistent wgmma kernel for both GEMMs of the backward (sm_90a):
//   dX [T,640]    = G [T,1536] · [Wq;Wk;Wv] [1536,640]   (A K-major, B MN-major)
//   dW [1536,640] = Gᵀ [1536,T] · X [T,640]              (A MN-major, B MN-major)
// Work items are 128-column output tiles of BM rows over a range of 64-deep k-blocks; a split
// tile's pieces write fp32 partials and the last piece to finish sums them in split order
// (deterministic) and writes bf16. Items are handed out dynamically (atomic counter, largest
// items first). Warp-specialized: warpgroup 0 loads with TMA (128-byte swizzle, 8 KiB boxes),
// warpgroups 1 and 2 each compute BM/2 rows with wgmma m64n128k16.
#include <cudaTypedefs.h>

#include <algorithm>
#include <mutex>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "launch.h"
#include "sm90_ptx.cuh"

namespace kidx {

namespace {

constexpr int kN = 640;       // hidden
constexpr int kGCols = 1536;  // [GQ|GK|GV]
constexpr int kBN = 128;
constexpr int kNT = kN / kBN;  // 5 column tiles
constexpr int kBK = 64;
constexpr int kKBX = kGCols / kBK;  // 24 k-blocks for dX
constexpr int kBox = 64 * 64 * 2;  // bytes of one TMA box
constexpr int kThreads = 384;

struct Params {
  __nv_bfloat16* dx;
  __nv_bfloat16* dwq;
  __nv_bfloat16* dwk;
  __nv_bfloat16* dwv;
  float* ws_w;
  float* ws_x;
  int* counters;  // [nwt + nxt] tile arrivals, then [1] scheduler
  const float* norm_partials;
  int norm_parts;
  float* dq_norm;
  float* dk_norm;
  unsigned long long* timeline;
  int spin;
  int tokens, mx, sx, kbw, sw, nwt, nxt, w_first;
};

struct Item {
  int is_w, mt, nt, kb0, kb1, split, nsplit, tile;  // tile: index among its kind's tiles
};

__device__ __forceinline__ Item decode_item(int i, const Params& p) {
  const int n_w = p.nwt * p.sw;
  const int n_x = p.nxt * p.sx;
  const int nfirst = p.w_first ? n_w : n_x;
  const bool first = i < nfirst;
  const int j = first ? i : i - nfirst;
  Item it;
  it.is_w = (first == static_cast<bool>(p.w_first)) ? 1 : 0;
  if (it.is_w) {
    it.tile = j / p.sw;
    it.split = j - it.tile * p.sw;
    it.nsplit = p.sw;
    it.kb0 = static_cast<int>(static_cast<int64_t>(it.split) * p.kbw / p.sw);
    it.kb1 = static_cast<int>(static_cast<int64_t>(it.split + 1) * p.kbw / p.sw);
  } else {
    it.tile = j / p.sx;
    it.split = j - it.tile * p.sx;
    it.nsplit = p.sx;
    it.kb0 = it.split * kKBX / p.sx;
    it.kb1 = (it.split + 1) * kKBX / p.sx;
  }
  it.mt = it.tile / kNT;
  it.nt = it.tile - it.mt * kNT;
  return it;
}

template <int R, int TA>
__device__ __forceinline__ void mma_kblock(float (&acc)[R][64], uint32_t a_base, uint32_t b_base,
                                           bool first) {
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

__device__ __forceinline__ void kwait(int spin, uint64_t* bar, uint32_t parity) {
  if (spin) mbar_wait_spin(bar, parity); else mbar_wait(bar, parity);
}

template <int R, int TA, int STAGES, int A_BYTES, int B_BYTES>
__device__ __forceinline__ void mainloop(float (&acc)[R][64], const Item& it, uint8_t* smem_a, uint8_t* smem_b,
    uint64_t* full, uint64_t* empty, int& stage, uint32_t& phase, int wg, int lane, int spin) {
    int prev = -1;
    for (int kb = it.kb0; kb < it.kb1; ++kb) {
      kwait(spin, &full[stage], phase);
      wgmma_fence();
      const uint32_t a_base = smem_u32(smem_a + stage * A_BYTES) + wg * R * kBox;
      const uint32_t b_base = smem_u32(smem_b + stage * B_BYTES);
      mma_kblock<R, TA>(acc, a_base, b_base, kb == it.kb0);
      wgmma_commit();
      wgmma_wait<1>();
      if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
      prev = stage;
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
    wgmma_wait<0>();
    if (lane == 0) mbar_arrive(&empty[prev]);
}

// Writes a thread's fragment values of 8-column group j (rows `row` and `row + 8` of the tile)
// into the staging tile: 64x64 boxes of [64 rows][128 bytes], 128-byte swizzled as TMA expects.
__device__ __forceinline__ void stage_put(uint8_t* smem_c, int row, int j, int lane, float4 v) {
  const int cb = j >> 3;
  const int chunk = j & 7;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int rr = row + 8 * h;
    const int rin = rr & 63;
    uint8_t* box = smem_c + ((rr >> 6) * 2 + cb) * kBox;
    const uint32_t off = rin * 128 + ((chunk ^ (rin & 7)) << 4) + (lane & 3) * 4;
    *reinterpret_cast<__nv_bfloat162*>(box + off) =
        h ? __floats2bfloat162_rn(v.z, v.w) : __floats2bfloat162_rn(v.x, v.y);
  }
}

template <int WM>
__global__ void __launch_bounds__(kThreads, 1)
    qkv_gemm_kernel(const __grid_constant__ CUtensorMap tm_g, const __grid_constant__ CUtensorMap tm_x,
                    const __grid_constant__ CUtensorMap tm_wq, const __grid_constant__ CUtensorMap tm_wk,
                    const __grid_constant__ CUtensorMap tm_wv, const __grid_constant__ CUtensorMap tm_dx,
                    const __grid_constant__ CUtensorMap tm_dwq, const __grid_constant__ CUtensorMap tm_dwk,
                    const __grid_constant__ CUtensorMap tm_dwv, const Params p) {
  constexpr int R = WM / 64;            // m64 blocks per consumer warpgroup
  constexpr int BM = 2 * WM;            // CTA tile rows
  constexpr int A_BYTES = BM * kBK * 2;
  constexpr int B_BYTES = kBK * kBN * 2;
  constexpr int STAGES = (WM == 64) ? 6 : 4;
  constexpr int NH = BM / 128;  // epilogue passes through the 128-row staging tile
  constexpr uint32_t STAGE_TX = A_BYTES + B_BYTES;

  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* smem_a = smem;
  uint8_t* smem_b = smem + STAGES * A_BYTES;
  uint8_t* smem_c = smem_b + STAGES * B_BYTES;  // bf16 output staging tile, 128 x 128
  uint64_t* full = reinterpret_cast<uint64_t*>(smem_c + 128 * kBN * 2);
  uint64_t* empty = full + STAGES;
  uint64_t* item_full = empty + STAGES;
  uint64_t* item_empty = item_full + 2;
  volatile int* item_slot = reinterpret_cast<volatile int*>(item_empty + 2);
  volatile int* last_flag = item_slot + 2;

  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int n_items = p.nwt * p.sw + p.nxt * p.sx;
  unsigned long long* tl = p.timeline ? p.timeline + blockIdx.x * kTimelineSlots : nullptr;
  if (tl && threadIdx.x == 0) tl[0] = globaltimer();

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 8);  // lane 0 of each consumer warp
    }
    for (int s = 0; s < 2; ++s) {
      mbar_init(&item_full[s], 1);
      mbar_init(&item_empty[s], 8);
    }
    fence_barrier_init();
    tma_prefetch_desc(&tm_g);
    tma_prefetch_desc(&tm_x);
    tma_prefetch_desc(&tm_wq);
    tma_prefetch_desc(&tm_wk);
    tma_prefetch_desc(&tm_wv);
    tma_prefetch_desc(&tm_dx);
    tma_prefetch_desc(&tm_dwq);
    tma_prefetch_desc(&tm_dwk);
    tma_prefetch_desc(&tm_dwv);
  }
  __syncthreads();
  // griddepcontrol.wait (pdl_wait) comes before anything that reads what the norm kernel writes
  // (G, counters, partials); the producer fetches its first W/X tiles before it.

  if (warp < 4) {
    // ------------------------------------------------------------ producer warpgroup
    setmaxnreg_dec<40>();
    if (warp == 0 && lane == 0) {
      int stage = 0;
      uint32_t phase = 0;
      int islot = 0;
      uint32_t iphase = 0;
      int* sched = p.counters + p.nwt + p.nxt;
      auto load_a = [&](const Item& it, int kb, int st) {
        uint8_t* a = smem_a + st * A_BYTES;
        if (it.is_w) {
          // A = Gᵀ tile: G columns [mt*BM, +BM) (MN), G rows [kb*64, +64) (K)
#pragma unroll
          for (int c = 0; c < BM / 64; ++c)
            tma_load_2d(a + c * kBox, &tm_g, &full[st], it.mt * BM + c * 64, kb * kBK);
        } else {
          // A = G rows [mt*BM, +BM) (M), columns [kb*64, +64) (K)
#pragma unroll
          for (int c = 0; c < BM / 64; ++c)
            tma_load_2d(a + c * kBox, &tm_g, &full[st], kb * kBK, it.mt * BM + c * 64);
        }
      };
      auto load_b = [&](const Item& it, int kb, int st) {
        uint8_t* b = smem_b + st * B_BYTES;
        if (it.is_w) {
          // B = X rows [kb*64, +64) (K), columns [nt*128, +128) (N)
#pragma unroll
          for (int c = 0; c < 2; ++c)
            tma_load_2d(b + c * kBox, &tm_x, &full[st], it.nt * kBN + c * 64, kb * kBK);
        } else {
          // B = W rows [kb*64, +64) (K) of the right weight, columns [nt*128, +128) (N)
          const CUtensorMap* wmap = kb < 16 ? &tm_wq : (kb < 20 ? &tm_wk : &tm_wv);
          const int wrow = (kb < 16 ? kb : (kb < 20 ? kb - 16 : kb - 20)) * kBK;
#pragma unroll
          for (int c = 0; c < 2; ++c)
            tma_load_2d(b + c * kBox, wmap, &full[st], it.nt * kBN + c * 64, wrow);
        }
      };
      // The first item is static (no atomic); later ones come from the counter, largest first.
      int item = static_cast<int>(blockIdx.x) < n_items ? static_cast<int>(blockIdx.x) : -1;
      bool first = true;
      while (true) {
        if (!first) {
          item = static_cast<int>(gridDim.x) + atomicAdd(sched, 1);
          if (item >= n_items) item = -1;
        }
        kwait(p.spin, &item_empty[islot], iphase ^ 1);
        item_slot[islot] = item;
        mbar_arrive(&item_full[islot]);
        if (++islot == 2) { islot = 0; iphase ^= 1; }
        if (item < 0) {
          if (tl) tl[46] = globaltimer();
          break;
        }
        const Item it = decode_item(item, p);
        int kb = it.kb0;
        if (first) {
          // W and X are inputs the norm kernel does not touch: fetch the first stages' B tiles
          // while it finishes, then wait for it and fetch the G tiles.
          const int npre = min(STAGES, it.kb1 - it.kb0);
          for (int i = 0; i < npre; ++i) {
            mbar_expect_tx(&full[i], STAGE_TX);
            load_b(it, it.kb0 + i, i);
          }
          pdl_wait();
          for (int i = 0; i < npre; ++i) load_a(it, it.kb0 + i, i);
          kb += npre;
          stage = npre % STAGES;
          phase = npre == STAGES ? 1 : 0;
          first = false;
        }
        for (; kb < it.kb1; ++kb) {
          kwait(p.spin, &empty[stage], phase ^ 1);
          mbar_expect_tx(&full[stage], STAGE_TX);
          load_a(it, kb, stage);
          load_b(it, kb, stage);
          if (++stage == STAGES) { stage = 0; phase ^= 1; }
        }
      }
    } else if (warp == 1) {
      pdl_wait();
      // grad_{q,k}_norm_weight = Σ over the norm kernel's block partials (fixed order).
      const int per = (2 * 256 + gridDim.x - 1) / gridDim.x;
      const int d0 = blockIdx.x * per;
      const int d1 = min(2 * 256, d0 + per);
      for (int d = d0; d < d1; ++d) {
        float s = 0.f;
        for (int q = lane; q < p.norm_parts; q += 32) s += p.norm_partials[static_cast<int64_t>(q) * 512 + d];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) {
          if (d < 256) p.dq_norm[d] = s; else p.dk_norm[d - 256] = s;
        }
      }
    }
    return;
  }

  // -------------------------------------------------------------- consumer warpgroups
  setmaxnreg_inc<232>();
  pdl_wait();
  if (tl && threadIdx.x == 128) tl[1] = globaltimer();
  const int wg = (threadIdx.x >> 7) - 1;  // 0 or 1
  const int ctid = threadIdx.x - 128;     // 0..255
  const int wrow = wg * WM + (warp & 3) * 16 + (lane >> 2);  // tile row of this thread's fragment
  int stage = 0;
  uint32_t phase = 0;
  int islot = 0;
  uint32_t iphase = 0;
  float acc[R][64];
  const bool rec = tl != nullptr && threadIdx.x == 128;
  int nrec = 0;

  while (true) {
    kwait(p.spin, &item_full[islot], iphase);
    const int item = item_slot[islot];
    if (rec && nrec < 8) { tl[2 + 5 * nrec] = globaltimer(); tl[2 + 5 * nrec + 4] = item; }
    __syncwarp();
    if (lane == 0) mbar_arrive(&item_empty[islot]);
    if (++islot == 2) { islot = 0; iphase ^= 1; }
    if (item < 0) break;
    const Item it = decode_item(item, p);
    if (rec && nrec < 8) {
      kwait(p.spin, &full[stage], phase);
      tl[2 + 5 * nrec + 1] = globaltimer();
    }

    if (it.is_w) mainloop<R, 1, STAGES, A_BYTES, B_BYTES>(acc, it, smem_a, smem_b, full, empty, stage, phase, wg, lane, p.spin);
    else mainloop<R, 0, STAGES, A_BYTES, B_BYTES>(acc, it, smem_a, smem_b, full, empty, stage, phase, wg, lane, p.spin);

    if (rec && nrec < 8) tl[2 + 5 * nrec + 2] = globaltimer();
    // ------------------------------------------------------------ epilogue
    constexpr int TILE_F4 = BM * kBN / 4;  // float4s per fp32 partial
    float* ws = it.is_w ? p.ws_w : p.ws_x;
    bool store_tile = true;
    if (it.nsplit > 1) {
      // Split tile: publish this piece's partial (fragment order, coalesced); the last piece to
      // arrive sums all partials in split order (deterministic) and stores the tile.
      float4* mine = reinterpret_cast<float4*>(ws) +
                     (static_cast<int64_t>(it.tile) * it.nsplit + it.split) * TILE_F4;
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int j = 0; j < 16; ++j)
          mine[(r * 16 + j) * 256 + ctid] =
              make_float4(acc[r][4 * j], acc[r][4 * j + 1], acc[r][4 * j + 2], acc[r][4 * j + 3]);
      __threadfence();
      named_barrier_sync(1, 256);
      if (ctid == 0) {
        int* counter = p.counters + (it.is_w ? it.tile : p.nwt + it.tile);
        const int old = atomicAdd(counter, 1);
        *last_flag = (old == it.nsplit - 1) ? 1 : 0;
      }
      named_barrier_sync(1, 256);
      store_tile = *last_flag != 0;
      named_barrier_sync(1, 256);  // last_flag is reused by the next item
    }
    if (store_tile) {
      if (it.nsplit > 1) __threadfence();
      // The tile goes out through a 128-row staging tile: one pass for BM = 128 (both
      // warpgroups), two for BM = 256 (one warpgroup's 128 rows each).
#pragma unroll
      for (int half = 0; half < NH; ++half) {
        if (ctid == 0) bulk_wait_read0();  // the previous store has read the staging tile
        named_barrier_sync(1, 256);
        if (NH == 1 || wg == half) {
          const int rbase = NH == 1 ? 0 : half * 128;
          if (it.nsplit == 1) {
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
              for (int j = 0; j < 16; ++j)
                stage_put(smem_c, wrow + r * 64 - rbase, j, lane,
                          make_float4(acc[r][4 * j], acc[r][4 * j + 1], acc[r][4 * j + 2], acc[r][4 * j + 3]));
          } else {
            const float4* slots = reinterpret_cast<const float4*>(ws) +
                                  static_cast<int64_t>(it.tile) * it.nsplit * TILE_F4 + ctid;
#pragma unroll
            for (int r = 0; r < R; ++r) {
              float4 t[16];
#pragma unroll
              for (int j = 0; j < 16; ++j) t[j] = make_float4(0.f, 0.f, 0.f, 0.f);
              // Every piece (this one too) is read back from its partial, in split order, so
              // the sum does not depend on which piece finished last.
              for (int s = 0; s < it.nsplit; ++s) {
                const float4* src = slots + static_cast<int64_t>(s) * TILE_F4 + r * 16 * 256;
                constexpr int VB = R == 1 ? 16 : 4;  // loads in flight per batch (registers)
#pragma unroll
                for (int jb = 0; jb < 16; jb += VB) {
                  float4 v[VB];
#pragma unroll
                  for (int q = 0; q < VB; ++q) v[q] = __ldcg(src + (jb + q) * 256);
#pragma unroll
                  for (int q = 0; q < VB; ++q) {
                    t[jb + q].x += v[q].x; t[jb + q].y += v[q].y;
                    t[jb + q].z += v[q].z; t[jb + q].w += v[q].w;
                  }
                }
              }
#pragma unroll
              for (int j = 0; j < 16; ++j) stage_put(smem_c, wrow + r * 64 - rbase, j, lane, t[j]);
            }
          }
        }
        fence_proxy_async_shared();
        named_barrier_sync(1, 256);
        if (ctid == 0) {
          const CUtensorMap* map;
          int row0;
          if (it.is_w) {
            const int m0 = it.mt * BM;
            map = m0 < 1024 ? &tm_dwq : (m0 < 1280 ? &tm_dwk : &tm_dwv);
            row0 = m0 < 1024 ? m0 : (m0 < 1280 ? m0 - 1024 : m0 - 1280);
          } else {
            map = &tm_dx;
            row0 = it.mt * BM;
          }
          row0 += half * 128;
#pragma unroll
          for (int rb = 0; rb < 2; ++rb) {
            if (!it.is_w && row0 + rb * 64 >= p.tokens) break;  // rows past T: nothing to store
#pragma unroll
            for (int cb = 0; cb < 2; ++cb)
              tma_store_2d(map, smem_c + (rb * 2 + cb) * kBox, it.nt * kBN + cb * 64, row0 + rb * 64);
          }
          bulk_commit();
        }
      }
    }
    if (rec && nrec < 8) tl[2 + 5 * nrec + 3] = globaltimer();
    ++nrec;
  }
  if (ctid == 0) bulk_wait_all0();  // the last tile's store has completed
  if (rec) { tl[45] = globaltimer(); tl[47] = nrec; }
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

// 2-D bf16 row-major [rows, cols], 64x64 boxes, 128-byte swizzle, zero fill out of bounds.
bool make_map(CUtensorMap* map, const void* ptr, int64_t rows, int64_t cols) {
  auto fn = encode_fn();
  if (!fn) return false;
  cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols * 2)};
  cuuint32_t box[2] = {64, 64};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(ptr), dims, strides, box,
                  estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

int smem_bytes(int bm) {
  const int stages = bm == 128 ? 6 : 4;
  return stages * (bm * kBK * 2 + kBK * kBN * 2) + 128 * kBN * 2 + 1024 + 256;
}

// Greedy longest-first assignment (what the dynamic scheduler approximates); returns makespan.
double simulate(int n1, double c1, int n2, double c2, int grid) {
  std::vector<double> load(grid, 0.0);
  // min-heap by load
  auto cmp = [](double a, double b) { return a > b; };
  std::make_heap(load.begin(), load.end(), cmp);
  auto take = [&](double c) {
    std::pop_heap(load.begin(), load.end(), cmp);
    load.back() += c;
    std::push_heap(load.begin(), load.end(), cmp);
  };
  for (int i = 0; i < n1; ++i) take(c1);
  for (int i = 0; i < n2; ++i) take(c2);
  return *std::max_element(load.begin(), load.end());
}

GemmPlan plan_for_bm(int tokens, int num_sms, int bm) {
  // Cost model in microseconds, calibrated on an H200 (2026-11, debug timelines): one 64-deep
  // k-block of a 128x128 tile 0.42 us, of a 256x128 tile 0.64 us; per item ~0.8 us (item hand-off,
  // first data, staging + TMA store); a split piece writes its fp32 partial (~100 GB/s from one
  // SM) and the last one reads all partials back (~150 GB/s).
  const double kb_us = bm == 128 ? 0.42 : 0.64;
  const double item_us = bm == 128 ? 0.9 : 1.3;
  const double tile_bytes = static_cast<double>(bm) * kBN * 4;
  // Split pieces: fp32 partial written, then the last piece reads all of them back (measured on
  // the H200: a few us for 128-row tiles, much more for 256-row tiles).
  auto split_us = [&](int n) { return n > 1 ? (1.0 + 0.6 * n) * (bm / 128.0) : 0.0; };
  GemmPlan best{};
  best.predicted_us = 1e30;
  const int mx = (tokens + bm - 1) / bm;
  const int kbw = (tokens + kBK - 1) / kBK;
  const int nwt = (kGCols / bm) * kNT;
  const int nxt = mx * kNT;
  const int sx_options[] = {1, 2, 3, 4, 6, 8, 12};
  for (int sx : sx_options) {
    if (bm == 256 && sx > 1) continue;  // 256-row split tiles measured slow (fix-up)
    for (int sw = 1; sw <= std::min(kbw, bm == 256 ? 2 : 16); ++sw) {
      const double cx = item_us + kb_us * ((kKBX + sx - 1) / sx) + split_us(sx);
      const double cw = item_us + kb_us * ((kbw + sw - 1) / sw) + split_us(sw);
      const int n_x = nxt * sx, n_w = nwt * sw;
      const int grid = std::min(num_sms, n_x + n_w);
      const bool w_first = cw >= cx;
      const double t = w_first ? simulate(n_w, cw, n_x, cx, grid) : simulate(n_x, cx, n_w, cw, grid);
      if (t < best.predicted_us - 1e-9) {
        best = GemmPlan{bm, tokens, mx, sx, kbw, sw, nwt, nxt, w_first ? 1 : 0, grid, t};
      }
    }
  }
  return best;
}

// The dynamic shared-memory limit is raised once per device.
template <int WM>
cudaError_t ensure_smem_attr(int smem) {
  static std::mutex mu;
  static std::set<int> done;
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  std::lock_guard<std::mutex> lock(mu);
  if (done.count(dev)) return cudaSuccess;
  err = cudaFuncSetAttribute(qkv_gemm_kernel<WM>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err == cudaSuccess) done.insert(dev);
  return err;
}

}  // namespace

GemmPlan make_gemm_plan(int tokens, int num_sms, int bm) {
  static std::mutex mu;
  static std::map<std::tuple<int, int, int>, GemmPlan> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_tuple(tokens, num_sms, bm);
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  GemmPlan plan;
  if (bm == 128 || bm == 256) {
    plan = plan_for_bm(tokens, num_sms, bm);
  } else {
    // Measured on the H200 (2026-11, 16 cases): 128-row tiles win below ~6k tokens; 256-row
    // tiles (at most 2 dW splits, no dX split) win at 8k+ when the model agrees.
    GemmPlan a = plan_for_bm(tokens, num_sms, 128);
    plan = a;
    if (tokens >= 6144) {
      GemmPlan b = plan_for_bm(tokens, num_sms, 256);
      if (b.predicted_us < a.predicted_us) plan = b;
    }
  }
  cache[key] = plan;
  return plan;
}

int gemm_counter_ints(const GemmPlan& p) { return p.nwt + p.nxt + 1; }

int64_t gemm_workspace_floats(const GemmPlan& p) {
  const int64_t tile = static_cast<int64_t>(p.bm) * kBN;
  int64_t n = 0;
  if (p.sw > 1) n += tile * p.nwt * p.sw;
  if (p.sx > 1) n += tile * p.nxt * p.sx;
  return n;
}

cudaError_t launch_gemm(const GemmArgs& a, const GemmPlan& plan, cudaStream_t stream, bool pdl) {
  CUtensorMap tm_g, tm_x, tm_wq, tm_wk, tm_wv, tm_dx, tm_dwq, tm_dwk, tm_dwv;
  const int64_t T = plan.tokens;
  if (!make_map(&tm_g, a.g, T, kGCols) || !make_map(&tm_x, a.x, T, kN) ||
      !make_map(&tm_wq, a.wq, 1024, kN) || !make_map(&tm_wk, a.wk, 256, kN) ||
      !make_map(&tm_wv, a.wv, 256, kN) || !make_map(&tm_dx, a.dx, T, kN) ||
      !make_map(&tm_dwq, a.dwq, 1024, kN) || !make_map(&tm_dwk, a.dwk, 256, kN) ||
      !make_map(&tm_dwv, a.dwv, 256, kN))
    return cudaErrorInvalidValue;

  Params p;
  p.dx = a.dx;
  p.dwq = a.dwq;
  p.dwk = a.dwk;
  p.dwv = a.dwv;
  const int64_t tile = static_cast<int64_t>(plan.bm) * kBN;
  p.ws_w = a.workspace;
  p.ws_x = a.workspace + (plan.sw > 1 ? tile * plan.nwt * plan.sw : 0);
  p.counters = a.counters;
  p.norm_partials = a.norm_partials;
  p.norm_parts = a.norm_parts;
  p.dq_norm = a.dq_norm;
  p.dk_norm = a.dk_norm;
  p.timeline = a.timeline;
  p.spin = a.spin;
  p.tokens = plan.tokens;
  p.mx = plan.mx;
  p.sx = plan.sx;
  p.kbw = plan.kbw;
  p.sw = plan.sw;
  p.nwt = plan.nwt;
  p.nxt = plan.nxt;
  p.w_first = plan.w_first;

  const int smem = smem_bytes(plan.bm);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(plan.grid);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;

  cudaError_t err;
  if (plan.bm == 128) {
    err = ensure_smem_attr<64>(smem);
    if (err != cudaSuccess) return err;
    err = cudaLaunchKernelEx(&cfg, qkv_gemm_kernel<64>, tm_g, tm_x, tm_wq, tm_wk, tm_wv, tm_dx, tm_dwq, tm_dwk, tm_dwv, p);
  } else {
    err = ensure_smem_attr<128>(smem);
    if (err != cudaSuccess) return err;
    err = cudaLaunchKernelEx(&cfg, qkv_gemm_kernel<128>, tm_g, tm_x, tm_wq, tm_wk, tm_wv, tm_dx, tm_dwq, tm_dwk, tm_dwv, p);
  }
  if (err != cudaSuccess) return err;
  return cudaGetLastError();
}

}  // namespace kidx
