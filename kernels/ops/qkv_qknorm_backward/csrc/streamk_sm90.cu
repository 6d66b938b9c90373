// ext-streamk: ext-streamnorm's Q/K norm kernel, then one persistent stream-K wgmma GEMM kernel.
//
// ext-cluster's GEMM gives every output tile (or every 1/s of one) its own CTA. dW's tiles have
// K = T, dX's K = 1536, so the two kinds never take the same time: at T = 8192 the dW tiles end
// at ~61 µs and three waves of dX tiles at 77 µs, ~15 µs of the ~60 µs GEMM phase being imbalance
// and per-CTA start-up (kernels/BENCHMARKS.md). Here one CTA per SM walks an equal share of all
// the k-blocks instead (stream-K):
// - The work is the list of output tiles, dW first (its V-only rows, which need no norm, first of
//   all), then dX, each tile its k-blocks in order: U k-blocks ("units") in all. CTA c takes units
//   [c·U/G, (c+1)·U/G), so every CTA does the same work within one k-block.
// - A CTA's range is a run of segments: maybe the tail of a tile, whole tiles, maybe the head of
//   another. A whole tile is stored as bf16 (staging tile + TMA store). A tail or middle piece
//   ("contributor", only ever a CTA's first segment) writes its fp32 partial into the CTA's own
//   workspace slot and counts itself in flags[tile]. The head (k-block 0, only ever a CTA's last
//   segment) owns the tile: it waits for the count, adds the contributors' partials in k order
//   (fixed: deterministic), and stores. Contributors work at the start of their ranges and owners
//   at the end, so an owner rarely waits; no contributor waits for anything but the norm kernel,
//   so there is no cycle (all G ≤ #SMs CTAs are resident once the norm kernel has left).
// - The producer streams k-blocks across segment boundaries, so the next segment's loads overlap
//   the previous one's epilogue; partials come back through bulk copies into shared memory.
// - flags must be zero at launch: the launch function zeroes them (cudaMemsetAsync) first.
//
// Warp roles (384 threads, 1 CTA per SM): warp 0 lane 0 issues TMA loads; warps 1-3 finalize
// grad_{q,k}_norm_weight from the norm kernel's partials (ext-cluster's code, a slice per CTA);
// warpgroups 1 and 2 run wgmma (m64n128k16) on BM/2 rows each, then the epilogues.
//
// The norm kernel and the GEMM helpers (tensor maps, stage_put, finalize_norm_weight, mma_kblock)
// come from stream_norm_sm90.cu and cluster_sm90.cu, included unchanged (pinned by published runs).
//
// Host API (extern "C", for ctypes): kidxk_plan, kidxk_segments (the schedule, for tests),
// kidxk_launch, kidxc_error.
#include "stream_norm_sm90.cu"

