// GEMM epilogues for 128-column output tiles held as wgmma m64n128 fragments:
// - unsplit tiles: fragments -> a bf16 staging tile of 64x64 boxes (128-byte swizzled, as
//   tma_store_2d expects);
// - split-K tiles: fragments -> an fp32 partial tile in shared memory, then the partials of the
//   CTAs of a cluster summed through distributed shared memory in rank order (deterministic).
#pragma once

#include <cuda_bf16.h>
#include <stdint.h>

#include "sm90.cuh"
#include "tensor_map.cuh"

namespace kidx {

constexpr int kTileCols = 128;

// A thread's fragment values of 8-column group j (tile rows `row` and `row + 8`) into the bf16
// staging tile ([64 rows][128 bytes] boxes, two boxes per 64-row block).
__device__ __forceinline__ void stage_put(uint8_t* stage, int row, int j, int lane, float a, float b,
                                          float c, float d) {
  const int cb = j >> 3;
  const int chunk = j & 7;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int rr = row + 8 * h;
    const int rin = rr & 63;
    uint8_t* box = stage + ((rr >> 6) * 2 + cb) * kBoxBytes;
    const uint32_t off = rin * 128 + ((chunk ^ (rin & 7)) << 4) + (lane & 3) * 4;
    *reinterpret_cast<__nv_bfloat162*>(box + off) = h ? __floats2bfloat162_rn(c, d) : __floats2bfloat162_rn(a, b);
  }
}

// fp32 partial tile in shared memory: row-major [rows][128], the 16-byte chunks of each row XOR-
// swizzled by (row & 7) so that fragment writes and row reads are both bank-conflict free.
__device__ __forceinline__ uint32_t red_offset(int row, int col) {  // bytes
  return static_cast<uint32_t>((row * kTileCols + ((((col >> 2) ^ (row & 7))) << 2) + (col & 3)) * 4);
}

// Sum rows [r0, r0 + rows) of the S partial tiles of CTAs rank0 .. rank0 + S - 1 (in rank order:
// deterministic) and store them as bf16 at out(row) (the tile row's 128 columns); rows at or past
// row_limit are skipped. 256 threads; each keeps 8 DSMEM loads in flight; a warp reads and writes
// whole rows.
template <int S, class Out>
__device__ __forceinline__ void reduce_store(uint32_t red_addr, int rank0, int r0, int rows, int row_limit,
                                             int ctid, Out out) {
  constexpr int U = 8 / S;  // float4 units per thread and batch
  uint32_t peer[S];
#pragma unroll
  for (int q = 0; q < S; ++q) peer[q] = map_rank(red_addr, rank0 + q);
  const int units = rows * 32;  // 32 float4 units per 128-column row
  for (int u0 = ctid; u0 < units; u0 += 256 * U) {
    float4 v[U][S];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const int u = u0 + j * 256;
      if (u < units) {
        const int row = r0 + (u >> 5);
        const int c4 = u & 31;
        const uint32_t off = static_cast<uint32_t>((row * kTileCols + ((c4 ^ (row & 7)) << 2)) * 4);
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
      *reinterpret_cast<uint2*>(out(row) + (u & 31) * 4) = packed;
    }
  }
}

}  // namespace kidx
