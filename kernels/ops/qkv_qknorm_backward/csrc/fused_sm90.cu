// ext-fused: the Q/K RMSNorm backward and both projection GEMMs in ONE persistent sm_90a kernel
// (plus a one-block zeroing kernel in front of it, chained with programmatic dependent launch).
//
// Each CTA has four warpgroups (512 threads, 128 registers each):
//   WG0  warp 0 lane 0: TMA producer (G / grad_value / X / W tiles, 6 stages);
//        warp 2: readiness watcher (turns the per-token-block flags into a watermark in smem)
//   WG1, WG2: wgmma consumers (as in gemm_sm90.cu: dX = G·W and dW = Gᵀ·X with 128x128 tiles,
//        split-K with a deterministic fix-up, TMA-store epilogue)
//   norm warps (warps 1 and 3 of WG0, all of WG3): the norm backward. They sweep the Q/K head
//        rows token block by token block (all CTAs together, block 0 first; 4 rows per warp and
//        step, the next step's loads in flight while a step is published, L2 prefetch hints 4
//        steps ahead), write GQ|GK ([T,1280] bf16, written once, read by TMA from L2) and count
//        each finished group of 4 rows on the token block's flag; then the norm-weight partials
//        (one row per warp) are reduced in a fixed order.
// GV is never copied: grad_value is [B,1,S,256] = [T,256] already, and TMA reads it directly.
// GEMM items that read GQ|GK wait (producer side) for the watermark of the token blocks they
// need; V-only items (dW rows 1280..1535, dX k-blocks 20..23) never wait. dW split pieces take
// strided k-blocks (split s: s, s+sw, ...) so that every piece streams right behind the norm's
// sweep. Deterministic: fixed row-to-warp mapping and fixed reduction orders everywhere.
//
// Requires all CTAs to be co-resident (grid <= SM count, one CTA per SM): the norm work is
// statically assigned; every spin-wait traps after 5 s instead of hanging.
//
// Host API (extern "C", for ctypes; no torch headers): kidxf_plan, kidxf_launch, kidxf_error.
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

#include "sm90_ptx.cuh"

namespace kidxf {

using namespace kidx;

namespace {

constexpr int kN = 640;        // hidden
constexpr int kQK = 1280;      // GQ|GK columns (materialized)
constexpr int kGCols = 1536;   // [GQ|GK|GV]
constexpr int kD = 256;
constexpr int kBN = 128;
constexpr int kNT = kN / kBN;  // 5 column tiles
constexpr int kBK = 64;
constexpr int kKBX = kGCols / kBK;  // 24 k-blocks for dX
constexpr int kKBQK = kQK / kBK;    // 20: k-blocks of dX that read GQ|GK
constexpr int kBox = 64 * 64 * 2;
constexpr int kThreads = 512;
constexpr int kTB = 64;                               // tokens per readiness block
constexpr int kRPW = 4;                               // rows per norm group (one warp)
constexpr int kGroupsPerHead = kTB / kRPW;            // 16
constexpr int kGroupsPerTB = 5 * kGroupsPerHead;      // 80 (4 query heads + 1 key head)
constexpr int kPrefetchAhead = 4;                     // groups of this warp prefetched into L2
constexpr int kNormWarps = 6;  // warps 1 and 3 of WG0 and all of WG3
constexpr unsigned long long kTimeoutNs = 5000000000ull;
// Debug timeline slots (per CTA): 0 entry, 1 producer's first A/B loads issued, 2 consumers'
// first k-block ready, 3 first item's mainloop done, 4 first item's epilogue done, 5 consumers
// done, 6 norm warp 0's first group loaded, 7 its last flag published, 8 finalize done,
// 9 watcher saw every token block, 10 producer's first wait for the norm returned, 11 items.
// Compiled in only with -DKIDXF_TIMELINE (a separate debug build of the library).
constexpr int kTlSlots = 16;
#ifdef KIDXF_TIMELINE
constexpr bool kTimeline = true;
#else
constexpr bool kTimeline = false;
#endif

struct Params {
  const __nv_bfloat16* gq;   // grad_query [B,4,S,256]
  const __nv_bfloat16* gk;   // grad_key [B,1,S,256]
  const __nv_bfloat16* qn;   // q_normed
  const __nv_bfloat16* kn;   // k_normed
  const __nv_bfloat16* qw;   // q_norm_weight [256]
  const __nv_bfloat16* kw;   // k_norm_weight [256]
  const float* qr;           // q_rstd [B,4,S]
  const float* kr;           // k_rstd [B,1,S]
  __nv_bfloat16* g;          // GQ|GK [T,1280] (written here)
  float* npart;              // [grid*4][512] norm-weight partials
  float* dq_norm;
  float* dk_norm;
  __nv_bfloat16* dx;
  __nv_bfloat16* dwq;
  __nv_bfloat16* dwk;
  __nv_bfloat16* dwv;
  float* ws_w;
  float* ws_x;
  int* flags;     // [ntb] finished norm groups per token block
  int* tilecnt;   // [nwt + nxt] split-tile arrivals
  int* sched;     // [1]
  int* norm_done; // [1]
  int batch, seq, tokens, ntb;
  int mx, sx, kbw, sw, nwt, nxt, nvt, w_first;
  unsigned long long* tl;  // debug: [grid][kTlSlots] globaltimer stamps, or null
  int dbg;  // debug timing only (wrong results): bit 0 = GEMM ignores readiness, bit 1 = no norm
};

struct Item {
  int is_w, mt, nt, kb0, kstep, nk, split, nsplit, tile;
};

// Item order: V-only dW pieces (ready at once), then dW Q/K pieces and dX pieces (which first
// is the planner's choice: the longer kind first).
__device__ __forceinline__ Item decode_item(int i, const Params& p) {
  const int n_v = p.nvt * p.sw;
  const int n_wq = (p.nwt - p.nvt) * p.sw;
  const int n_x = p.nxt * p.sx;
  int kind, j;  // kind 0: V dW, 1: Q/K dW, 2: dX
  if (i < n_v) {
    kind = 0;
    j = i;
  } else {
    i -= n_v;
    if (p.w_first) {
      if (i < n_wq) { kind = 1; j = i; } else { kind = 2; j = i - n_wq; }
    } else {
      if (i < n_x) { kind = 2; j = i; } else { kind = 1; j = i - n_x; }
    }
  }
  Item it;
  if (kind != 2) {
    it.is_w = 1;
    const int t = j / p.sw;
    it.split = j - t * p.sw;
    it.nsplit = p.sw;
    it.tile = kind == 0 ? (p.nwt - p.nvt) + t : t;
    it.kb0 = it.split;
    it.kstep = p.sw;
    it.nk = (p.kbw - it.split + p.sw - 1) / p.sw;
  } else {
    it.is_w = 0;
    it.tile = j / p.sx;
    it.split = j - it.tile * p.sx;
    it.nsplit = p.sx;
    it.kb0 = it.split * kKBX / p.sx;
    it.kstep = 1;
    it.nk = (it.split + 1) * kKBX / p.sx - it.kb0;
  }
  it.mt = it.tile / kNT;
  it.nt = it.tile - it.mt * kNT;
  return it;
}

__device__ __forceinline__ int ld_acquire(const int* ptr) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(ptr) : "memory");
  return v;
}
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}
__device__ __forceinline__ void prefetch_l2(const void* ptr, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(ptr), "r"(bytes) : "memory");
}
__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}
// 16-byte read-only load that marks its L2 line evict-first (the norm's inputs are read once;
// G, X and W should stay in L2 for the GEMM).
__device__ __forceinline__ uint4 ld_stream(const void* ptr, uint64_t pol) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr), "l"(pol));
  return v;
}
__device__ __forceinline__ void stamp(const Params& p, int slot) {
  if (kTimeline && p.tl != nullptr) p.tl[blockIdx.x * kTlSlots + slot] = globaltimer();
}
__device__ __forceinline__ void spin_guard(uint64_t t0, uint32_t& n) {
  if ((++n & 255u) == 0 && globaltimer() - t0 > kTimeoutNs) __trap();
}