namespace kidxk {

using namespace kidx;
using namespace kidxc;
using namespace kidxs;

namespace {

// ---------------------------------------------------------------- the schedule (host and device)

struct Sched {
  int bm;           // tile rows: 128 or 256
  int grid;         // persistent CTAs, G
  int tokens;
  int kbw;          // dW k-blocks per tile = ceil(T/64)
  int nwt;          // dW tiles: (1536/bm)·5, first in the order
  int nxt;          // dX tiles: ceil(T/bm)·5
  long long units;  // nwt·kbw + nxt·24
  int gw;           // 0: every CTA an equal share of all units; else CTAs [0, gw) share dW's units
                    // and CTAs [gw, grid) dX's (dW pieces then run in step, as in ext-cluster)
};

// One CTA's piece of one tile: k-blocks [k0, k1) of the tile's kt.
struct Seg {
  int tile;  // position in the work order (dW tiles, then dX tiles)
  int is_w;
  int m0, nt;  // first output row; column tile
  int k0, k1, kt;
  long long start;  // the tile's first unit
};

// n units over g CTAs: CTA c starts at floor(c·n/g); unit u belongs to the largest c with
// floor(c·n/g) ≤ u.
__host__ __device__ __forceinline__ long long share_lo(long long c, long long n, long long g) { return c * n / g; }
__host__ __device__ __forceinline__ int share_of(long long u, long long n, long long g) {
  return static_cast<int>(((u + 1) * g + n - 1) / n) - 1;
}
__host__ __device__ __forceinline__ long long cta_lo(const Sched& s, int c) {
  if (s.gw == 0) return share_lo(c, s.units, s.grid);
  const long long w = static_cast<long long>(s.nwt) * s.kbw;
  return c <= s.gw ? share_lo(c, w, s.gw) : w + share_lo(c - s.gw, s.units - w, s.grid - s.gw);
}
// The CTA whose range holds unit u.
__host__ __device__ __forceinline__ int cta_of(const Sched& s, long long u) {
  if (s.gw == 0) return share_of(u, s.units, s.grid);
  const long long w = static_cast<long long>(s.nwt) * s.kbw;
  return u < w ? share_of(u, w, s.gw) : s.gw + share_of(u - w, s.units - w, s.grid - s.gw);
}

// The segment that starts at unit u of a range ending at hi. dW tiles go by row block from the
// last (rows 1280..1535 read only GV: they can start before the norm kernel ends) to the first.
__host__ __device__ __forceinline__ Seg seg_at(const Sched& s, long long u, long long hi) {
  Seg g;
  const long long wunits = static_cast<long long>(s.nwt) * s.kbw;
  if (u < wunits) {
    g.tile = static_cast<int>(u / s.kbw);
    g.is_w = 1;
    g.kt = s.kbw;
    g.start = static_cast<long long>(g.tile) * s.kbw;
    const int mb = g.tile / kNT;
    g.m0 = kGCols - (mb + 1) * s.bm;
    g.nt = g.tile - mb * kNT;
  } else {
    const int x = static_cast<int>((u - wunits) / kKBX);
    g.tile = s.nwt + x;
    g.is_w = 0;
    g.kt = kKBX;
    g.start = wunits + static_cast<long long>(x) * kKBX;
    g.m0 = (x / kNT) * s.bm;
    g.nt = x - (x / kNT) * kNT;
  }
  g.k0 = static_cast<int>(u - g.start);
  const long long end = hi - g.start;
  g.k1 = end < g.kt ? static_cast<int>(end) : g.kt;
  return g;
}

// ---------------------------------------------------------------- device helpers

constexpr int kChunkBytes = 8 * 256 * 16;  // one fixup chunk: 8 float4 per consumer thread (32 KiB)
constexpr int kFixBufs = 4;                 // fixup chunks in flight (in the idle ring: 128 KiB)
constexpr int kOutBytes = 128 * kBN * 2;    // bf16 staging of 128 tile rows (32 KiB)
constexpr int kStampsK = 12;
// Registers per thread for 256-row tiles: the producer warpgroup gives its share to the consumers
// (acc, the fixup sums and the staging addresses do not fit in 168): 128·40 + 256·232 ≤ 64 Ki.
// 128-row tiles keep 168 for every thread (with the exchange the producer side spills).
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;
constexpr uint64_t kWaitTimeoutNs = 2000000000ull;  // a spin-wait traps after 2 s instead of hanging

__device__ __forceinline__ void red_release_add(int* ptr, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(ptr), "r"(v) : "memory");
}

struct KParams {
  float* ws;    // [grid][bm·128] fp32 partials, in the consumers' fragment order
  int* flags;   // [nwt + nxt] contributors arrived, zero at launch
  Sched s;
  Params fin;   // the norm-weight finalize's fields: norm_partials, norm_parts, dq_norm, dk_norm
  unsigned long long* timeline;  // debug: [grid][kStampsK] or null (see kidxk_launch)
};

// TMA loads of k-block kb of a segment: A (BM x 64) and B (64 x 128), as in ext-cluster.
template <int BM>
__device__ __forceinline__ void load_kblock(const Seg& g, int kb, uint8_t* a, uint8_t* b, uint64_t* bar,
                                            const CUtensorMap* tm_g, const CUtensorMap* tm_v,
                                            const CUtensorMap* tm_x, const CUtensorMap* tm_wq,
                                            const CUtensorMap* tm_wk, const CUtensorMap* tm_wv) {
  if (g.is_w) {
    // B = X rows [kb*64, +64), columns [nt*128, +128); A = Gᵀ: G columns [m0, +BM), rows [kb*64, +64)
#pragma unroll
    for (int c = 0; c < 2; ++c) tma_load_2d(b + c * kBox, tm_x, bar, g.nt * kBN + c * 64, kb * kBK);
#pragma unroll
    for (int c = 0; c < BM / 64; ++c) {
      const int col = g.m0 + c * 64;
      if (col < kQK) tma_load_2d(a + c * kBox, tm_g, bar, col, kb * kBK);
      else tma_load_2d(a + c * kBox, tm_v, bar, col - kQK, kb * kBK);
    }
  } else {
    // B = rows [kb*64, +64) of [Wq;Wk;Wv]; A = G rows [m0, +BM), columns [kb*64, +64)
    const CUtensorMap* wmap = kb < 16 ? tm_wq : (kb < 20 ? tm_wk : tm_wv);
    const int wrow = (kb < 16 ? kb : (kb < 20 ? kb - 16 : kb - 20)) * kBK;
#pragma unroll
    for (int c = 0; c < 2; ++c) tma_load_2d(b + c * kBox, wmap, bar, g.nt * kBN + c * 64, wrow);
#pragma unroll
    for (int c = 0; c < BM / 64; ++c) {
      if (kb < kKBQK) tma_load_2d(a + c * kBox, tm_g, bar, kb * kBK, g.m0 + c * 64);
      else tma_load_2d(a + c * kBox, tm_v, bar, (kb - kKBQK) * kBK, g.m0 + c * 64);
    }
  }
}

// Pins the accumulators in registers at this point: no instruction that defines them may move
// into a wgmma pipeline stage (ptxas would serialize the wgmmas otherwise).
template <int R>
__device__ __forceinline__ void fence_acc(float (&acc)[R][64]) {
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(acc[r][i])::"memory");
}

