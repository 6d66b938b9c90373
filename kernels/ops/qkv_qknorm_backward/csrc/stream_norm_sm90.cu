// The Q/K RMSNorm backward of 051 (ext-streamnorm's norm kernel), reading rows in memory order.
//
// ext-cluster's norm kernel (in git: csrc/cluster_sm90.cu at a1f895f) is bound by instruction
// issue: its loop has ~255 SASS instructions per (token, head) row (a division by S and by T for
// every row, a selection between the Q and the K weights for every element, values unpacked from
// bf16 three times). With 16 warps per SM
// issuing about 2.3 instructions per clock, that is ~17 µs of issue at T = 8192, while its 63 MB
// of traffic needs ~15 µs at 4.2 TB/s (Nsight Compute measured 21.4 µs, 2.34 TB/s).
//
// stream_norm_kernel reads the rows in memory order instead:
// - grad_query / q_normed [B,4,S,256] are 4T consecutive 512-byte rows, grad_key / k_normed
//   T more; each warp takes a contiguous run of them (Q first, then K), so a load address is the
//   row index times 512 and the rstd index is the row index;
// - the output position (token, head) of a row is tracked incrementally (no division per row);
// - one copy of the row loop serves Q and K through a small descriptor (two inlined copies
//   spilled): no per-element selection, one weight array live;
// - x̂ is unpacked to fp32 once and kept for the second pass; ĝ is kept packed as bf16 (it is
//   bf16 by definition) and unpacked twice, which keeps the loop at 80 registers without spills;
// - rows arrive through a per-warp cp.async ring of three slots of two rows: two steps (4 KiB)
//   are in flight while a step is computed, and the bytes in flight cost no registers.
// The loop has ~165 SASS instructions per row (330 per two-row step), about two thirds of
// ext-cluster's. Measured on the H200 (kernels/BENCHMARKS.md): 17.4 µs at T = 8192, 2.72 TB/s.
//
// Launched just before the GEMM kernel (cluster_gemm.h), which reads GQK and the partials.
#include "stream_norm.h"

#include <stdint.h>

#include <algorithm>

#include "common/launch.cuh"
#include "common/ptx.cuh"
#include "common/sm90.cuh"