__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t = __bfloat1622float2(h[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
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

template <int R, int TA, int STAGES, int A_BYTES, int B_BYTES>
__device__ __forceinline__ void mainloop(float (&acc)[R][64], int nk, uint8_t* smem_a, uint8_t* smem_b,
                                         uint64_t* full, uint64_t* empty, int& stage, uint32_t& phase,
                                         int wg, int lane) {
  int prev = -1;
  for (int k = 0; k < nk; ++k) {
    mbar_wait(&full[stage], phase);
    wgmma_fence();
    const uint32_t a_base = smem_u32(smem_a + stage * A_BYTES) + wg * R * kBox;
    const uint32_t b_base = smem_u32(smem_b + stage * B_BYTES);
    mma_kblock<R, TA>(acc, a_base, b_base, k == 0);
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

// Distributed fix-up of a 128x128 split tile: this piece sums float4s [f0, f1) of the fragment-
// order partials over all ns pieces (in split order) and stores them as bf16. Up to 16 loads in
// flight per thread (NS·F), all issued before any is used.
template <int NS, int F, int WM>
__device__ __forceinline__ void dist_reduce(const float4* __restrict__ base, int f0, int f1, int ctid,
                                            int ns, __nv_bfloat16* out, int rows_left) {
  constexpr int TILE_F4 = 4096;
  for (int fb = f0 + ctid; fb < f1; fb += F * 256) {
    float4 v[F][NS];
#pragma unroll
    for (int q = 0; q < F; ++q)
#pragma unroll
      for (int sp = 0; sp < NS; ++sp) {
        const int f = fb + q * 256;
        v[q][sp] = (f < f1 && sp < ns) ? __ldcg(base + static_cast<int64_t>(sp) * TILE_F4 + f)
                                       : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
    for (int q = 0; q < F; ++q) {
      const int f = fb + q * 256;
      if (f >= f1) break;
      float4 t = v[q][0];
#pragma unroll
      for (int sp = 1; sp < NS; ++sp) {
        t.x += v[q][sp].x; t.y += v[q][sp].y; t.z += v[q][sp].z; t.w += v[q][sp].w;
      }
      // f = (r*16 + j)*256 + c: thread c's fragment values of 8-column group j, m64 block r
      const int c = f & 255;
      const int rj = f >> 8;
      const int row = (c >> 7) * WM + ((c >> 5) & 3) * 16 + ((c & 31) >> 2) + (rj >> 4) * 64;
      const int col = (rj & 15) * 8 + (c & 3) * 2;
      if (row < rows_left)
        *reinterpret_cast<__nv_bfloat162*>(out + static_cast<int64_t>(row) * kN + col) =
            __floats2bfloat162_rn(t.x, t.y);
      if (row + 8 < rows_left)
        *reinterpret_cast<__nv_bfloat162*>(out + static_cast<int64_t>(row + 8) * kN + col) =
            __floats2bfloat162_rn(t.z, t.w);
    }
  }
}

// ------------------------------------------------------------------ norm warpgroup
// Group gi: token block tb = gi / 80, head h (0..3 query, 4 key), 4 consecutive tokens.
__device__ __forceinline__ void group_coords(int gi, int& tb, int& h, int& t0) {
  tb = gi / kGroupsPerTB;
  const int rem = gi - tb * kGroupsPerTB;
  h = rem / kGroupsPerHead;
  t0 = tb * kTB + (rem - h * kGroupsPerHead) * kRPW;
}

// An L2 prefetch hint for group gn's grad (which = 0) or normed (which = 1) rows: the part of
// its 4 rows inside one batch (contiguous).
__device__ __forceinline__ void prefetch_group(const Params& p, int gn, int ngroups, int which) {
  if (gn >= ngroups) return;
  int tb, h, t;
  group_coords(gn, tb, h, t);
  if (t >= p.tokens) return;
  const int b = t / p.seq;
  const int s = t - b * p.seq;
  const int n = min(kRPW, min(p.seq - s, p.tokens - t));
  const int64_t idx = h < 4 ? static_cast<int64_t>(b * 4 + h) * p.seq + s : static_cast<int64_t>(b) * p.seq + s;
  const __nv_bfloat16* src = which == 0 ? (h < 4 ? p.gq : p.gk) : (h < 4 ? p.qn : p.kn);
  prefetch_l2(src + idx * kD, static_cast<uint32_t>(n) * kD * 2);
}

__device__ __forceinline__ void norm_warpgroup(const Params& p, int nw, int lane) {
  const int gw = blockIdx.x * kNormWarps + nw;
  const int NW = gridDim.x * kNormWarps;
  const int T = p.tokens;
  const int S = p.seq;
  const int ngroups = p.ntb * kGroupsPerTB;
  float accq[8], acck[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) accq[i] = acck[i] = 0.f;
  bool waited = false;
  const uint64_t pol = evict_first_policy();
  // L2 prefetch hints for this warp's next kPrefetchAhead groups (lane>>1: which group, lane&1:
  // grad or normed rows); each iteration then adds the one kPrefetchAhead+1 ahead.
  if (lane < 2 * kPrefetchAhead) prefetch_group(p, gw + NW * (1 + (lane >> 1)), ngroups, lane & 1);

  uint4 g[kRPW], x[kRPW];
  float r[kRPW];
  // Issues the loads of group gi (rows past T read as zeros).
  auto load_group = [&](int gi) {
    int tb, h, t0;
    group_coords(gi, tb, h, t0);
    const bool is_q = h < 4;
    const __nv_bfloat16* gsrc = is_q ? p.gq : p.gk;
    const __nv_bfloat16* xsrc = is_q ? p.qn : p.kn;
    const float* rsrc = is_q ? p.qr : p.kr;
#pragma unroll
    for (int i = 0; i < kRPW; ++i) {
      const int t = t0 + i;
      if (t < T) {
        const int b = t / S;
        const int s = t - b * S;
        const int64_t idx = is_q ? static_cast<int64_t>(b * 4 + h) * S + s : static_cast<int64_t>(b) * S + s;
        g[i] = ld_stream(reinterpret_cast<const uint4*>(gsrc + idx * kD) + lane, pol);
        x[i] = ld_stream(reinterpret_cast<const uint4*>(xsrc + idx * kD) + lane, pol);
        r[i] = __ldg(rsrc + idx);
      } else {
        g[i] = make_uint4(0, 0, 0, 0);
        x[i] = make_uint4(0, 0, 0, 0);
        r[i] = 0.f;
      }
    }
  };
  int gi = (p.dbg & 2) ? ngroups : gw;
  if (gi < ngroups) load_group(gi);
  while (gi < ngroups) {
    int tb, h, t0;
    group_coords(gi, tb, h, t0);
    if (lane < 2) prefetch_group(p, gi + NW * (kPrefetchAhead + 1), ngroups, lane);
    const bool is_q = h < 4;
    float w[8];
    unpack8(__ldg(reinterpret_cast<const uint4*>(is_q ? p.qw : p.kw) + lane), w);
    float dot[kRPW];
#pragma unroll
    for (int i = 0; i < kRPW; ++i) {
      float gf[8], xf[8];
      unpack8(g[i], gf);
      unpack8(x[i], xf);
      float d = 0.f;
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float gx = __fmul_rn(gf[e], xf[e]);
        if (is_q) accq[e] += gx; else acck[e] += gx;
        const float gh = __bfloat162float(__float2bfloat16_rn(__fmul_rn(gf[e], __fadd_rn(1.0f, w[e]))));
        d = fmaf(gh, xf[e], d);
      }
      dot[i] = d;
    }
    if (kTimeline && nw == 0 && lane == 0 && gi == gw) stamp(p, 6);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int i = 0; i < kRPW; ++i) dot[i] += __shfl_xor_sync(0xffffffffu, dot[i], o);
#pragma unroll
    for (int i = 0; i < kRPW; ++i) {
      const int t = t0 + i;
      if (t < T) {
        float gf[8], xf[8];
        unpack8(g[i], gf);
        unpack8(x[i], xf);
        const float m = dot[i] * (1.0f / kD);
        uint4 out;
        __nv_bfloat162* o2 = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          float v[2];
#pragma unroll
          for (int k = 0; k < 2; ++k) {
            const int e = 2 * q + k;
            const float gh = __bfloat162float(__float2bfloat16_rn(__fmul_rn(gf[e], __fadd_rn(1.0f, w[e]))));
            v[k] = __fmul_rn(r[i], __fsub_rn(gh, __fmul_rn(m, xf[e])));
          }
          o2[q] = __floats2bfloat162_rn(v[0], v[1]);
        }
        *(reinterpret_cast<uint4*>(p.g + static_cast<int64_t>(t) * kQK + h * kD) + lane) = out;
      }
    }
    // The next group's loads go out before this group is published, so the fence below waits
    // for the stores while those loads are in flight.
    const int gn = gi + NW;
    if (gn < ngroups) load_group(gn);
    // Publish: the rows are visible to the other SMs' bulk-tensor (async proxy) loads before
    // the flag counts them.
    fence_proxy_async_global();
    __threadfence();
    __syncwarp();
    if (!waited) {
      pdl_wait();  // the flags were zeroed by the kernel in front of this one
      waited = true;
    }
    if (lane == 0) atomicAdd(p.flags + tb, 1);
    if (kTimeline && nw == 0 && lane == 0 && gn >= ngroups) stamp(p, 7);
    gi = gn;
  }

  // Norm-weight partials: one row of 512 per warp (q dims 0..255, k dims 256..511).
  float* row = p.npart + static_cast<int64_t>(gw) * 2 * kD;
  reinterpret_cast<float4*>(row)[lane * 2] = make_float4(accq[0], accq[1], accq[2], accq[3]);
  reinterpret_cast<float4*>(row)[lane * 2 + 1] = make_float4(accq[4], accq[5], accq[6], accq[7]);
  reinterpret_cast<float4*>(row + kD)[lane * 2] = make_float4(acck[0], acck[1], acck[2], acck[3]);
  reinterpret_cast<float4*>(row + kD)[lane * 2 + 1] = make_float4(acck[4], acck[5], acck[6], acck[7]);
  if (!waited) pdl_wait();
  __threadfence();
  named_barrier_sync(2, kNormWarps * 32);
  if (nw == 0 && lane == 0) {
    atomicAdd(p.norm_done, 1);
    const uint64_t t0 = globaltimer();
    uint32_t n = 0;
    while (ld_acquire(p.norm_done) < static_cast<int>(gridDim.x)) {
      __nanosleep(128);
      spin_guard(t0, n);
    }
  }
  named_barrier_sync(2, kNormWarps * 32);
  // grad_{q,k}_norm_weight[d] = Σ over the partial rows in a fixed order (this CTA's dims).
  const int rows = NW;
  const int per = (2 * kD + gridDim.x - 1) / gridDim.x;
  const int d0 = blockIdx.x * per;
  const int d1 = min(2 * kD, d0 + per);
  for (int d = d0 + nw; d < d1; d += kNormWarps) {
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
    int q = lane;
    for (; q + 96 < rows; q += 128) {
      s0 += __ldcg(p.npart + static_cast<int64_t>(q) * 2 * kD + d);
      s1 += __ldcg(p.npart + static_cast<int64_t>(q + 32) * 2 * kD + d);
      s2 += __ldcg(p.npart + static_cast<int64_t>(q + 64) * 2 * kD + d);
      s3 += __ldcg(p.npart + static_cast<int64_t>(q + 96) * 2 * kD + d);
    }
    for (; q < rows; q += 32) s0 += __ldcg(p.npart + static_cast<int64_t>(q) * 2 * kD + d);
    float s = (s0 + s1) + (s2 + s3);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) {
      if (d < kD) p.dq_norm[d] = s; else p.dk_norm[d - kD] = s;
    }
  }
  if (nw == 0 && lane == 0) stamp(p, 8);
}

// ------------------------------------------------------------------ the kernel
template <int WM>
__global__ void __launch_bounds__(kThreads, 1)
    fused_kernel(const __grid_constant__ CUtensorMap tm_g, const __grid_constant__ CUtensorMap tm_gv,
                 const __grid_constant__ CUtensorMap tm_x, const __grid_constant__ CUtensorMap tm_wq,
                 const __grid_constant__ CUtensorMap tm_wk, const __grid_constant__ CUtensorMap tm_wv,
                 const __grid_constant__ CUtensorMap tm_dx, const __grid_constant__ CUtensorMap tm_dwq,
                 const __grid_constant__ CUtensorMap tm_dwk, const __grid_constant__ CUtensorMap tm_dwv,
                 const __grid_constant__ Params p) {
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
  volatile int* ready_tb = last_flag + 1;  // watermark: token blocks [0, *ready_tb) are normalized

  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int n_items = p.nwt * p.sw + p.nxt * p.sx;
  if (p.dbg & 4) return;  // debug: the launch floor (an empty kernel)
  if (threadIdx.x == 0) stamp(p, 0);

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 8);  // lane 0 of each consumer warp
    }
    for (int s = 0; s < 2; ++s) {
      mbar_init(&item_full[s], 1);
      mbar_init(&item_empty[s], 8);
    }
    *ready_tb = 0;
    fence_barrier_init();
    tma_prefetch_desc(&tm_g);
    tma_prefetch_desc(&tm_gv);
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

  if (warp >= 12 || warp == 1 || warp == 3) {
    // ------------------------------------------------------------ norm warps (6 per CTA)
    norm_warpgroup(p, warp >= 12 ? warp - 10 : warp >> 1, lane);
    return;
  }

  if (warp < 4) {
    // ------------------------------------------------------------ producer warpgroup
    if (warp == 0 && lane == 0) {
      int stage = 0;
      uint32_t phase = 0;
      int islot = 0;
      uint32_t iphase = 0;
      int known = 0;  // token blocks known to be normalized
      bool waited = false;
      auto wait_ready = [&](int need) {
        if (need <= known || (p.dbg & 1)) return;
        const uint64_t t0 = globaltimer();
        uint32_t n = 0;
        int r;
        while ((r = *ready_tb) < need) spin_guard(t0, n);
        if (kTimeline && known == 0) stamp(p, 10);
        known = r;
        __threadfence_block();
        fence_proxy_async_global();
      };
      auto load_a = [&](const Item& it, int kb, int st) {
        uint8_t* a = smem_a + st * A_BYTES;
        if (it.is_w) {
          // A = Gᵀ tile: G columns [mt*BM, +BM) (MN), tokens [kb*64, +64) (K)
          const int m0 = it.mt * BM;
#pragma unroll
          for (int c = 0; c < BM / 64; ++c) {
            if (m0 < kQK) tma_load_2d(a + c * kBox, &tm_g, &full[st], m0 + c * 64, kb * kBK);
            else tma_load_2d(a + c * kBox, &tm_gv, &full[st], m0 - kQK + c * 64, kb * kBK);
          }
        } else {
          // A = G rows [mt*BM, +BM) (M), columns [kb*64, +64) (K)
#pragma unroll
          for (int c = 0; c < BM / 64; ++c) {
            if (kb < kKBQK) tma_load_2d(a + c * kBox, &tm_g, &full[st], kb * kBK, it.mt * BM + c * 64);
            else tma_load_2d(a + c * kBox, &tm_gv, &full[st], (kb - kKBQK) * kBK, it.mt * BM + c * 64);
          }
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
      // The first item is static (no atomic); later ones come from the counter.
      int item = static_cast<int>(blockIdx.x) < n_items ? static_cast<int>(blockIdx.x) : -1;
      bool first = true;
      bool first_loads = true;
      while (true) {
        if (!first) {
          if (!waited) { pdl_wait(); waited = true; }
          item = static_cast<int>(gridDim.x) + atomicAdd(p.sched, 1);
          if (item >= n_items) item = -1;
        }
        first = false;
        mbar_wait(&item_empty[islot], iphase ^ 1);
        item_slot[islot] = item;
        mbar_arrive(&item_full[islot]);
        if (++islot == 2) { islot = 0; iphase ^= 1; }
        if (item < 0) break;
        const Item it = decode_item(item, p);
        const bool w_norm = it.is_w && it.mt * BM < kQK;
        const int x_need = min(p.ntb, (it.mt + 1) * (BM / kTB));
        // dX pieces take their V k-blocks (20..23: grad_value, never waits) first, which hides
        // the norm's latency at the start; the sum order is still fixed (deterministic).
        const int kfirst = (!it.is_w && it.kb0 + it.nk > kKBQK) ? max(0, kKBQK - it.kb0) : 0;
        for (int k = 0; k < it.nk; ++k) {
          int kk = k + kfirst;
          if (kk >= it.nk) kk -= it.nk;
          const int kb = it.kb0 + kk * it.kstep;
          mbar_wait(&empty[stage], phase ^ 1);
          mbar_expect_tx(&full[stage], STAGE_TX);
          load_b(it, kb, stage);
          if (it.is_w) {
            if (w_norm) wait_ready(kb + 1);
          } else if (kb < kKBQK) {
            wait_ready(x_need);
          }
          load_a(it, kb, stage);
          if (kTimeline && first_loads) { stamp(p, 1); first_loads = false; }
          if (++stage == STAGES) { stage = 0; phase ^= 1; }
        }
      }
    } else if (warp == 2) {
      // Readiness watcher: advances the watermark over token blocks whose 80 groups are done.
      pdl_wait();
      const int ntb = (p.dbg & 1) ? 0 : p.ntb;
      int ready = 0;
      const uint64_t t0 = globaltimer();
      uint32_t n = 0;
      while (ready < ntb) {
        const int idx = ready + lane;
        const int ok = idx >= ntb ? 1 : (ld_acquire(p.flags + idx) >= kGroupsPerTB ? 1 : 0);
        const unsigned bal = __ballot_sync(0xffffffffu, ok);
        const int pre = bal == 0xffffffffu ? 32 : __ffs(~bal) - 1;
        __syncwarp();
        if (pre > 0) {
          ready = min(ntb, ready + pre);
          if (lane == 0) {
            __threadfence_block();
            *ready_tb = ready;
          }
        } else {
          spin_guard(t0, n);
        }
      }
      if (lane == 0) stamp(p, 9);
    }
    return;
  }

  // -------------------------------------------------------------- consumer warpgroups
  pdl_wait();  // the split-tile counters were zeroed by the kernel in front of this one
  const int wg = (threadIdx.x >> 7) - 1;  // 0 or 1
  const int ctid = threadIdx.x - 128;     // 0..255
  const int wrow = wg * WM + (warp & 3) * 16 + (lane >> 2);  // tile row of this thread's fragment
  int stage = 0;
  uint32_t phase = 0;
  int islot = 0;
  uint32_t iphase = 0;
  float acc[R][64];
  int nitems = 0;

  while (true) {
    mbar_wait(&item_full[islot], iphase);
    const int item = item_slot[islot];
    __syncwarp();
    if (lane == 0) mbar_arrive(&item_empty[islot]);
    if (++islot == 2) { islot = 0; iphase ^= 1; }
    if (item < 0) break;
    const Item it = decode_item(item, p);
    // (The first wgmma ignores the accumulators; redefining them here ends their live range at
    // the previous item's epilogue, which frees registers for the fix-up.)
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[r][i] = 0.f;

    if (kTimeline && ctid == 0 && nitems == 0 && p.tl != nullptr) {
      mbar_wait(&full[stage], phase);
      stamp(p, 2);
    }
    if (it.is_w) mainloop<R, 1, STAGES, A_BYTES, B_BYTES>(acc, it.nk, smem_a, smem_b, full, empty, stage, phase, wg, lane);
    else mainloop<R, 0, STAGES, A_BYTES, B_BYTES>(acc, it.nk, smem_a, smem_b, full, empty, stage, phase, wg, lane);
    if (kTimeline && ctid == 0 && nitems == 0) stamp(p, 3);

    // ------------------------------------------------------------ epilogue
    constexpr int TILE_F4 = BM * kBN / 4;  // float4s per fp32 partial
    float* ws = it.is_w ? p.ws_w : p.ws_x;
    bool store_tile = true;
    if (it.nsplit > 1) {
      // Split tile: publish this piece's partial (fragment order, coalesced). When all pieces of
      // the tile are first items of distinct CTAs (all co-resident), they wait for each other
      // and each sums one slice of the tile over all partials (split order); otherwise the last
      // piece to arrive sums the whole tile. Either way the result is deterministic.
      const bool dist = (item - it.split + it.nsplit - 1) < static_cast<int>(gridDim.x);
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
        int* counter = p.tilecnt + (it.is_w ? it.tile : p.nwt + it.tile);
        const int old = atomicAdd(counter, 1);
        if (dist) {
          const uint64_t t0 = globaltimer();
          uint32_t n = 0;
          while (ld_acquire(counter) < it.nsplit) {
            __nanosleep(32);
            spin_guard(t0, n);
          }
          *last_flag = 0;
        } else {
          *last_flag = (old == it.nsplit - 1) ? 1 : 0;
        }
      }
      named_barrier_sync(1, 256);
      store_tile = *last_flag != 0;
      named_barrier_sync(1, 256);  // last_flag is reused by the next item
      if (dist) {
        const float4* base = reinterpret_cast<const float4*>(ws) +
                             static_cast<int64_t>(it.tile) * it.nsplit * TILE_F4;
        static_assert(TILE_F4 == 4096, "the distributed fix-up assumes 128x128 tiles");
        const int f0 = it.split * TILE_F4 / it.nsplit;
        const int f1 = (it.split + 1) * TILE_F4 / it.nsplit;
        __nv_bfloat16* out;
        int rows_left;  // rows of this tile that exist in the output
        if (it.is_w) {
          const int m0 = it.mt * BM;
          out = m0 < 1024 ? p.dwq + static_cast<int64_t>(m0) * kN
                          : (m0 < 1280 ? p.dwk + static_cast<int64_t>(m0 - 1024) * kN
                                       : p.dwv + static_cast<int64_t>(m0 - 1280) * kN);
          rows_left = BM;
        } else {
          out = p.dx + static_cast<int64_t>(it.mt) * BM * kN;
          rows_left = p.tokens - it.mt * BM;
        }
        out += it.nt * kBN;
        switch (it.nsplit) {
          case 2: dist_reduce<2, 4, WM>(base, f0, f1, ctid, 2, out, rows_left); break;
          case 3: dist_reduce<3, 3, WM>(base, f0, f1, ctid, 3, out, rows_left); break;
          case 4: dist_reduce<4, 2, WM>(base, f0, f1, ctid, 4, out, rows_left); break;
          case 6: dist_reduce<6, 2, WM>(base, f0, f1, ctid, 6, out, rows_left); break;
          case 8: dist_reduce<8, 2, WM>(base, f0, f1, ctid, 8, out, rows_left); break;
          case 12: dist_reduce<12, 1, WM>(base, f0, f1, ctid, 12, out, rows_left); break;
          default: dist_reduce<16, 1, WM>(base, f0, f1, ctid, it.nsplit, out, rows_left); break;
        }
      }
    }
    if (store_tile) {
      if (it.nsplit > 1) __threadfence();
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
              for (int s = 0; s < it.nsplit; ++s) {
                const float4* src = slots + static_cast<int64_t>(s) * TILE_F4 + r * 16 * 256;
                constexpr int VB = R == 1 ? 16 : 4;
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
    if (kTimeline && ctid == 0 && nitems == 0) stamp(p, 4);
    if (kTimeline) ++nitems;
  }
  if (ctid == 0) bulk_wait_all0();  // the last tile's store has completed
  if (ctid == 0) {
    stamp(p, 5);
    if (kTimeline && p.tl != nullptr) p.tl[blockIdx.x * kTlSlots + 11] = nitems;
  }
}

__global__ void zero_kernel(int* __restrict__ ptr, int n) {
  pdl_launch_dependents();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) ptr[i] = 0;
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

struct Plan {
  int bm, tokens, mx, sx, kbw, sw, nwt, nxt, nvt, w_first, grid, ntb;
  double predicted_us;
};

// Items handed out in order to the least-loaded CTA (what the scheduler does); returns makespan.
double simulate(const std::vector<std::pair<int, double>>& groups, int grid) {
  std::vector<double> load(grid, 0.0);
  auto cmp = [](double a, double b) { return a > b; };
  std::make_heap(load.begin(), load.end(), cmp);
  for (const auto& g : groups) {
    for (int i = 0; i < g.first; ++i) {
      std::pop_heap(load.begin(), load.end(), cmp);
      load.back() += g.second;
      std::push_heap(load.begin(), load.end(), cmp);
    }
  }
  return *std::max_element(load.begin(), load.end());
}

// The cost model of gemm_sm90.cu (calibrated there on an H200: 0.42 us per 64-deep k-block of a
// 128x128 tile, ~0.9 us per item, last-arrival fix-up 1.0 + 0.6·n us), plus the distributed
// fix-up (all pieces in the first wave: one round trip, ~1 us).
Plan plan_for_bm(int tokens, int num_sms, int bm) {
  const double kb_us = bm == 128 ? 0.42 : 0.64;
  const double item_us = bm == 128 ? 0.9 : 1.3;
  auto split_us = [&](int n, bool dist) {
    if (n <= 1) return 0.0;
    return dist ? 1.0 + 0.05 * n : (1.0 + 0.6 * n) * (bm / 128.0);
  };
  Plan best{};
  best.predicted_us = 1e30;
  const int mx = (tokens + bm - 1) / bm;
  const int kbw = (tokens + kBK - 1) / kBK;
  const int nwt = (kGCols / bm) * kNT;
  const int nxt = mx * kNT;
  const int nvt = ((kGCols - kQK) / bm) * kNT;
  const int ntb = (tokens + kTB - 1) / kTB;
  const int sx_options[] = {1, 2, 3, 4, 6, 8, 12};
  for (int sx : sx_options) {
    if (bm == 256 && sx > 1) continue;
    for (int sw = 1; sw <= std::min(kbw, bm == 256 ? 2 : 16); ++sw) {
      const int n_v = nvt * sw, n_wq = (nwt - nvt) * sw, n_x = nxt * sx;
      const int n_all = n_v + n_wq + n_x;
      const int grid = std::min(num_sms, n_all);
      for (int wf = 0; wf < 2; ++wf) {
        const int x_end = wf ? n_all : n_v + n_x;
        const int wq_end = wf ? n_v + n_wq : n_all;
        const double cx = item_us + kb_us * ((kKBX + sx - 1) / sx) + split_us(sx, x_end <= grid);
        const double cv = item_us + kb_us * ((kbw + sw - 1) / sw) + split_us(sw, n_v <= grid);
        const double cw = item_us + kb_us * ((kbw + sw - 1) / sw) + split_us(sw, wq_end <= grid);
        std::vector<std::pair<int, double>> groups;
        groups.push_back({n_v, cv});
        if (wf) { groups.push_back({n_wq, cw}); groups.push_back({n_x, cx}); }
        else { groups.push_back({n_x, cx}); groups.push_back({n_wq, cw}); }
        const double t = simulate(groups, grid);
        if (t < best.predicted_us - 1e-9) {
          best = Plan{bm, tokens, mx, sx, kbw, sw, nwt, nxt, nvt, wf, grid, ntb, t};
        }
      }
    }
  }
  return best;
}

Plan make_plan(int tokens, int num_sms, int bm) {
  static std::mutex mu;
  static std::map<std::tuple<int, int, int>, Plan> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_tuple(tokens, num_sms, bm);
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  // 128-row tiles only: with 512 threads a thread gets at most 128 registers, too few for the
  // 256-row tiles' accumulators (they spilled).
  (void)bm;
  Plan plan = plan_for_bm(tokens, num_sms, 128);
  cache[key] = plan;
  return plan;
}

int64_t counter_ints(const Plan& p) { return static_cast<int64_t>(p.ntb) + p.nwt + p.nxt + 2; }

int64_t workspace_floats(const Plan& p) {
  const int64_t tile = static_cast<int64_t>(p.bm) * kBN;
  int64_t n = 0;
  if (p.sw > 1) n += tile * p.nwt * p.sw;
  if (p.sx > 1) n += tile * p.nxt * p.sx;
  return n;
}

template <int WM>
cudaError_t ensure_smem_attr(int smem) {
  static std::mutex mu;
  static std::set<int> done;
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  std::lock_guard<std::mutex> lock(mu);
  if (done.count(dev)) return cudaSuccess;
  err = cudaFuncSetAttribute(fused_kernel<WM>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err == cudaSuccess) done.insert(dev);
  return err;
}

}  // namespace
}  // namespace kidxf