// nkb k-blocks into acc (from zero); the ring position persists across segments, and every stage
// consumed is handed back to the producer (the last one too: the CTA goes on).
template <int R, int TA, int STAGES, int A_BYTES, int B_BYTES>
__device__ __forceinline__ void mainloop_seg(float (&acc)[R][64], int nkb, uint8_t* smem_a, uint8_t* smem_b,
                                             uint64_t* full, uint64_t* empty, int wg, int lane, int& stage,
                                             uint32_t& phase) {
  int prev = -1;
  for (int i = 0; i < nkb; ++i) {
    mbar_wait(&full[stage], phase);
    fence_acc(acc);
    wgmma_fence();
    const uint32_t a_base = smem_u32(smem_a + stage * A_BYTES) + wg * R * kBox;
    const uint32_t b_base = smem_u32(smem_b + stage * B_BYTES);
    mma_kblock<R, TA>(acc, a_base, b_base, i == 0);
    wgmma_commit();
    fence_acc(acc);
    wgmma_wait<1>();
    if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
    prev = stage;
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1;
    }
  }
  wgmma_wait<0>();
  fence_acc(acc);
  if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
}

// Spin until *flag == want (acquire), then make the contributors' global writes visible to the
// async proxy (the partials come back through bulk copies).
__device__ __forceinline__ void wait_count(const int* flag, int want) {
  const uint64_t t0 = globaltimer();
  uint32_t n = 0;
  while (ld_acquire(flag) < want) {
    __nanosleep(64);
    if ((++n & 255u) == 0 && globaltimer() - t0 > kWaitTimeoutNs) __trap();
  }
  fence_proxy_async_global();
}