namespace kidx {
namespace norm {
namespace {

constexpr int kD = 256;
constexpr int kWarps = 12;                  // warps per norm block
constexpr int kNormThreadsS = kWarps * 32;  // 384
constexpr int kBlocksPerSm = 2;             // 24 warps per SM: ≤ 85 registers per thread
constexpr int kRowU4 = kD / 8;              // 32 uint4 per 256-value bf16 row
constexpr int kOutRowU4 = 1280 / 8;         // 160 uint4 per GQK row

struct StreamNormArgs : Operands {
  int chunk;  // rows per warp
};

// One tensor's rows in memory order: row (b·H + h)·S + s of g, x and rstd is token b·S + s,
// head h of the output (H = 4 for Q; H = 1 for K, whose head sits at column 1024).
struct Rows {
  const uint4* g;
  const uint4* x;
  const float* rstd;
  const uint4* w;  // norm weight [256]
  int head_shift;  // log2 H
  int col0;        // first output column / 8
};

// Per-warp ring of kStages slots, each two rows of g and x̂ plus their rstd, filled by cp.async
// (the bytes in flight then cost no registers; two rows in registers as well would spill).
constexpr int kStages = 3;
constexpr int kSlotBytes = 2 * 2 * kD * 2 + 16;  // g[2], x[2] (512 B each), rstd[2] (+ pad)
constexpr int kWarpRingBytes = kStages * kSlotBytes;
constexpr int kSmemBytes = kWarps * kWarpRingBytes + kWarps * 2 * kD * 4;  // rings + partials

// Issue the copies of rows r, r + 1 into a slot (a missing second row copies the last one again;
// no copies past r1); always one commit group.
__device__ __forceinline__ void fetch_pair(const Rows& t, int r, int r1, int lane, uint32_t slot) {
  if (r < r1) {  // warp-uniform
    const int rb = min(r + 1, r1 - 1);
    const int64_t off_a = static_cast<int64_t>(r) * kRowU4 + lane;
    const int64_t off_b = static_cast<int64_t>(rb) * kRowU4 + lane;
    cp_async16(slot + lane * 16, t.g + off_a);
    cp_async16(slot + 512 + lane * 16, t.g + off_b);
    cp_async16(slot + 1024 + lane * 16, t.x + off_a);
    cp_async16(slot + 1536 + lane * 16, t.x + off_b);
    if (lane < 2) cp_async4(slot + 2048 + lane * 4, t.rstd + (lane == 0 ? r : rb));
  }
  cp_async_commit();
}

// Rows [r0, r1) of one tensor, two per step, the next two steps' rows in flight. acc: this
// lane's 8 dims of Σ g·x̂.
__device__ __forceinline__ void norm_rows(const StreamNormArgs& a, const Rows& t, int r0, int r1, int lane,
                                          uint8_t* ring, float (&acc)[8]) {
  if (r0 >= r1) return;
  float w1[8];
  unpack8(__ldg(t.w + lane), w1);
#pragma unroll
  for (int i = 0; i < 8; ++i) w1[i] += 1.0f;
  const int head_mask = (1 << t.head_shift) - 1;
  // (b·H + h, s) of row r0, advanced row by row (no division in the loop).
  int bh = r0 / a.seq;
  int s = r0 - bh * a.seq;
  const uint32_t ring_addr = smem_u32(ring);
  fetch_pair(t, r0, r1, lane, ring_addr);
  fetch_pair(t, r0 + 2, r1, lane, ring_addr + kSlotBytes);
  int stage = 0;
  for (int r = r0; r < r1; r += 2) {
    cp_async_wait<1>();  // this step's group has landed (the next one may still be in flight)
    __syncwarp();        // rstd was copied by lanes 0 and 1
    const uint8_t* slot = ring + stage * kSlotBytes;
    uint4 graw[2], xraw[2];
    float rstd[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      graw[i] = *reinterpret_cast<const uint4*>(slot + i * 512 + lane * 16);
      xraw[i] = *reinterpret_cast<const uint4*>(slot + 1024 + i * 512 + lane * 16);
      rstd[i] = reinterpret_cast<const float*>(slot + 2048)[i];  // lanes 0 and 1 copied them
    }
    __syncwarp();  // every lane has read the slot that the next fetch overwrites
    const int refill = stage == 0 ? kStages - 1 : stage - 1;
    fetch_pair(t, r + 4, r1, lane, ring_addr + refill * kSlotBytes);
    stage = stage == kStages - 1 ? 0 : stage + 1;

    const bool two = r + 1 < r1;
    uint4 gh[2];  // ĝ = bf16(g·(1+w)), packed
    float xf[2][8], dot[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float g[8], ghf[8];
      unpack8(graw[i], g);
      unpack8(xraw[i], xf[i]);
      if (i == 0 || two) {
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[j] = fmaf(g[j], xf[i][j], acc[j]);
      }
      gh[i].x = pack_bf16x2(g[0] * w1[0], g[1] * w1[1]);
      gh[i].y = pack_bf16x2(g[2] * w1[2], g[3] * w1[3]);
      gh[i].z = pack_bf16x2(g[4] * w1[4], g[5] * w1[5]);
      gh[i].w = pack_bf16x2(g[6] * w1[6], g[7] * w1[7]);
      unpack8(gh[i], ghf);
      float d0 = 0.f, d1 = 0.f;
#pragma unroll
      for (int j = 0; j < 8; j += 2) {
        d0 = fmaf(ghf[j], xf[i][j], d0);
        d1 = fmaf(ghf[j + 1], xf[i][j + 1], d1);
      }
      dot[i] = d0 + d1;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      dot[0] += __shfl_xor_sync(0xffffffffu, dot[0], o);
      dot[1] += __shfl_xor_sync(0xffffffffu, dot[1], o);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      if (i == 1 && !two) break;
      // out = rstd·(ĝ − m·x̂), m = Σ ĝ·x̂ / 256
      const float rs = rstd[i];
      const float c = rs * dot[i] * (1.0f / kD);
      float ghf[8];
      unpack8(gh[i], ghf);
      uint4 out;
      out.x = pack_bf16x2(fmaf(-c, xf[i][0], rs * ghf[0]), fmaf(-c, xf[i][1], rs * ghf[1]));
      out.y = pack_bf16x2(fmaf(-c, xf[i][2], rs * ghf[2]), fmaf(-c, xf[i][3], rs * ghf[3]));
      out.z = pack_bf16x2(fmaf(-c, xf[i][4], rs * ghf[4]), fmaf(-c, xf[i][5], rs * ghf[5]));
      out.w = pack_bf16x2(fmaf(-c, xf[i][6], rs * ghf[6]), fmaf(-c, xf[i][7], rs * ghf[7]));
      const int token = (bh >> t.head_shift) * a.seq + s;
      a.gqk[static_cast<int64_t>(token) * kOutRowU4 + t.col0 + (bh & head_mask) * kRowU4 + lane] = out;
      if (++s == a.seq) {
        s = 0;
        ++bh;
      }
    }
  }
  cp_async_wait<0>();  // no copy outlives the loop (the ring is reused by the next run)
  __syncwarp();
}

__global__ void __launch_bounds__(kNormThreadsS, kBlocksPerSm) stream_norm_kernel(StreamNormArgs a) {
  extern __shared__ __align__(16) uint8_t norm_smem[];
  float(*red)[2 * kD] = reinterpret_cast<float(*)[2 * kD]>(norm_smem + kWarps * kWarpRingBytes);
  // The GEMM kernel may be scheduled now: it waits (griddepcontrol.wait) before reading GQK or
  // the partials, and starts its V-only tiles and its W/X loads meanwhile.
  pdl_launch_dependents();
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (a.timeline != nullptr && threadIdx.x == 0) {
    a.timeline[4 * blockIdx.x] = globaltimer();
    a.timeline[4 * blockIdx.x + 2] = smid();
  }
  // This warp's rows [lo, hi) of the 5T rows: Q rows 0..4T-1, then K rows.
  const int qrows = 4 * a.tokens;
  const int64_t lo64 = static_cast<int64_t>(blockIdx.x * kWarps + warp) * a.chunk;
  const int64_t rows = 5LL * a.tokens;
  const int lo = static_cast<int>(lo64 < rows ? lo64 : rows);
  const int hi = static_cast<int>(lo64 + a.chunk < rows ? lo64 + a.chunk : rows);
  uint8_t* ring = norm_smem + warp * kWarpRingBytes;
  // Q rows, then K rows, through one copy of the loop; Σ g·x̂ of this lane's 8 dims is parked in
  // shared memory after each.
#pragma unroll 1
  for (int part = 0; part < 2; ++part) {
    const bool is_q = part == 0;
    const Rows t{is_q ? a.gq : a.gk, is_q ? a.xq : a.xk, is_q ? a.rq : a.rk, is_q ? a.wq : a.wk,
                 is_q ? 2 : 0, is_q ? 0 : 4 * kRowU4};
    float acc[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] = 0.f;
    const int off = is_q ? 0 : qrows;
    const int end = is_q ? qrows : static_cast<int>(rows);
    norm_rows(a, t, max(lo, off) - off, min(hi, end) - off, lane, ring, acc);
#pragma unroll
    for (int i = 0; i < 8; ++i) red[warp][part * kD + lane * 8 + i] = acc[i];
  }
  __syncthreads();
  // Block partials in a fixed order (deterministic).
  for (int d = threadIdx.x; d < 2 * kD; d += kNormThreadsS) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += red[w][d];
    a.partials[static_cast<int64_t>(blockIdx.x) * 2 * kD + d] = sum;
  }
  if (a.timeline != nullptr && threadIdx.x == 0) a.timeline[4 * blockIdx.x + 1] = globaltimer();
}


// Rows per warp and blocks: the 5T rows spread evenly over every warp of kBlocksPerSm blocks per
// SM (any chunk: a run may end on a single row), at least a pair per warp (small T then uses fewer
// blocks, leaving SMs to the GEMM's prologue). An SM with one block finishes early, so the grid
// fills the slots as evenly as the row count allows.
}  // namespace

Shape shape(int tokens, int num_sms) {
  const int64_t rows = 5LL * tokens;
  const int64_t warps = static_cast<int64_t>(num_sms) * kBlocksPerSm * kWarps;
  const int64_t chunk = std::max<int64_t>(2, (rows + warps - 1) / warps);
  Shape s;
  s.chunk = static_cast<int>(chunk);
  s.grid = static_cast<int>((rows + chunk * kWarps - 1) / (chunk * kWarps));
  return s;
}

cudaError_t launch(const Shape& shape, const Operands& ops, cudaStream_t stream) {
  StreamNormArgs a;
  static_cast<Operands&>(a) = ops;
  a.chunk = shape.chunk;
  const cudaError_t err = allow_dynamic_smem(reinterpret_cast<const void*>(stream_norm_kernel), kSmemBytes);
  if (err != cudaSuccess) return err;
  stream_norm_kernel<<<shape.grid, kNormThreadsS, kSmemBytes, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace norm
}  // namespace kidx