// ---------------------------------------------------------------- C API (ctypes)
extern "C" {

// out[0..15]: bm, grid, ntb, counter ints, workspace floats, norm-partial floats, G elements,
// mx, sx, kbw, sw, nwt, nxt, nvt, w_first, predicted ns. Returns the number of values written.
int kidxf_plan(long long tokens, int num_sms, int bm, long long* out, int nout) {
  using namespace kidxf;
  if (tokens < 1 || tokens >= (1LL << 30) || num_sms < 1 || nout < 16) return -1;
  const Plan p = make_plan(static_cast<int>(tokens), num_sms, bm);
  const long long v[16] = {p.bm, p.grid, p.ntb, counter_ints(p), workspace_floats(p),
                           static_cast<long long>(p.grid) * kNormWarps * 2 * kD,
                           static_cast<long long>(tokens) * kQK, p.mx, p.sx, p.kbw, p.sw, p.nwt,
                           p.nxt, p.nvt, p.w_first, static_cast<long long>(p.predicted_us * 1000)};
  for (int i = 0; i < 16; ++i) out[i] = v[i];
  return 16;
}

// args (device pointers, then ints), in this order:
//  0 grad_query 1 grad_key 2 grad_value 3 hidden_states 4 q_weight 5 k_weight 6 v_weight
//  7 q_norm_weight 8 k_norm_weight 9 q_rstd 10 k_rstd 11 q_normed 12 k_normed
//  13 grad_hidden 14 grad_q_weight 15 grad_k_weight 16 grad_v_weight 17 grad_q_norm_weight
//  18 grad_k_norm_weight 19 g [T,1280] 20 workspace 21 norm partials 22 counters
//  23 batch 24 seq 25 num_sms 26 bm (0 = auto) 27 pdl (0/1) [28 debug bits, timing only]
//  [29 debug timeline [grid][16] u64, or 0]
// Returns a cudaError_t value (0 = success), or -1 when a tensor map could not be encoded.
int kidxf_launch(const unsigned long long* a, int n, void* stream_ptr) {
  using namespace kidxf;
  if (n < 28) return -2;
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_ptr);
  auto bf = [&](int i) { return reinterpret_cast<__nv_bfloat16*>(a[i]); };
  const int batch = static_cast<int>(a[23]);
  const int seq = static_cast<int>(a[24]);
  const int sms = static_cast<int>(a[25]);
  const int bm = static_cast<int>(a[26]);
  const bool pdl = a[27] != 0;
  const int64_t T = static_cast<int64_t>(batch) * seq;
  if (T < 1 || T >= (1LL << 30)) return -2;
  const Plan plan = make_plan(static_cast<int>(T), sms, bm);

  CUtensorMap tm_g, tm_gv, tm_x, tm_wq, tm_wk, tm_wv, tm_dx, tm_dwq, tm_dwk, tm_dwv;
  if (!make_map(&tm_g, bf(19), T, kQK) || !make_map(&tm_gv, bf(2), T, 256) ||
      !make_map(&tm_x, bf(3), T, kN) || !make_map(&tm_wq, bf(4), 1024, kN) ||
      !make_map(&tm_wk, bf(5), 256, kN) || !make_map(&tm_wv, bf(6), 256, kN) ||
      !make_map(&tm_dx, bf(13), T, kN) || !make_map(&tm_dwq, bf(14), 1024, kN) ||
      !make_map(&tm_dwk, bf(15), 256, kN) || !make_map(&tm_dwv, bf(16), 256, kN))
    return -1;

  Params p;
  p.gq = bf(0);
  p.gk = bf(1);
  p.qn = bf(11);
  p.kn = bf(12);
  p.qw = bf(7);
  p.kw = bf(8);
  p.qr = reinterpret_cast<const float*>(a[9]);
  p.kr = reinterpret_cast<const float*>(a[10]);
  p.g = bf(19);
  p.dx = bf(13);
  p.dwq = bf(14);
  p.dwk = bf(15);
  p.dwv = bf(16);
  p.npart = reinterpret_cast<float*>(a[21]);
  p.dq_norm = reinterpret_cast<float*>(a[17]);
  p.dk_norm = reinterpret_cast<float*>(a[18]);
  const int64_t tile = static_cast<int64_t>(plan.bm) * kBN;
  float* ws = reinterpret_cast<float*>(a[20]);
  p.ws_w = ws;
  p.ws_x = ws + (plan.sw > 1 ? tile * plan.nwt * plan.sw : 0);
  int* counters = reinterpret_cast<int*>(a[22]);
  p.flags = counters;
  p.tilecnt = counters + plan.ntb;
  p.sched = p.tilecnt + plan.nwt + plan.nxt;
  p.norm_done = p.sched + 1;
  p.batch = batch;
  p.seq = seq;
  p.tokens = static_cast<int>(T);
  p.ntb = plan.ntb;
  p.mx = plan.mx;
  p.sx = plan.sx;
  p.kbw = plan.kbw;
  p.sw = plan.sw;
  p.nwt = plan.nwt;
  p.nxt = plan.nxt;
  p.nvt = plan.nvt;
  p.w_first = plan.w_first;
  p.dbg = n > 28 ? static_cast<int>(a[28]) : 0;
  p.tl = n > 29 ? reinterpret_cast<unsigned long long*>(a[29]) : nullptr;

  const int nctr = static_cast<int>(counter_ints(plan));
  cudaError_t err = cudaSuccess;
  if (!(p.dbg & 8)) {  // (debug bit 8, with bit 4 only: no zeroing kernel)
    zero_kernel<<<1, 1024, 0, stream>>>(counters, nctr);
    err = cudaGetLastError();
    if (err != cudaSuccess) return static_cast<int>(err);
  }

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
  err = ensure_smem_attr<64>(smem);
  if (err == cudaSuccess)
    err = cudaLaunchKernelEx(&cfg, fused_kernel<64>, tm_g, tm_gv, tm_x, tm_wq, tm_wk, tm_wv, tm_dx,
                             tm_dwq, tm_dwk, tm_dwv, p);
  if (err != cudaSuccess) return static_cast<int>(err);
  return static_cast<int>(cudaGetLastError());
}

const char* kidxf_error(int code) {
  if (code == -1) return "cuTensorMapEncodeTiled failed (tensor map)";
  if (code == -2) return "bad arguments";
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

}  // extern "C"