template <int WM>
__global__ void __launch_bounds__(kThreads, 1)
    streamk_gemm_kernel(const __grid_constant__ CUtensorMap tm_g, const __grid_constant__ CUtensorMap tm_v,
                        const __grid_constant__ CUtensorMap tm_x, const __grid_constant__ CUtensorMap tm_wq,
                        const __grid_constant__ CUtensorMap tm_wk, const __grid_constant__ CUtensorMap tm_wv,
                        const __grid_constant__ CUtensorMap tm_dx, const __grid_constant__ CUtensorMap tm_dwq,
                        const __grid_constant__ CUtensorMap tm_dwk, const __grid_constant__ CUtensorMap tm_dwv,
                        const KParams p) {
  constexpr int R = WM / 64;  // m64 blocks per consumer warpgroup
  constexpr int BM = 2 * WM;
  constexpr int A_BYTES = BM * kBK * 2;
  constexpr int B_BYTES = kBK * kBN * 2;
  constexpr int STAGES = WM == 64 ? 6 : 4;  // 192 KiB: TMA latency under load is ~1 µs
  constexpr uint32_t STAGE_TX = A_BYTES + B_BYTES;
  constexpr int PART_FLOAT4 = R * 16 * 256;  // a partial tile: R·16 float4 per consumer thread

  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* smem_a = smem;
  uint8_t* smem_b = smem + STAGES * A_BYTES;
  uint8_t* out = smem_b + STAGES * B_BYTES;  // bf16 staging of whole tiles, 128 rows per pass
  uint64_t* full = reinterpret_cast<uint64_t*>(out + kOutBytes);
  uint64_t* empty = full + STAGES;
  uint64_t* fix = empty + STAGES;                         // [kFixBufs] fixup chunk arrivals
  float* fin = reinterpret_cast<float*>(fix + kFixBufs);  // [3][8] norm-weight finalize
  static_assert(kFixBufs * kChunkBytes + BM * kBN * 2 <= STAGES * (A_BYTES + B_BYTES),
                "an owner's fixup buffers and bf16 tile live in the idle ring");

  const Sched& s = p.s;
  const int cta = static_cast<int>(blockIdx.x);
  const long long lo = cta_lo(s, cta);
  const long long hi = cta_lo(s, cta + 1);
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  // Debug stamps, read from the parameters where used (a pointer held in registers would spill).
  auto stamp = [&](int i, unsigned long long v) { p.timeline[static_cast<int64_t>(cta) * kStampsK + i] = v; };
  if (p.timeline && threadIdx.x == 0) {
    stamp(0, globaltimer());
    stamp(1, smid());
    stamp(9, hi - lo);
  }
  if (threadIdx.x == 0) {
    for (int i = 0; i < STAGES; ++i) {
      mbar_init(&full[i], 1);
      mbar_init(&empty[i], 8);  // lane 0 of each consumer warp
    }
    for (int i = 0; i < kFixBufs; ++i) mbar_init(&fix[i], 1);
    fence_barrier_init();
    tma_prefetch_desc(&tm_g);
    tma_prefetch_desc(&tm_v);
    tma_prefetch_desc(&tm_x);
    tma_prefetch_desc(&tm_wq);
    tma_prefetch_desc(&tm_wk);
    tma_prefetch_desc(&tm_wv);
  }
  __syncthreads();

  if (warp < 4) {
    if constexpr (WM == 128) setmaxnreg_dec<kProducerRegs>();
    if (warp == 0 && lane == 0) {
      // ---------------------------------------------------------- producer: every k-block of
      // every segment, in order, through the ring; GQK is read only after the norm kernel ended.
      int stage = 0;
      uint32_t phase = 0;
      bool norm_done = false;
      for (long long u = lo; u < hi;) {
        const Seg g = seg_at(s, u, hi);
        for (int kb = g.k0; kb < g.k1; ++kb) {
          const bool reads_gqk = g.is_w ? g.m0 < kQK : kb < kKBQK;
          if (reads_gqk && !norm_done) {
            pdl_wait();
            norm_done = true;
          }
          mbar_wait(&empty[stage], phase ^ 1);
          mbar_expect_tx(&full[stage], STAGE_TX);
          load_kblock<BM>(g, kb, smem_a + stage * A_BYTES, smem_b + stage * B_BYTES, &full[stage], &tm_g, &tm_v,
                          &tm_x, &tm_wq, &tm_wk, &tm_wv);
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
        u += g.k1 - g.k0;
      }
    } else if (warp >= 1 && p.fin.norm_parts > 0) {
      pdl_wait();
      finalize_norm_weight(p.fin, fin, threadIdx.x - 32);
    }
    return;
  }

  // -------------------------------------------------------------- consumer warpgroups
  if constexpr (WM == 128) setmaxnreg_inc<kConsumerRegs>();
  const int wg = (threadIdx.x >> 7) - 1;  // 0 or 1
  const int ctid = threadIdx.x - 128;     // 0..255
  const int frow = wg * WM + (warp & 3) * 16 + (lane >> 2);  // tile row of this thread's fragment
  const bool rec = p.timeline != nullptr && ctid == 0;
  float acc[R][64];
  int stage = 0;
  uint32_t phase = 0;
  int segments = 0;
  if (rec) {
    mbar_wait(&full[0], 0);
    stamp(2, globaltimer());
  }
  for (long long u = lo; u < hi; ++segments) {
    const Seg g = seg_at(s, u, hi);
    u += g.k1 - g.k0;
    if (g.is_w) mainloop_seg<R, 1, STAGES, A_BYTES, B_BYTES>(acc, g.k1 - g.k0, smem_a, smem_b, full, empty, wg, lane, stage, phase);
    else mainloop_seg<R, 0, STAGES, A_BYTES, B_BYTES>(acc, g.k1 - g.k0, smem_a, smem_b, full, empty, wg, lane, stage, phase);
    if (rec && segments < 4) stamp(3 + segments, globaltimer());
    if (rec && segments == 0) stamp(11, g.k1 - g.k0);

    if (g.k0 > 0) {
      // Contributor: the fp32 partial into this CTA's slot (fragment order: each warp writes 512
      // contiguous bytes per store), then counted in flags[tile].
      float4* slot = reinterpret_cast<float4*>(p.ws) + static_cast<int64_t>(cta) * PART_FLOAT4;
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int j = 0; j < 16; ++j)
          __stcg(slot + (r * 16 + j) * 256 + ctid,
                 make_float4(acc[r][4 * j], acc[r][4 * j + 1], acc[r][4 * j + 2], acc[r][4 * j + 3]));
      __threadfence();
      named_barrier_sync(1, 256);
      if (ctid == 0) red_release_add(p.flags + g.tile, 1);
      continue;
    }

    // TMA stores of the 64x64 bf16 boxes of tile rows [r0, r0 + rows) from buf (rows past T are
    // clipped; row blocks wholly past T are skipped); by ctid 0, one bulk group.
    auto store_rows = [&](const uint8_t* buf, int r0, int rows) {
      const CUtensorMap* map = g.is_w ? (g.m0 < 1024 ? &tm_dwq : (g.m0 < kQK ? &tm_dwk : &tm_dwv)) : &tm_dx;
      const int row0 = (g.is_w ? (g.m0 < 1024 ? g.m0 : (g.m0 < kQK ? g.m0 - 1024 : g.m0 - kQK)) : g.m0) + r0;
      for (int rb = 0; rb < rows / 64; ++rb) {
        if (!g.is_w && g.m0 + r0 + rb * 64 >= s.tokens) break;
#pragma unroll
        for (int cb = 0; cb < 2; ++cb) tma_store_2d(map, buf + (rb * 2 + cb) * kBox, g.nt * kBN + cb * 64, row0 + rb * 64);
      }
      bulk_commit();
    };

    if (g.k1 < g.kt) {
      // Owner. This is the CTA's last segment, so the ring is idle: the contributors' partials
      // (CTAs cta+1 .. last) stream through its first 128 KiB in 32 KiB bulk copies, kFixBufs in
      // flight, and the bf16 tile is staged after them. Each eighth of the fragment (r, h) is this
      // CTA's values plus theirs in k order (fixed: deterministic), summed outside acc (acc stays
      // wgmma-only, or ptxas serializes the wgmmas).
      uint8_t* staging = smem + kFixBufs * kChunkBytes;
      const int nq = cta_of(s, g.start + g.kt - 1) - cta;
      const int chunks = nq * 2 * R;
      auto issue = [&](int i) {  // chunk i: eighth i / nq of contributor cta + 1 + i % nq
        const float4* src = reinterpret_cast<const float4*>(p.ws) +
                            static_cast<int64_t>(cta + 1 + i % nq) * PART_FLOAT4 +
                            static_cast<int64_t>(i / nq) * (kChunkBytes / 16);
        mbar_expect_tx(&fix[i % kFixBufs], kChunkBytes);
        bulk_copy_g2s(smem + (i % kFixBufs) * kChunkBytes, src, kChunkBytes, &fix[i % kFixBufs]);
      };
      if (ctid == 0) {
        wait_count(p.flags + g.tile, nq);
        if (rec) stamp(7, globaltimer());
        for (int i = 0; i < chunks && i < kFixBufs; ++i) issue(i);
      }
      int i = 0;
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float4 t[8];
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const float* a = &acc[r][4 * (h * 8 + j)];
            t[j] = make_float4(a[0], a[1], a[2], a[3]);
          }
          for (int q = 0; q < nq; ++q, ++i) {
            mbar_wait(&fix[i % kFixBufs], (i / kFixBufs) & 1);
            const float4* part = reinterpret_cast<const float4*>(smem + (i % kFixBufs) * kChunkBytes);
#pragma unroll
            for (int j = 0; j < 8; ++j) {
              const float4 v = part[j * 256 + ctid];
              t[j].x += v.x;
              t[j].y += v.y;
              t[j].z += v.z;
              t[j].w += v.w;
            }
            named_barrier_sync(1, 256);  // every thread has read the buffer before it is refilled
            if (ctid == 0 && i + kFixBufs < chunks) issue(i + kFixBufs);
          }
#pragma unroll
          for (int j = 0; j < 8; ++j)
            stage_put(staging, frow + r * 64, h * 8 + j, lane, t[j].x, t[j].y, t[j].z, t[j].w);
        }
      fence_proxy_async_shared();
      named_barrier_sync(1, 256);
      if (ctid == 0) store_rows(staging, 0, BM);
      continue;
    }

    // Whole tile, 128 rows per pass through the staging buffer (free once the previous store has
    // read it): both warpgroups at once for 128-row tiles, one after the other for 256.
#pragma unroll
    for (int pass = 0; pass < BM / 128; ++pass) {
      if (ctid == 0) bulk_wait_read0();
      named_barrier_sync(1, 256);
      if (BM == 128 || wg == pass) {
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int j = 0; j < 16; ++j)
            stage_put(out, frow + r * 64 - pass * 128, j, lane, acc[r][4 * j], acc[r][4 * j + 1], acc[r][4 * j + 2],
                      acc[r][4 * j + 3]);
      }
      fence_proxy_async_shared();
      named_barrier_sync(1, 256);
      if (ctid == 0) store_rows(out, pass * 128, 128);
    }
  }
  if (ctid == 0) bulk_wait_read0();  // the staging tile must outlive the stores' reads
  if (rec) {
    stamp(8, globaltimer());
    stamp(10, segments);
  }
}

// ---------------------------------------------------------------- host side

constexpr int kMinUnitsPerCta = 6;  // at most ~4 CTAs share a dX tile (fixup reads stay short)

int smem_bytes_k(int bm) {
  const int stages = bm == 128 ? 6 : 4;
  return stages * (bm * kBK * 2 + kBK * kBN * 2) + kOutBytes + 1024 + 256;
}

// The schedule for bm, grid and gw (dW CTAs; 0 = every CTA a share of all units); grid 0 = one
// CTA per kMinUnitsPerCta units, at most one per SM. Returns false for bad arguments.
bool sched_with(long long tokens, int num_sms, int bm, int grid, int gw, Sched* out) {
  if (tokens < 1 || tokens >= (1LL << 26) || num_sms < 1 || (bm != 128 && bm != 256) || grid < 0 || gw < 0)
    return false;
  Sched s{};
  s.tokens = static_cast<int>(tokens);
  s.bm = bm;
  s.kbw = static_cast<int>((tokens + kBK - 1) / kBK);
  s.nwt = (kGCols / s.bm) * kNT;
  s.nxt = static_cast<int>((tokens + s.bm - 1) / s.bm) * kNT;
  s.units = static_cast<long long>(s.nwt) * s.kbw + static_cast<long long>(s.nxt) * kKBX;
  long long g = grid != 0 ? grid : std::min<long long>(num_sms, std::max<long long>(1, s.units / kMinUnitsPerCta));
  if (g > num_sms || g > s.units) return false;  // all CTAs must be resident at once
  s.grid = static_cast<int>(g);
  s.gw = gw;
  const long long wunits = static_cast<long long>(s.nwt) * s.kbw;
  if (gw > 0 && (gw >= s.grid || gw > wunits || s.grid - gw > s.units - wunits)) return false;
  *out = s;
  return true;
}

// The planner: the fastest forced plan per range of T in the sweep on the H200
// (kernels/bench/streamk_check.py --sweep, kernels/BENCHMARKS.md): grid 0 = one CTA per
// kMinUnitsPerCta units; dw = dW CTAs per dW tile (0: all CTAs share all units).
struct SkRow {
  int max_tokens, bm, grid, dw;
};
constexpr SkRow kSkTable[] = {
    {384, 128, 0, 0},
    {768, 128, 120, 0},
    {1792, 128, 120, 1},
    {3072, 128, 132, 1},
    {1 << 30, 256, 132, 2},
};

// bm, grid, gw: forced values, all 0 for the planner's plan. Returns false for bad arguments.
bool make_sched(long long tokens, int num_sms, int bm, int grid, int gw, Sched* out) {
  if (bm != 0 || grid != 0 || gw != 0) return sched_with(tokens, num_sms, bm != 0 ? bm : 128, grid, gw, out);
  for (const SkRow& r : kSkTable) {
    if (tokens > r.max_tokens) continue;
    const int g = std::min(r.grid, num_sms);
    if (sched_with(tokens, num_sms, r.bm, g, r.dw * (kGCols / r.bm) * kNT, out)) return true;
    break;  // a GPU with fewer SMs: the plain share of all units
  }
  return sched_with(tokens, num_sms, tokens >= 3072 ? 256 : 128, 0, 0, out);
}

template <int WM>
void* kernel_ptr_k() {
  return reinterpret_cast<void*>(streamk_gemm_kernel<WM>);
}

cudaError_t ensure_smem_attr_k(int bm) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, bool> done;
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  std::lock_guard<std::mutex> lock(mu);
  if (done.count({dev, bm})) return cudaSuccess;
  err = cudaFuncSetAttribute(bm == 128 ? kernel_ptr_k<64>() : kernel_ptr_k<128>(),
                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes_k(bm));
  if (err == cudaSuccess) done[{dev, bm}] = true;
  return err;
}

}  // namespace
}  // namespace kidxk

extern "C" {

// forced: NULL or {bm, grid, dW CTAs} (0 = the planner's). out[0..10]: bm, grid, tiles (nwt +
// nxt), units, nwt, nxt, kbw, workspace floats (grid·bm·128), norm blocks (the norm kernel's grid,
// = rows of its partials), max CTAs sharing one tile, dW CTAs (0: all CTAs share all units). Returns the number of values written, or -1 for bad
// arguments (T < 1 or T ≥ 2^26, a bad forced plan, a grid larger than the SMs or the units).
int kidxk_plan(long long tokens, int num_sms, const int* forced, long long* out, int nout) {
  using namespace kidxk;
  Sched s;
  if (nout < 11 || !make_sched(tokens, num_sms, forced ? forced[0] : 0, forced ? forced[1] : 0, forced ? forced[2] : 0, &s)) return -1;
  int share = 1;
  for (int c = 0; c < s.grid; ++c) {  // a tile's CTAs: from its owner to the CTA of its last unit
    for (long long u = cta_lo(s, c); u < cta_lo(s, c + 1);) {
      const Seg g = seg_at(s, u, cta_lo(s, c + 1));
      if (g.k0 == 0) share = std::max(share, cta_of(s, g.start + g.kt - 1) - c + 1);
      u += g.k1 - g.k0;
    }
  }
  const long long v[11] = {s.bm, s.grid, s.nwt + s.nxt, s.units, s.nwt, s.nxt, s.kbw,
                           static_cast<long long>(s.grid) * s.bm * kBN,
                           stream_shape(static_cast<int>(tokens), num_sms).grid, share, s.gw};
  for (int i = 0; i < 11; ++i) out[i] = v[i];
  return 11;
}

// The schedule of one CTA, for tests: up to max segments of 8 values each (tile, is_w, m0, nt,
// k0, k1, kt, role: 0 whole tile, 1 contributor, 2 owner of a shared tile) into out. Returns the
// number of segments, or -1 for bad arguments.
int kidxk_segments(long long tokens, int num_sms, const int* forced, int cta, long long* out, int max) {
  using namespace kidxk;
  Sched s;
  if (!make_sched(tokens, num_sms, forced ? forced[0] : 0, forced ? forced[1] : 0, forced ? forced[2] : 0, &s) || cta < 0 ||
      cta >= s.grid)
    return -1;
  int n = 0;
  for (long long u = cta_lo(s, cta); u < cta_lo(s, cta + 1); ++n) {
    const Seg g = seg_at(s, u, cta_lo(s, cta + 1));
    if (n < max) {
      const long long v[8] = {g.tile, g.is_w, g.m0, g.nt, g.k0, g.k1, g.kt,
                              g.k0 > 0 ? 1 : (g.k1 < g.kt ? 2 : 0)};
      for (int i = 0; i < 8; ++i) out[8 * n + i] = v[i];
    }
    u += g.k1 - g.k0;
  }
  return n;
}

// args (device pointers, then ints), in this order:
//  0 grad_query 1 grad_key 2 grad_value 3 hidden_states 4 q_weight 5 k_weight 6 v_weight
//  7 q_norm_weight 8 k_norm_weight 9 q_rstd 10 k_rstd 11 q_normed 12 k_normed
//  13 grad_hidden 14 grad_q_weight 15 grad_k_weight 16 grad_v_weight 17 grad_q_norm_weight
//  18 grad_k_norm_weight 19 gqk [T,1280] 20 norm partials [norm blocks,512]
//  21 batch 22 seq 23 num_sms 24 bm 25 grid 26 dW CTAs (0 = the planner's) 27 flags (bit 0:
//  PDL; debug, results wrong: bit 1 skip the norm kernel, bit 2 skip the GEMM kernel, bit 3
//  leave the tile flags as they are (timing only: owners may read partials early))
//  28 workspace [workspace floats] fp32 29 tile flags [tiles] int32 (zeroed here)
//  [30 debug: norm timeline [norm blocks][4] u64 or 0, 31 GEMM timeline [grid][12] u64 or 0:
//   0 entry, 1 SM, 2 first k-block arrived, 3..6 mainloop of segment 0..3 done, 7 owner: the
//   contributors' partials are ready, 8 exit, 9 units, 10 segments, 11 units of segment 0]
// Returns a cudaError_t value (0 = success), -1 when a tensor map could not be encoded, -2 for
// bad arguments.
int kidxk_launch(const unsigned long long* a, int n, void* stream_ptr) {
  using namespace kidxk;
  if (n < 30) return -2;
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_ptr);
  auto bf = [&](int i) { return reinterpret_cast<__nv_bfloat16*>(a[i]); };
  auto u4 = [&](int i) { return reinterpret_cast<const uint4*>(a[i]); };
  const int batch = static_cast<int>(a[21]);
  const int seq = static_cast<int>(a[22]);
  const int sms = static_cast<int>(a[23]);
  const int flags = static_cast<int>(a[27]);
  const long long tokens = static_cast<long long>(batch) * seq;
  Sched s;
  if (batch < 1 || seq < 1 || !make_sched(tokens, sms, static_cast<int>(a[24]), static_cast<int>(a[25]), static_cast<int>(a[26]), &s))
    return -2;
  const StreamShape shape = stream_shape(static_cast<int>(tokens), sms);
  const bool run_norm = !(flags & 2);
  const bool run_gemm = !(flags & 4);

  CUtensorMap tm_g, tm_v, tm_x, tm_wq, tm_wk, tm_wv, tm_dx, tm_dwq, tm_dwk, tm_dwv;
  if (!make_map(&tm_g, bf(19), tokens, kQK, kQK) || !make_map(&tm_v, bf(2), tokens, kD, kD) ||
      !make_map(&tm_x, bf(3), tokens, kHidden, kHidden) || !make_map(&tm_wq, bf(4), 1024, kHidden, kHidden) ||
      !make_map(&tm_wk, bf(5), 256, kHidden, kHidden) || !make_map(&tm_wv, bf(6), 256, kHidden, kHidden) ||
      !make_map(&tm_dx, bf(13), tokens, kHidden, kHidden) || !make_map(&tm_dwq, bf(14), 1024, kHidden, kHidden) ||
      !make_map(&tm_dwk, bf(15), 256, kHidden, kHidden) || !make_map(&tm_dwv, bf(16), 256, kHidden, kHidden))
    return -1;
  int* tile_flags = reinterpret_cast<int*>(a[29]);
  if (run_gemm && !(flags & 8)) {
    // Before the norm kernel: the GEMM kernel may start (PDL) while the norm runs.
    const cudaError_t err = cudaMemsetAsync(tile_flags, 0, sizeof(int) * (s.nwt + s.nxt), stream);
    if (err != cudaSuccess) return err;
  }
  if (run_norm) {
    StreamNormArgs na;
    na.gq = u4(0);
    na.gk = u4(1);
    na.xq = u4(11);
    na.xk = u4(12);
    na.wq = u4(7);
    na.wk = u4(8);
    na.rq = reinterpret_cast<const float*>(a[9]);
    na.rk = reinterpret_cast<const float*>(a[10]);
    na.gqk = reinterpret_cast<uint4*>(a[19]);
    na.partials = reinterpret_cast<float*>(a[20]);
    na.seq = seq;
    na.tokens = static_cast<int>(tokens);
    na.chunk = shape.chunk;
    na.timeline = n > 30 ? reinterpret_cast<unsigned long long*>(a[30]) : nullptr;
    const cudaError_t attr_err = ensure_norm_smem_attr();
    if (attr_err != cudaSuccess) return attr_err;
    stream_norm_kernel<<<shape.grid, kNormThreadsS, kSmemBytes, stream>>>(na);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  if (!run_gemm) return 0;

  KParams p{};
  p.ws = reinterpret_cast<float*>(a[28]);
  p.flags = tile_flags;
  p.s = s;
  p.fin.norm_partials = reinterpret_cast<const float*>(a[20]);
  p.fin.norm_parts = run_norm ? shape.grid : 0;
  p.fin.dq_norm = reinterpret_cast<float*>(a[17]);
  p.fin.dk_norm = reinterpret_cast<float*>(a[18]);
  p.timeline = n > 31 ? reinterpret_cast<unsigned long long*>(a[31]) : nullptr;

  cudaError_t err = ensure_smem_attr_k(s.bm);
  if (err != cudaSuccess) return err;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(s.grid);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem_bytes_k(s.bm);
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = (flags & 1) && run_norm ? 1 : 0;
  if (s.bm == 128)
    err = cudaLaunchKernelEx(&cfg, streamk_gemm_kernel<64>, tm_g, tm_v, tm_x, tm_wq, tm_wk, tm_wv, tm_dx, tm_dwq,
                             tm_dwk, tm_dwv, p);
  else
    err = cudaLaunchKernelEx(&cfg, streamk_gemm_kernel<128>, tm_g, tm_v, tm_x, tm_wq, tm_wk, tm_wv, tm_dx, tm_dwq,
                             tm_dwk, tm_dwv, p);
  if (err != cudaSuccess) return err;
  return cudaGetLastError();
}

}  // extern "C"
