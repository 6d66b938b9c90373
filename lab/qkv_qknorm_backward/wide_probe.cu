// Issue 28, 13th session: a probe of the GEMM skeleton that LOG.md's "Next" item 1 needs — a
// 128×256 tile with a *dedicated* TMA producer warp and two m64n256k16 consumer warpgroups
// (384 threads, setmaxnreg 40 / 232 / 232), against the same code with 128×128 tiles
// (m64n128k16) and against cuBLAS on the same problem. Plain bf16 GEMM C[M,N] = A[M,K]·B[K,N],
// all row-major (A K-major, B N-major as dX = G·W has them), fp32 accumulation, bf16 output.
// The 9th session's 128×256 kernel (w256, git 2a2f293) issued its loads from thread 0 of the
// transform warpgroup and its loads took ~2.4 µs to land (10th session); this kernel keeps the
// same shared-memory layout (64×64 boxes, 128-byte swizzle, the same wgmma descriptors) but a
// producer warp that does nothing else, so that the question "is the wide tile itself slow here,
// or was it w256's structure?" has an answer.
//
// Variants (template): kN (tile columns, 256 or 128), kStages (ring depth), kPass (warps 1-3 of
// warpgroup 0 rewrite each stage's A box in place — an identity, results unchanged — before the
// consumers may read it: the shared-memory traffic and hand-over of a transform that writes G
// once per tile, without its arithmetic), kX (the transform itself on a dX-like k-block: A is
// g, a second box x̂ rides in each stage (stages of 64 KiB, 3 of them), and warps 1-3 rewrite A
// into G = rstd·(ĝ − m·x̂), ĝ = g + g·w rounded once (t2's kFast arithmetic, one bf16x2 FMA), with
// rstd and m of (row, head = (k-block / 4) mod 6) and w of d = (k-block mod 4)·64 + column from
// global memory; warpgroup 0 then keeps 104 registers, the consumers 200).
// Host API (extern "C", ctypes): wp_launch, wp_smem. Lab only: not part of any registry entry.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "common/pipeline.cuh"
#include "common/ptx.cuh"
#include "common/sm90.cuh"
#include "common/tensor_map.cuh"

namespace wp {
using namespace kidx;

constexpr int kThreads = 384;
constexpr int kBM = 128;
constexpr int kBK = 64;
constexpr int kABytes = kBM * kBK * 2;  // 16 KiB: two 64×64 boxes

template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

// D[64x256] (+)= A[64x16] * B[16x256] (the 9th session's wrapper, git 2a2f293).
template <int TA, int TB>
__device__ __forceinline__ void wgmma_m64n256k16_w(float (&d)[128], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, p, 1, 1, %131, %132;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TA), "n"(TB));
}

// D[64x256] (+)= A[64x16] (registers, the mma fragment layout) * B[16x256] (shared memory, MN-major).
__device__ __forceinline__ void wgmma_m64n256k16_rs(float (&d)[128], const uint32_t (&a)[4], uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "{%128, %129, %130, %131}, %132, p, 1, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

template <int kN, int kStages, bool kX>
constexpr int smem_bytes() {
  return kStages * (kABytes * (kX ? 2 : 1) + kBK * kN * 2) + 1024 + 3 * kStages * 8;
}

struct XArgs {  // kX only
  const __nv_bfloat16* x;  // x̂ [M, K]
  const __nv_bfloat16* w;  // w [256] (bf16)
  const float* rs;         // rstd [M, 6]
  const float* mm;         // m [M, 6]
};


__device__ __forceinline__ uint32_t hfma2_bf16(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// 15th session, kSide: the norm as a side job of the GEMM's CTAs — warps 1-3 (idle in the
// skeleton) stream `rows` rows of 256 (g, x̂ bf16, rstd fp32, w of the head) and write
// G = bf16(rs·(ĝ − m·x̂)), ĝ = g + g·w (one bf16x2 FMA, as t2's kFast), m = mean(ĝ·x̂) by a warp's
// shuffle reduction: the whole norm, row statistics included, out of the GEMM's shared memory.
// The question: does an SS GEMM keep its rate with a memory-bound stream beside it on every SM
// (G through L2 to a GEMM that reads it, instead of a transform inside the GEMM)?
struct SideArgs {
  const __nv_bfloat16* g;  // [rows, 256]
  const __nv_bfloat16* x;  // [rows, 256]
  const float* rs;         // [rows]
  const __nv_bfloat16* w;  // [256]
  __nv_bfloat16* out;      // [rows, 256]
  int rows;
  int ld = 256;            // row stride of g, x and out (elements)
  int rs_ld = 1;           // stride of rs between rows
};
SideArgs g_side{};  // host: set by wp_set_side before a kSide launch

constexpr int kSideUnroll = 4;  // rows in flight per warp

// Row `row` of G, this lane's 8 columns: bf16(rstd·(ĝ − m·x̂)), stored if `store`.
__device__ __forceinline__ void side_out(const SideArgs& sa, int row, bool store, int lane, const float (&gf)[8],
                                         const float (&xf)[8], float rs, float m) {
  float o8[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) o8[e] = rs * (gf[e] - m * xf[e]);
  if (store)
    reinterpret_cast<uint4*>(sa.out + static_cast<size_t>(row) * sa.ld)[lane] =
        make_uint4(pack_bf16x2(o8[0], o8[1]), pack_bf16x2(o8[2], o8[3]), pack_bf16x2(o8[4], o8[5]), pack_bf16x2(o8[6], o8[7]));
}

// The raw g, x̂ (this lane's 8 columns) and rstd of rows r.. r + kU − 1 (rows past r1 load the last
// row again), every load issued before any is used.
template <int kU>
__device__ __forceinline__ void side_load(const SideArgs& sa, int r, int r1, int lane, uint4 (&g)[kU], uint4 (&x)[kU],
                                          float (&rs)[kU]) {
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int row = min(r + u, r1 - 1);
    g[u] = __ldg(reinterpret_cast<const uint4*>(sa.g + static_cast<size_t>(row) * sa.ld) + lane);
    x[u] = __ldg(reinterpret_cast<const uint4*>(sa.x + static_cast<size_t>(row) * sa.ld) + lane);
    rs[u] = __ldg(sa.rs + static_cast<size_t>(row) * sa.rs_ld);
  }
}

// Rows [r0, r1) of the side job by `nw` warps (this one is sw): kU rows per warp step (their loads
// all issued first), 8 columns a lane.
template <int kU = kSideUnroll>
__device__ __forceinline__ void side_rows(const SideArgs& sa, int r0, int r1, int sw, int nw, int lane) {
  const uint4 w16 = __ldg(reinterpret_cast<const uint4*>(sa.w) + lane);
  for (int r = r0 + sw * kU; r < r1; r += nw * kU) {
    uint4 g[kU], x[kU];
    float rs[kU];
    side_load<kU>(sa, r, r1, lane, g, x, rs);
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      float gf[8], xf[8];
      unpack8(make_uint4(hfma2_bf16(g[u].x, w16.x, g[u].x), hfma2_bf16(g[u].y, w16.y, g[u].y),
                         hfma2_bf16(g[u].z, w16.z, g[u].z), hfma2_bf16(g[u].w, w16.w, g[u].w)),
              gf);
      unpack8(x[u], xf);
      float dot = 0.f;
#pragma unroll
      for (int e = 0; e < 8; ++e) dot = fmaf(gf[e], xf[e], dot);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      side_out(sa, r + u, r + u < r1, lane, gf, xf, rs[u], dot * (1.f / 256.f));
    }
  }
}

// One step of kU rows r.. (rows past r1 computed, not stored) from their raw g, x̂ and rstd: ĝ and
// the dot products of every row, then the shuffle tree of all kU, then the outputs — each phase
// for all rows together, so their dependency chains interleave.
template <int kU>
__device__ __forceinline__ void side_step(const SideArgs& sa, const uint4& w16, uint4 (&gh)[kU], const uint4 (&x)[kU],
                                          const float (&rs)[kU], int r, int r1, int lane) {
  float dot[kU];
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    gh[u] = make_uint4(hfma2_bf16(gh[u].x, w16.x, gh[u].x), hfma2_bf16(gh[u].y, w16.y, gh[u].y),
                       hfma2_bf16(gh[u].z, w16.z, gh[u].z), hfma2_bf16(gh[u].w, w16.w, gh[u].w));
    float gf[8], xf[8];
    unpack8(gh[u], gf);
    unpack8(x[u], xf);
    float d = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) d = fmaf(gf[e], xf[e], d);
    dot[u] = d;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
#pragma unroll
    for (int u = 0; u < kU; ++u) dot[u] += __shfl_xor_sync(0xffffffffu, dot[u], o);
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    float gf[8], xf[8];
    unpack8(gh[u], gf);
    unpack8(x[u], xf);
    side_out(sa, r + u, r + u < r1, lane, gf, xf, rs[u], dot[u] * (1.f / 256.f));
  }
}

// 16th session: side_rows with a step's kU rows taken through each phase together (loads; ĝ and
// dot products; the shuffle tree of all kU; outputs), so that their dependency chains interleave
// (one warp per scheduler has nothing else to hide them with). Same arithmetic as side_rows.
template <int kU>
__device__ __forceinline__ void side_rows_phased(const SideArgs& sa, int r0, int r1, int sw, int nw, int lane) {
  const uint4 w16 = __ldg(reinterpret_cast<const uint4*>(sa.w) + lane);
  for (int r = r0 + sw * kU; r < r1; r += nw * kU) {
    uint4 gh[kU], x[kU];
    float rs[kU];
    side_load<kU>(sa, r, r1, lane, gh, x, rs);
    side_step<kU>(sa, w16, gh, x, rs, r, r1, lane);
  }
}

// 16th session, after call 6's Nsight Compute (dep's norm warps: half their samples wait on their
// loads, most of the rest on short dependencies): side_rows_phased fed by a per-warp cp.async ring
// of kSlots slots of kU rows, so the next kSlots − 1 steps' rows are in flight while this step is
// computed, at no register cost. `ring`: this warp's cp_ring_bytes<kU, kSlots>() of shared memory.
template <int kU>
__host__ __device__ constexpr int cp_slot_bytes() { return kU * 1024 + 16; }  // g, x̂ rows (512 B each), rstd
template <int kU, int kSlots>
__host__ __device__ constexpr int cp_ring_bytes() { return kSlots * cp_slot_bytes<kU>(); }
template <int kU, int kSlots>
__device__ __forceinline__ void side_rows_cp(const SideArgs& sa, int r0, int r1, int sw, int nw, int lane,
                                             uint8_t* ring) {
  constexpr int kCpSlotBytes = cp_slot_bytes<kU>();
  const uint4 w16 = __ldg(reinterpret_cast<const uint4*>(sa.w) + lane);
  const uint32_t ring_addr = smem_u32(ring);
  const int step = nw * kU;
  auto fetch = [&](int r, int slot) {  // rows r.. of a step into a slot; always one commit group
    if (r < r1) {
      const uint32_t dst = ring_addr + slot * kCpSlotBytes;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const size_t row = static_cast<size_t>(min(r + u, r1 - 1));
        cp_async16(dst + u * 512 + lane * 16, reinterpret_cast<const uint4*>(sa.g + row * sa.ld) + lane);
        cp_async16(dst + kU * 512 + u * 512 + lane * 16, reinterpret_cast<const uint4*>(sa.x + row * sa.ld) + lane);
      }
      if (lane < kU) cp_async4(dst + kU * 1024 + lane * 4, sa.rs + static_cast<size_t>(min(r + lane, r1 - 1)) * sa.rs_ld);
    }
    cp_async_commit();
  };
  int slot = 0;
#pragma unroll
  for (int i = 0; i < kSlots - 1; ++i) fetch(r0 + sw * kU + i * step, i);
  for (int r = r0 + sw * kU; r < r1; r += step) {
    // the rows kSlots − 1 steps ahead, into the slot read one step ago
    fetch(r + (kSlots - 1) * step, slot == 0 ? kSlots - 1 : slot - 1);
    cp_async_wait<kSlots - 1>();
    __syncwarp();  // rstd was copied by lanes 0..kU-1
    const uint8_t* src = ring + slot * kCpSlotBytes;
    uint4 gh[kU], x[kU];
    float rs[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      gh[u] = *reinterpret_cast<const uint4*>(src + u * 512 + lane * 16);
      x[u] = *reinterpret_cast<const uint4*>(src + kU * 512 + u * 512 + lane * 16);
      rs[u] = reinterpret_cast<const float*>(src + kU * 1024)[u];
    }
    __syncwarp();  // every lane has read the slot that the next step's fetch refills
    side_step<kU>(sa, w16, gh, x, rs, r, r1, lane);
    slot = slot == kSlots - 1 ? 0 : slot + 1;
  }
  cp_async_wait<0>();  // no copy outlives the rows (the ring is reused by the next head)
  __syncwarp();
}

// kCX: consumer warpgroup h (0, 1) rewrites its own 64 rows of stage `stage`'s g box into G (the
// same arithmetic as kX), one 16-byte chunk at a time (its 128 accumulators stay live).
__device__ __forceinline__ void transform_own(uint8_t* smem, int stage_bytes, int b_bytes, int stage, int h, int m0,
                                              int kb, int t, const XArgs& xa) {
  uint8_t* gbox = smem + stage * stage_bytes + h * kBoxBytes;
  const uint8_t* xbox = smem + stage * stage_bytes + kABytes + b_bytes + h * kBoxBytes;
  const int head = (kb >> 2) % 6;
  const int d0 = (kb & 3) * 64;
#pragma unroll 1
  for (int i = 0; i < 4; ++i) {
    const int q = t + 128 * i;  // row q >> 3 of the box, physical chunk q & 7
    const int r = q >> 3;
    const int off = r * 128 + (q & 7) * 16;
    const uint4 g = *reinterpret_cast<const uint4*>(gbox + off);
    const uint4 x = *reinterpret_cast<const uint4*>(xbox + off);
    const uint4 w16 = __ldg(reinterpret_cast<const uint4*>(xa.w + d0 + ((q & 7) ^ (r & 7)) * 8));
    const float rs = __ldg(xa.rs + static_cast<size_t>(m0 + h * 64 + r) * 6 + head);
    const float mm = __ldg(xa.mm + static_cast<size_t>(m0 + h * 64 + r) * 6 + head);
    float gf[8], xf[8], o[8];
    unpack8(make_uint4(hfma2_bf16(g.x, w16.x, g.x), hfma2_bf16(g.y, w16.y, g.y), hfma2_bf16(g.z, w16.z, g.z),
                       hfma2_bf16(g.w, w16.w, g.w)),
            gf);
    unpack8(x, xf);
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] = rs * (gf[e] - mm * xf[e]);
    *reinterpret_cast<uint4*>(gbox + off) =
        make_uint4(pack_bf16x2(o[0], o[1]), pack_bf16x2(o[2], o[3]), pack_bf16x2(o[4], o[5]), pack_bf16x2(o[6], o[7]));
  }
}

// kSide: 1 = the skeleton with the side job on warps 1-3; 2 = the side job alone (same grid and
// warps, no GEMM: its time on 3 warps per SM without a GEMM beside it); 3 = the skeleton with A
// read at column (k-block mod 12)·64 (L2-resident: no DRAM stream of its own, as a GEMM reading
// G from L2 would be); 4 = 3 with the side job. Calls 4-5's side job shared the DRAM with the
// probe's 1.08 MB of A per step (138 MB at K = 8192, 2.8× the L2): 3 and 4 take that away.
template <int kN, int kStages, bool kPass, bool kX = false, bool kCX = false, int kSide = 0>
__global__ void __launch_bounds__(kThreads, 1)
    probe_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                 const __grid_constant__ CUtensorMap map_x, __nv_bfloat16* __restrict__ c, int n, int k, XArgs xa,
                 SideArgs sa) {
  constexpr int kBBytes = kBK * kN * 2;
  constexpr int kXBytes = (kX || kCX) ? kABytes : 0;
  constexpr int kStageBytes = kABytes + kXBytes + kBBytes;
  constexpr bool kReady = kPass || kX;
  constexpr int kAcc = kN / 2;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kStages * kStageBytes);
  uint64_t* empty = full + kStages;
  uint64_t* ready = empty + kStages;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, wg = warp >> 2;
  const int ntn = n / kN;
  const int m0 = (blockIdx.x / ntn) * kBM, n0 = (blockIdx.x % ntn) * kN;
  const int nk = k / kBK;
  if (kSide == 2) {
    if (warp >= 1 && warp <= 3) {
      const int r0 = static_cast<int>(static_cast<long long>(blockIdx.x) * sa.rows / gridDim.x);
      const int r1 = static_cast<int>(static_cast<long long>(blockIdx.x + 1) * sa.rows / gridDim.x);
      side_rows(sa, r0, r1, warp - 1, 3, lane);
    }
    return;
  }
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 8);  // the 8 consumer warps
      mbar_init(&ready[s], 3);  // the 3 pass warps (kPass)
    }
    fence_barrier_init();
    tma_prefetch_desc(&map_a);
    tma_prefetch_desc(&map_b);
    if (kX || kCX) tma_prefetch_desc(&map_x);
  }
  __syncthreads();
  if (wg == 0) {
    setmaxnreg_dec<(kX || kSide) ? 104 : 40>();
    if (warp == 0) {
      if (lane == 0) {
        RingPos<kStages> pos;
        for (int kb = 0; kb < nk; ++kb) {
          ring_acquire(full, empty, pos, kStageBytes);
          uint8_t* st = smem + pos.stage * kStageBytes;
          const int ka = (kSide >= 3 ? kb % 12 : kb) * kBK;  // kSide 3, 4: A L2-resident (12 k-blocks)
          tma_load_2d(st, &map_a, &full[pos.stage], ka, m0);
          tma_load_2d(st + kBoxBytes, &map_a, &full[pos.stage], ka, m0 + 64);
          if (kX || kCX) {
            tma_load_2d(st + kABytes + kBBytes, &map_x, &full[pos.stage], kb * kBK, m0);
            tma_load_2d(st + kABytes + kBBytes + kBoxBytes, &map_x, &full[pos.stage], kb * kBK, m0 + 64);
          }
#pragma unroll
          for (int j = 0; j < kN / 64; ++j)
            tma_load_2d(st + kABytes + j * kBoxBytes, &map_b, &full[pos.stage], n0 + 64 * j, kb * kBK);
          pos.advance();
        }
      }
    } else if (kX) {
      RingPos<kStages> pos;
      const int t = tid - 32;  // 0..95
      for (int kb = 0; kb < nk; ++kb) {
        mbar_wait(&full[pos.stage], pos.phase);
        uint8_t* gbox = smem + pos.stage * kStageBytes;
        const uint8_t* xbox = gbox + kABytes + kBBytes;
        const int head = (kb >> 2) % 6;
        const int d0 = (kb & 3) * 64;
#pragma unroll
        for (int i0 = 0; i0 < 12; i0 += 2) {  // 2 chunks at a time: every load before the first store
          uint4 g[2], x[2], w16[2];
          float rs[2], mm[2];
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const int q = t + 96 * (i0 + i);  // chunk q: box q >> 9, row (q >> 3) & 63, physical chunk q & 7
            if (q < 1024) {
              const int r = (q >> 9) * 64 + ((q >> 3) & 63);
              const int off = (q >> 9) * kBoxBytes + ((q >> 3) & 63) * 128 + (q & 7) * 16;
              g[i] = *reinterpret_cast<const uint4*>(gbox + off);
              x[i] = *reinterpret_cast<const uint4*>(xbox + off);
              w16[i] = __ldg(reinterpret_cast<const uint4*>(xa.w + d0 + ((q & 7) ^ (r & 7)) * 8));
              rs[i] = __ldg(xa.rs + static_cast<size_t>(m0 + r) * 6 + head);
              mm[i] = __ldg(xa.mm + static_cast<size_t>(m0 + r) * 6 + head);
            }
          }
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const int q = t + 96 * (i0 + i);
            if (q < 1024) {
              const int off = (q >> 9) * kBoxBytes + ((q >> 3) & 63) * 128 + (q & 7) * 16;
              float gf[8], xf[8], o[8];
              unpack8(make_uint4(hfma2_bf16(g[i].x, w16[i].x, g[i].x), hfma2_bf16(g[i].y, w16[i].y, g[i].y),
                                 hfma2_bf16(g[i].z, w16[i].z, g[i].z), hfma2_bf16(g[i].w, w16[i].w, g[i].w)),
                      gf);
              unpack8(x[i], xf);
#pragma unroll
              for (int e = 0; e < 8; ++e) o[e] = rs[i] * (gf[e] - mm[i] * xf[e]);
              *reinterpret_cast<uint4*>(gbox + off) = make_uint4(pack_bf16x2(o[0], o[1]), pack_bf16x2(o[2], o[3]),
                                                                 pack_bf16x2(o[4], o[5]), pack_bf16x2(o[6], o[7]));
            }
          }
        }
        fence_proxy_async_shared();
        __syncwarp();
        if (lane == 0) mbar_arrive(&ready[pos.stage]);
        pos.advance();
      }
    } else if (kSide == 1 || kSide == 4) {
      const int r0 = static_cast<int>(static_cast<long long>(blockIdx.x) * sa.rows / gridDim.x);
      const int r1 = static_cast<int>(static_cast<long long>(blockIdx.x + 1) * sa.rows / gridDim.x);
      side_rows(sa, r0, r1, warp - 1, 3, lane);
    } else if (kPass) {
      RingPos<kStages> pos;
      const int t = tid - 32;  // 0..95
      for (int kb = 0; kb < nk; ++kb) {
        mbar_wait(&full[pos.stage], pos.phase);
        uint4* a = reinterpret_cast<uint4*>(smem + pos.stage * kStageBytes);
#pragma unroll
        for (int i0 = 0; i0 < 12; i0 += 4) {  // 4 chunks in flight: the 40 registers this warpgroup keeps
          uint4 v[4];
#pragma unroll
          for (int i = 0; i < 4; ++i)
            if (t + 96 * (i0 + i) < kABytes / 16) v[i] = a[t + 96 * (i0 + i)];
#pragma unroll
          for (int i = 0; i < 4; ++i)
            if (t + 96 * (i0 + i) < kABytes / 16) a[t + 96 * (i0 + i)] = v[i];
        }
        fence_proxy_async_shared();
        __syncwarp();
        if (lane == 0) mbar_arrive(&ready[pos.stage]);
        pos.advance();
      }
    }
  } else {
    setmaxnreg_inc<(kX || kSide) ? 200 : 232>();
    float acc[kAcc];
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[i] = 0.f;
    RingPos<kStages> pos;
    int prev = -1;
    const int ct = tid - 128 * wg;  // 0..127 within this consumer warpgroup
    if (kCX) {  // this warpgroup's own 64 rows of the first k-block, before the loop
      mbar_wait(&full[0], 0);
      transform_own(smem, kStageBytes, kBBytes, 0, wg - 1, m0, 0, ct, xa);
      fence_proxy_async_shared();
      named_barrier_sync(wg, 128);
    }
    for (int kb = 0; kb < nk; ++kb) {
      if (!kCX) mbar_wait(kReady ? &ready[pos.stage] : &full[pos.stage], pos.phase);
      const uint32_t st = smem_u32(smem + pos.stage * kStageBytes);
      const uint32_t a_base = st + (wg - 1) * kBoxBytes;
      const uint32_t b_base = st + kABytes;
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        const uint64_t da = make_desc_sw128(a_base + ks * 32, 16, 1024);
        const uint64_t db = make_desc_sw128(b_base + ks * 2048, kBoxBytes, 1024);
        if constexpr (kN == 256) {
          wgmma_m64n256k16_w<0, 1>(acc, da, db, 1);
        } else {
          wgmma_m64n128k16<0, 1>(acc, da, db, 1);
        }
      }
      wgmma_commit();
      if (kCX) {  // the next k-block's own rows while this one's wgmma runs, then release this one
        RingPos<kStages> nxt = pos;
        nxt.advance();
        if (kb + 1 < nk) {
          mbar_wait(&full[nxt.stage], nxt.phase);
          transform_own(smem, kStageBytes, kBBytes, nxt.stage, wg - 1, m0, kb + 1, ct, xa);
          fence_proxy_async_shared();
        }
        wgmma_wait<0>();
        if (lane == 0) mbar_arrive(&empty[pos.stage]);
        if (kb + 1 < nk) named_barrier_sync(wg, 128);
      } else {
        wgmma_wait<1>();
        if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
        prev = pos.stage;
      }
      pos.advance();
    }
    wgmma_wait<0>();
    // The m64nN accumulator layout: 8-column chunk j holds (row r, cols 2q, 2q+1) in acc[4j],
    // acc[4j+1] and (row r + 8, the same cols) in acc[4j+2], acc[4j+3]; r = lane / 4, q = lane % 4.
    const int row = m0 + (wg - 1) * 64 + (warp & 3) * 16 + (lane >> 2);
    const int col = n0 + (lane & 3) * 2;
#pragma unroll
    for (int j = 0; j < kN / 8; ++j) {
      *reinterpret_cast<uint32_t*>(c + static_cast<size_t>(row) * n + col + 8 * j) = pack_bf16x2(acc[4 * j], acc[4 * j + 1]);
      *reinterpret_cast<uint32_t*>(c + static_cast<size_t>(row + 8) * n + col + 8 * j) =
          pack_bf16x2(acc[4 * j + 2], acc[4 * j + 3]);
    }
  }
}

template <int kN, int kStages, bool kPass, bool kX = false, bool kCX = false, int kSide = 0>
int launch(const void* a, const void* b, void* c, int m, int n, int k, XArgs xa, cudaStream_t stream) {
  if (m % kBM || n % kN || k % kBK || k < kBK) return -2;
  CUtensorMap ma, mb, mx;
  if (!make_map(&ma, a, m, k, k) || !make_map(&mb, b, k, n, n)) return -1;
  if ((kX || kCX) ? !make_map(&mx, xa.x, m, k, k) : !make_map(&mx, a, m, k, k)) return -1;
  auto fn = probe_kernel<kN, kStages, kPass, kX, kCX, kSide>;
  constexpr int smem = smem_bytes<kN, kStages, kX || kCX>();
  static bool attr = false;  // once per variant (not inside a graph capture)
  if (!attr) {
    cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
    attr = true;
  }
  fn<<<(m / kBM) * (n / kN), kThreads, smem, stream>>>(ma, mb, mx, reinterpret_cast<__nv_bfloat16*>(c), n, k, xa,
                                                       g_side);
  return cudaGetLastError();
}


// 14th session: cxr — G never in shared memory, the tensor pipe never drained: each consumer thread builds
// its A fragments of k-block i + 1 in registers (ldmatrix of g and x̂, the transform, bf16x2) and
// issues wgmma with A from registers (the 10th session's rs, on the wide tile: there a 128×128
// k-block's 0.26 µs of wgmma could not cover the ~0.5 µs build; here one wide k-block is ~0.68).
// Rings: g + x̂ (32 KiB a stage, kGS) freed once the wgmma that reads the fragments built from it
// is issued (15th session; the 14th freed it right after the build, which raced: see the step),
// B (32 KiB, kBS) freed when wgmma i − 1 is done. rstd/m: each thread's own 2 rows, read (L1) at build time.
// Shared-memory bytes per wide k-block: 64 KiB in + 32 KiB by ldmatrix + 64 KiB of B to the
// wgmma = 160 KiB (cxp, G written back in place, 192; cxp lost, 1.185 µs per wide k-block on an
// H200 against cxform's 1.090 and cxr's 0.965: its code is at git 4c2ca2b).
// Call 2 removed two variants (code at git 8acb515): cxr-nob (the build = ldmatrix of g alone, fed
// straight to the wgmma; racy — the g stage was released before the ldmatrix results were used)
// and cxr-hoist (w from shared memory, rstd/m a step early, all 8 ldmatrix first; ptxas C7515
// serialized its wgmma, 1.055 µs on an H100 vs cxr's 0.989).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&d)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(smem_u32(row)));
}

// 15th session: kH2 = cxr-h2, the build in bf16x2 arithmetic. Per fragment pair 3 instructions —
// ĝ = g + g·w (one FMA, rounded once, as before), u = ĝ − m·x̂ (one FMA, rounded once), G = rs·u
// (an FMA with −0: a multiply, rounded once) — where cxr unpacks to fp32 (2 FFMA + 2 FMUL, 4
// shifts, one F2FP per pair, ~10). rs and −m are rounded to bf16 once per k-block. Not the
// definition's fp32 arithmetic: G differs from it by ~1-2 bf16 ulp where cxr's is bitwise but for
// 47-50 elements; the registry's tolerance (harness/correctness.py) is the test of it.
__device__ __forceinline__ uint32_t bcast_bf16x2(float v) { return pack_bf16x2(v, v); }
__device__ __forceinline__ uint32_t hmul2_bf16(uint32_t a, uint32_t b) { return hfma2_bf16(a, b, 0x80008000u); }

template <bool kH2>
__device__ __forceinline__ void build_frags(uint32_t (&f)[4][4], const uint8_t* gbox, const uint8_t* xbox, int m0h, int kb,
                                            int wq, int lane, const XArgs& xa) {
  const int head = (kb >> 2) % 6;
  const int d0 = (kb & 3) * 64;
  const int ra = 16 * wq + (lane >> 2);
  const float rs[2] = {__ldg(xa.rs + static_cast<size_t>(m0h + ra) * 6 + head),
                       __ldg(xa.rs + static_cast<size_t>(m0h + ra + 8) * 6 + head)};
  const float mm[2] = {__ldg(xa.mm + static_cast<size_t>(m0h + ra) * 6 + head),
                       __ldg(xa.mm + static_cast<size_t>(m0h + ra + 8) * 6 + head)};
  const uint32_t rs2[2] = {bcast_bf16x2(rs[0]), bcast_bf16x2(rs[1])};  // kH2
  const uint32_t nm2[2] = {bcast_bf16x2(-mm[0]), bcast_bf16x2(-mm[1])};
  const int li = lane & 7, lj = lane >> 3;
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int r = 16 * wq + li + 8 * (lj & 1);
    const int off = r * 128 + (((2 * ks + (lj >> 1)) ^ (r & 7)) << 4);
    uint32_t g[4], x[4];
    ldmatrix_x4(g, gbox + off);
    ldmatrix_x4(x, xbox + off);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int d = d0 + 16 * ks + 8 * (q >> 1) + 2 * (lane & 3);
      const uint32_t w2 = __ldg(reinterpret_cast<const unsigned int*>(xa.w + d));
      const uint32_t gh = hfma2_bf16(g[q], w2, g[q]);
      if constexpr (kH2) {
        f[ks][q] = hmul2_bf16(rs2[q & 1], hfma2_bf16(nm2[q & 1], x[q], gh));
      } else {
        const float g0 = __uint_as_float(gh << 16), g1 = __uint_as_float(gh & 0xffff0000u);
        const float x0 = __uint_as_float(x[q] << 16), x1 = __uint_as_float(x[q] & 0xffff0000u);
        f[ks][q] = pack_bf16x2(rs[q & 1] * (g0 - mm[q & 1] * x0), rs[q & 1] * (g1 - mm[q & 1] * x1));
      }
    }
  }
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&d)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(smem_u32(row)));
}

// 15th session: dW's side (cxrt-h2). A = Gᵀ: the boxes hold g and x̂ as [64 tokens][64 columns]
// (as the inputs lie), the fragment's rows are columns (one head for the whole tile: w fixed per
// thread) and its k pairs are two consecutive tokens, read with ldmatrix.trans. rstd and m are
// per token: laid out [head][token] (as q_rstd is, [B, H, S, 1]), one float2 of each per pair,
// 8 pairs per thread and k-block (dX: 2 rows for the whole k-block).
// kSmemScalars (cxrt-h2s): the (rs, −m) bf16x2 pairs of the k-block's 64 tokens come from a
// 256-byte slot beside the g/x̂ stage, filled by warp 1 (idle otherwise) when it fills the stage:
// the per-token global loads (an L2 round trip every k-block) leave the build's chain.
template <bool kSmemScalars = false>
__device__ __forceinline__ void build_frags_t_h2(uint32_t (&f)[4][4], const uint8_t* gbox, const uint8_t* xbox,
                                                 const float* rs_h, const float* mm_h, const uint2* slot,
                                                 const uint32_t (&w2)[2], int kb, int wq, int lane) {
  const int li = lane & 7, lj = lane >> 3;
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int t = 16 * ks + 8 * (lj >> 1) + li;         // the token (box row) this lane addresses
    const int off = t * 128 + (((2 * wq + (lj & 1)) ^ li) << 4);  // columns 16·wq + 8·(lj & 1) ..
    uint32_t g[4], x[4];
    ldmatrix_x4_trans(g, gbox + off);
    ldmatrix_x4_trans(x, xbox + off);
#pragma unroll
    for (int kh = 0; kh < 2; ++kh) {
      uint32_t rs2, nm2;
      if constexpr (kSmemScalars) {
        const uint2 p = slot[8 * ks + 4 * kh + (lane & 3)];
        rs2 = p.x;
        nm2 = p.y;
      } else {
        const int t0 = kb * 64 + 16 * ks + 8 * kh + 2 * (lane & 3);
        const float2 rs = __ldg(reinterpret_cast<const float2*>(rs_h + t0));
        const float2 mm = __ldg(reinterpret_cast<const float2*>(mm_h + t0));
        rs2 = pack_bf16x2(rs.x, rs.y);
        nm2 = pack_bf16x2(-mm.x, -mm.y);
      }
#pragma unroll
      for (int rb = 0; rb < 2; ++rb) {
        const int q = 2 * kh + rb;
        const uint32_t gh = hfma2_bf16(g[q], w2[rb], g[q]);
        f[ks][q] = hmul2_bf16(rs2, hfma2_bf16(nm2, x[q], gh));
      }
    }
  }
}

// kMC helpers: a TMA load multicast to the CTAs of `mask` (same shared-memory offset and barrier
// offset in each), and an arrive on a barrier of another CTA of the cluster.
__device__ __forceinline__ void tma_load_2d_mc(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1,
                                               uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(mask)
      : "memory");
}
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t remote_addr) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote_addr) : "memory");
}

// Fragments pinned by a volatile asm that reads and "writes" them: at the end of a build (its
// arithmetic, non-volatile asm, may not sink past the next wgmma.fence) and after the next build
// (the registers an in-flight wgmma reads stay allocated to it). Defensive: the SASS of calls 1-3
// showed no such hazard; what made cxr-h2 wrong there was the stage's early release (below).
__device__ __forceinline__ void pin_frags(uint32_t (&f)[4][4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(f[i][0]), "+r"(f[i][1]), "+r"(f[i][2]), "+r"(f[i][3]));
}

// kMode: 0 = cxr (fp32 build), 1 = cxr-h2 (bf16x2 build), 2 = cxrt-h2 (dW's A = Gᵀ, bf16x2),
// 3 = cxrt-h2s (2 with the per-token scalars from a shared-memory slot filled by warp 1).
// Lost and removed (code at git 28efab3): kPingPong (the two consumer warpgroups issuing their
// wgmma in turns, FA3's order: 0.905-0.932 µs against cxr-h2's 0.916-0.934, H100), mode 4
// (cxr-h2-wsm, w from shared memory: 1.046 against 0.919), and rings of 3 B / 4 g/x̂ stages
// (0.932-0.937 and 0.835-0.839 against 0.916-0.919 and 0.826).
// kSerial (diagnostic): wgmma i itself waited before the next build (no build under a running wgmma).
// kMC (15th session): clusters of 2 CTAs on the same 256 columns and neighbouring row tiles; each
// CTA loads 2 of B's 4 boxes and multicasts them to both, so B crosses L2 → SM once per pair
// (per wide k-block and SM: 16 KiB of B instead of 32, g/x̂ 32 KiB unchanged). A B stage is
// refilled once the consumers of both CTAs released it (its empty barrier counts 16 warps: 8 of
// its own CTA, 8 arriving from the other). The question: is L2 → SM traffic what the transform's
// extra bytes cost (the skeleton moves 48 KiB a step per SM, ~9.5 TB/s over 132 SMs)?
template <int kBS, int kGS, int kWrap = 0, int kMode = 0, bool kSerial = false,
          bool kMC = false>
__global__ void __launch_bounds__(kThreads, 1)
    cxr_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
               const __grid_constant__ CUtensorMap map_x, __nv_bfloat16* __restrict__ c, int n, int k, XArgs xa) {
  constexpr int kN = 256;
  constexpr int kBBytes = kBK * kN * 2;   // 32 KiB
  constexpr int kGXBytes = 2 * kABytes;  // g (2 boxes) + x̂ (2 boxes)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* gsmem = smem + kBS * kBBytes;
  uint64_t* bfull = reinterpret_cast<uint64_t*>(gsmem + kGS * kGXBytes);
  uint64_t* bempty = bfull + kBS;
  uint64_t* gfull = bempty + kBS;
  uint64_t* gempty = gfull + kGS;
  uint2* slots = reinterpret_cast<uint2*>(gempty + kGS);  // kMode 3: 32 (rs, −m) pairs per g stage
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, wg = warp >> 2;
  const int ntn = n / kN;
  const uint32_t rank = kMC ? cluster_ctarank() : 0;
  const int pair = blockIdx.x >> 1;  // kMC: the cluster's index; its 2 CTAs share n0
  const int m0 = kMC ? ((pair / ntn) * 2 + static_cast<int>(rank)) * kBM : (blockIdx.x / ntn) * kBM;
  const int n0 = kMC ? (pair % ntn) * kN : (blockIdx.x % ntn) * kN;
  const int nk = k / kBK;
  if (tid == 0) {
    for (int s = 0; s < kBS; ++s) {
      mbar_init(&bfull[s], 1);
      mbar_init(&bempty[s], kMC ? 16 : 8);
    }
    for (int s = 0; s < kGS; ++s) {
      mbar_init(&gfull[s], kMode == 3 ? 2 : 1);  // kMode 3: warp 1's scalars too
      mbar_init(&gempty[s], 8);
    }
    fence_barrier_init();
    tma_prefetch_desc(&map_a);
    tma_prefetch_desc(&map_b);
    tma_prefetch_desc(&map_x);
  }
  if constexpr (kMC) {
    cluster_sync_all();  // the other CTA's barriers are initialized before any multicast or remote arrive
  } else {
    __syncthreads();
  }
  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (warp == 0 && lane == 0) {
      RingPos<kBS> bpos;
      RingPos<kGS> gpos;
      for (int kb = 0; kb < nk; ++kb) {
        const int ka = (kWrap ? kb % kWrap : kb) * kBK;  // g/x̂ column (kWrap: an L2-resident diagnostic)
        ring_acquire(gfull, gempty, gpos, kGXBytes);
        uint8_t* gs = gsmem + gpos.stage * kGXBytes;
        if (kMode == 2 || kMode == 3) {  // g, x̂ as [K tokens, M columns]: box h = columns m0 + 64h of 64 tokens
          tma_load_2d(gs, &map_a, &gfull[gpos.stage], m0, ka);
          tma_load_2d(gs + kBoxBytes, &map_a, &gfull[gpos.stage], m0 + 64, ka);
          tma_load_2d(gs + kABytes, &map_x, &gfull[gpos.stage], m0, ka);
          tma_load_2d(gs + kABytes + kBoxBytes, &map_x, &gfull[gpos.stage], m0 + 64, ka);
        } else {
          tma_load_2d(gs, &map_a, &gfull[gpos.stage], ka, m0);
          tma_load_2d(gs + kBoxBytes, &map_a, &gfull[gpos.stage], ka, m0 + 64);
          tma_load_2d(gs + kABytes, &map_x, &gfull[gpos.stage], ka, m0);
          tma_load_2d(gs + kABytes + kBoxBytes, &map_x, &gfull[gpos.stage], ka, m0 + 64);
        }
        ring_acquire(bfull, bempty, bpos, kBBytes);  // kMC: 2 boxes from here, 2 from the other CTA
        uint8_t* bs = smem + bpos.stage * kBBytes;
        if constexpr (kMC) {
#pragma unroll
          for (int j = 2 * rank; j < 2 * rank + 2; ++j)
            tma_load_2d_mc(bs + j * kBoxBytes, &map_b, &bfull[bpos.stage], n0 + 64 * j, kb * kBK, 0x3);
        } else {
#pragma unroll
          for (int j = 0; j < kN / 64; ++j)
            tma_load_2d(bs + j * kBoxBytes, &map_b, &bfull[bpos.stage], n0 + 64 * j, kb * kBK);
        }
        gpos.advance();
        bpos.advance();
      }
    } else if (kMode == 3 && warp == 1) {
      const float* rs_f = xa.rs + static_cast<size_t>((m0 >> 8) % 6) * k;
      const float* mm_f = xa.mm + static_cast<size_t>((m0 >> 8) % 6) * k;
      RingPos<kGS> gpos;
      for (int kb = 0; kb < nk; ++kb) {
        mbar_wait(&gempty[gpos.stage], gpos.phase ^ 1);
        const float2 rs = __ldg(reinterpret_cast<const float2*>(rs_f + kb * 64 + 2 * lane));
        const float2 mm = __ldg(reinterpret_cast<const float2*>(mm_f + kb * 64 + 2 * lane));
        slots[gpos.stage * 32 + lane] = make_uint2(pack_bf16x2(rs.x, rs.y), pack_bf16x2(-mm.x, -mm.y));
        __syncwarp();
        if (lane == 0) mbar_arrive(&gfull[gpos.stage]);
        gpos.advance();
      }
    }
  } else {
    setmaxnreg_inc<232>();
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;
    const int h = wg - 1, wq = warp & 3;
    const int m0h = m0 + h * 64;
    RingPos<kBS> bpos;
    RingPos<kGS> gpos;
    // kMode 2: the tile's 128 columns lie in one head; this thread's 2 rows (columns of g) keep w
    const int head_t = (m0 >> 8) % 6;
    const float* rs_h = xa.rs + static_cast<size_t>(head_t) * k;
    const float* mm_h = xa.mm + static_cast<size_t>(head_t) * k;
    uint32_t w2t[2] = {0, 0};
    if (kMode == 2 || kMode == 3) {
      const int c = (m0h & 255) + 16 * wq + (lane >> 2);
      const __nv_bfloat16 w0 = xa.w[c], w1 = xa.w[c + 8];
      w2t[0] = pack_bf16x2(__bfloat162float(w0), __bfloat162float(w0));
      w2t[1] = pack_bf16x2(__bfloat162float(w1), __bfloat162float(w1));
    }
    int held = -1;  // the g/x̂ stage the fragments of the next wgmma were built from
    auto build_next = [&](uint32_t (&f)[4][4], int kb) {
      mbar_wait(&gfull[gpos.stage], gpos.phase);
      const uint8_t* gs = gsmem + gpos.stage * kGXBytes;
      if constexpr (kMode == 0) {
        build_frags<false>(f, gs + h * kBoxBytes, gs + kABytes + h * kBoxBytes, m0h, kb, wq, lane, xa);
      } else if constexpr (kMode == 1) {
        build_frags<true>(f, gs + h * kBoxBytes, gs + kABytes + h * kBoxBytes, m0h, kb, wq, lane, xa);
      } else if constexpr (kMode == 2) {
        build_frags_t_h2(f, gs + h * kBoxBytes, gs + kABytes + h * kBoxBytes, rs_h, mm_h, nullptr, w2t, kb, wq, lane);
      } else {
        build_frags_t_h2<true>(f, gs + h * kBoxBytes, gs + kABytes + h * kBoxBytes, rs_h, mm_h, slots + gpos.stage * 32,
                               w2t, kb, wq, lane);
      }
      pin_frags(f);
      held = gpos.stage;  // released once the wgmma that reads these fragments is issued
      gpos.advance();
    };
    int prev = -1;
    auto step = [&](int i, uint32_t (&cur)[4][4], uint32_t (&nxt)[4][4]) {
      mbar_wait(&bfull[bpos.stage], bpos.phase);
      const uint32_t bb = smem_u32(smem + bpos.stage * kBBytes);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) wgmma_m64n256k16_rs(acc, cur[ks], make_desc_sw128(bb + ks * 2048, kBoxBytes, 1024), 1);
      wgmma_commit();
      // The g/x̂ stage `cur` came from, released only now: the wgmma's issue needed `cur`, the
      // arithmetic needed the ldmatrix results, so every read of the stage has landed. Released
      // right after the build (calls 1-3 of the 15th session), cxr-h2 was wrong and not
      // repeatable: its SASS has the mbarrier arrive straight after the 8 LDSM and the bf16x2
      // arithmetic after it — ptxas does not hold the arrive for the LDSM results, so the producer
      // could refill the stage under reads still queued behind the wgmma's shared-memory traffic.
      if (lane == 0) mbar_arrive(&gempty[held]);
      if constexpr (kSerial) {
        wgmma_wait<0>();
      } else {
        wgmma_wait<1>();
      }  // wgmma i − 1 done (its fragments, `nxt`, free; its B stage released); i may run
      if (prev >= 0 && lane == 0) {
        mbar_arrive(&bempty[prev]);
        if (kMC) mbar_arrive_cluster(map_rank(smem_u32(&bempty[prev]), rank ^ 1));
      }
      prev = bpos.stage;
      bpos.advance();
      if (i + 1 < nk) build_next(nxt, i + 1);
      // wgmma i still reads `cur` from registers: keep them live through the build, or the
      // allocator may give their physical registers to the build's temporaries (call 2: cxr-h2
      // still wrong with the build's outputs pinned; PTX leaves the A registers' lifetime to us).
      pin_frags(cur);
    };
    uint32_t fa[4][4], fb[4][4];
    build_next(fa, 0);
    for (int i = 0; i < nk; i += 2) {
      step(i, fa, fb);
      if (i + 1 < nk) step(i + 1, fb, fa);
    }
    wgmma_wait<0>();
    const int row = m0h + wq * 16 + (lane >> 2);
    const int col = n0 + (lane & 3) * 2;
#pragma unroll
    for (int j = 0; j < kN / 8; ++j) {
      *reinterpret_cast<uint32_t*>(c + static_cast<size_t>(row) * n + col + 8 * j) = pack_bf16x2(acc[4 * j], acc[4 * j + 1]);
      *reinterpret_cast<uint32_t*>(c + static_cast<size_t>(row + 8) * n + col + 8 * j) =
          pack_bf16x2(acc[4 * j + 2], acc[4 * j + 3]);
    }
  }
  // kMC: no CTA leaves while the other may still arrive on its barriers
  if constexpr (kMC) cluster_sync_all();
}

template <int kBS, int kGS, int kWrap = 0, int kMode = 0, bool kSerial = false,
          bool kMC = false>
int launch_cxr(const void* a, const void* b, void* c, int m, int n, int k, XArgs xa, cudaStream_t stream) {
  if (m % kBM || n % 256 || k % kBK || k < kBK) return -2;
  CUtensorMap ma, mb, mx;
  if (kMode == 2 || kMode == 3) {  // g and x̂ are [K, M]
    if (!make_map(&ma, a, k, m, m) || !make_map(&mx, xa.x, k, m, m)) return -1;
  } else if (!make_map(&ma, a, m, k, k) || !make_map(&mx, xa.x, m, k, k)) {
    return -1;
  }
  if (!make_map(&mb, b, k, n, n)) return -1;
  auto fn = cxr_kernel<kBS, kGS, kWrap, kMode, kSerial, kMC>;
  constexpr int smem = (kBS + kGS) * kBK * 256 * 2 + 1024 + 16 * (kBS + kGS) + (kMode == 3 ? kGS * 256 : 0);
  static bool attr = false;
  if (!attr) {
    cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
    attr = true;
  }
  const int grid = (m / kBM) * (n / 256);
  if constexpr (kMC) {
    if ((m / kBM) % 2) return -2;  // row tiles in pairs
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr2[1];
    attr2[0].id = cudaLaunchAttributeClusterDimension;
    attr2[0].val.clusterDim.x = 2;
    attr2[0].val.clusterDim.y = 1;
    attr2[0].val.clusterDim.z = 1;
    cfg.attrs = attr2;
    cfg.numAttrs = 1;
    cudaError_t e = cudaLaunchKernelEx(&cfg, fn, ma, mb, mx, reinterpret_cast<__nv_bfloat16*>(c), n, k, xa);
    return e != cudaSuccess ? e : cudaGetLastError();
  }
  fn<<<grid, kThreads, smem, stream>>>(ma, mb, mx, reinterpret_cast<__nv_bfloat16*>(c), n, k, xa);
  return cudaGetLastError();
}


// 15th session, after the calls (written, not yet run): `dep`, the side design in its own
// dependency structure. The norm warps (warps 1-3) of the row block's CTAs make its G — CTA n-tile
// j the heads j, j + N/256, … — into a G buffer in global memory and count each finished unit
// (128 rows × one head) in `ready`; the producer warp waits for a head's count (3: every norm
// warp) before its TMA loads of that head's 4 k-blocks; the consumers are the SS skeleton's. G
// goes through L2 between the warp that writes it and the GEMM that reads it. With N = 1536 a
// row block's 6 CTAs share its G, as dX (N = 640) and dW share the real op's. Every CTA waits on
// others': the grid must be resident at once (≤ one CTA per SM; the launch checks).
struct DepArgs {
  const __nv_bfloat16* g;  // [M, K]
  const __nv_bfloat16* x;  // [M, K] (x̂)
  const __nv_bfloat16* w;  // [256]
  const float* rs;         // [M, K / 256]
  __nv_bfloat16* G;        // [M, K]: written by the norm warps, read by the GEMM (map_a)
  int* ready;              // [M / 128, K / 256], zero at launch
};

__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void red_release_gpu_add(int* p, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// Between generic-proxy writes of G and the async proxy's (TMA's) reads of it.
__device__ __forceinline__ void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;" ::: "memory"); }

// The m64n256 accumulators of one consumer warpgroup to C (bf16), rows row0.. of its 64.
__device__ __forceinline__ void store_acc256(__nv_bfloat16* c, const float (&acc)[128], int row, int col, int n) {
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    *reinterpret_cast<uint32_t*>(c + static_cast<size_t>(row) * n + col + 8 * j) = pack_bf16x2(acc[4 * j], acc[4 * j + 1]);
    *reinterpret_cast<uint32_t*>(c + static_cast<size_t>(row + 8) * n + col + 8 * j) =
        pack_bf16x2(acc[4 * j + 2], acc[4 * j + 3]);
  }
}

// kNorm = false: the same kernel reading a G made beforehand (no waits): its skeleton, same shape.
// 16th session: kRowSplit (each of the row block's CTAs makes 1/ntn of the rows of every head, so
// head 0 is ready after 1/ntn of the time; a head's count reaches 3·ntn) and kUnroll (rows in
// flight per norm warp): call 1 showed the norm warps' rate, not the GEMM, setting the pace.
// kPhased: side_rows_phased. (A fourth warpgroup of norm warps does not compile: 512 threads cap
// every thread at 128 registers, and the m64n256 wgmma with its 128 accumulators needs ≥ 154.)
// kCpSlots (16th session): side_rows_cp<kUnroll, kCpSlots>, each norm warp's ring after the GEMM's stages.
template <bool kNorm, bool kRowSplit = false, int kUnroll = kSideUnroll, bool kPhased = false, int kCpSlots = 0>
__global__ void __launch_bounds__(kThreads, 1)
    dep_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
               __nv_bfloat16* __restrict__ c, int n, int k, DepArgs da) {
  constexpr int kN = 256, kStages = 4;
  constexpr int kBBytes = kBK * kN * 2;
  constexpr int kStageBytes = kABytes + kBBytes;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kStages * kStageBytes);
  uint64_t* empty = full + kStages;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, wg = warp >> 2;
  const int ntn = n / kN, heads = k / 256;
  const int mt = blockIdx.x / ntn, nt = blockIdx.x % ntn;
  const int m0 = mt * kBM, n0 = nt * kN;
  const int nk = k / kBK;
  constexpr int kNormWarps = 3;
  // This CTA's share of its row block's G, by norm warp nw of kNormWarps: every head in the order
  // the GEMM reads them, rows [r0, r1) of each (kRowSplit), or the whole 128 rows of the heads
  // nt, nt + ntn, …
  auto make_norm = [&](int nw) {
    const int r0 = kRowSplit ? m0 + nt * kBM / ntn : m0, r1 = kRowSplit ? m0 + (nt + 1) * kBM / ntn : m0 + kBM;
    for (int h = kRowSplit ? 0 : nt; h < heads; h += kRowSplit ? 1 : ntn) {
      SideArgs sa;
      sa.g = da.g + h * 256;
      sa.x = da.x + h * 256;
      sa.rs = da.rs + h;
      sa.w = da.w;
      sa.out = da.G + h * 256;
      sa.rows = kBM;
      sa.ld = k;
      sa.rs_ld = heads;
      if constexpr (kCpSlots > 0)
        side_rows_cp<kUnroll, kCpSlots>(sa, r0, r1, nw, kNormWarps, lane,
                                        smem + kStages * kStageBytes + 128 + nw * cp_ring_bytes<kUnroll, kCpSlots>());
      else if constexpr (kPhased) side_rows_phased<kUnroll>(sa, r0, r1, nw, kNormWarps, lane);
      else side_rows<kUnroll>(sa, r0, r1, nw, kNormWarps, lane);
      fence_proxy_async_global();
      __threadfence();
      __syncwarp();
      if (lane == 0) red_release_gpu_add(da.ready + mt * heads + h, 1);
    }
  };
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 8);
    }
    fence_barrier_init();
    tma_prefetch_desc(&map_a);
    tma_prefetch_desc(&map_b);
  }
  __syncthreads();
  if (wg == 0) {
    setmaxnreg_dec<104>();
    if (warp == 0) {
      if (lane == 0) {
        RingPos<kStages> pos;
        for (int kb = 0; kb < nk; ++kb) {
          if (kNorm && (kb & 3) == 0) {  // a new head: wait until its G rows are all written
            const int* count = da.ready + mt * heads + (kb >> 2);
            while (ld_acquire_gpu(count) < (kRowSplit ? kNormWarps * ntn : kNormWarps)) __nanosleep(64);
            fence_proxy_async_global();
          }
          ring_acquire(full, empty, pos, kStageBytes);
          uint8_t* st = smem + pos.stage * kStageBytes;
          tma_load_2d(st, &map_a, &full[pos.stage], kb * kBK, m0);
          tma_load_2d(st + kBoxBytes, &map_a, &full[pos.stage], kb * kBK, m0 + 64);
#pragma unroll
          for (int j = 0; j < kN / 64; ++j)
            tma_load_2d(st + kABytes + j * kBoxBytes, &map_b, &full[pos.stage], n0 + 64 * j, kb * kBK);
          pos.advance();
        }
      }
    } else if (kNorm) {
      make_norm(warp - 1);
    }
  } else {
    setmaxnreg_inc<200>();
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;
    RingPos<kStages> pos;
    int prev = -1;
    for (int kb = 0; kb < nk; ++kb) {
      mbar_wait(&full[pos.stage], pos.phase);
      const uint32_t st = smem_u32(smem + pos.stage * kStageBytes);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        wgmma_m64n256k16_w<0, 1>(acc, make_desc_sw128(st + (wg - 1) * kBoxBytes + ks * 32, 16, 1024),
                                 make_desc_sw128(st + kABytes + ks * 2048, kBoxBytes, 1024), 1);
      wgmma_commit();
      wgmma_wait<1>();
      if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
      prev = pos.stage;
      pos.advance();
    }
    wgmma_wait<0>();
    store_acc256(c, acc, m0 + (wg - 1) * 64 + (warp & 3) * 16 + (lane >> 2), n0 + (lane & 3) * 2, n);
  }
}

template <bool kNorm, bool kRowSplit = false, int kUnroll = kSideUnroll, bool kPhased = false, int kCpSlots = 0>
int launch_dep(const void* g_buf, const void* b, void* c, int m, int n, int k, DepArgs da, cudaStream_t stream) {
  if (m % kBM || n % 256 || k % 256) return -2;
  const int grid = (m / kBM) * (n / 256);
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    return -1;
  if (kNorm && grid > sms) return -2;  // CTAs wait on each other: all resident at once
  CUtensorMap ma, mb;
  if (!make_map(&ma, g_buf, m, k, k) || !make_map(&mb, b, k, n, n)) return -1;
  auto fn = dep_kernel<kNorm, kRowSplit, kUnroll, kPhased, kCpSlots>;
  constexpr int smem =
      4 * (kABytes + kBK * 256 * 2) + 1024 + (kCpSlots > 0 ? 128 + 3 * cp_ring_bytes<kUnroll, kCpSlots>() : 64);
  static bool attr = false;
  if (!attr) {
    cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
    attr = true;
  }
  fn<<<grid, kThreads, smem, stream>>>(ma, mb, reinterpret_cast<__nv_bfloat16*>(c), n, k, da);
  return cudaGetLastError();
}

}  // namespace wp

extern "C" {
// variant: 0 = 128×256, 4 stages; 1 = 128×256, 3 stages; 2 = 128×128, 4 stages; 3 = 128×128,
// 6 stages; 4 = 128×256, 4 stages, pass; 5 = 128×128, 4 stages, pass; 6 = 128×256, 3 stages,
// transform by warps 1-3; 7 = 128×256, 3 stages, each consumer warpgroup transforms its own rows
// one k-block ahead (x, w, rs, mm used); 11 = cxr (14th session: A fragments built in registers,
// wgmma from registers, wgmma i − 1 waited; rings 4 × B, 3 × g/x̂); 12 = cxr with g/x̂ read at
// column (k-block mod 12)·64 (an L2-resident diagnostic: no DRAM stream). 8-10, 13 (cxp) and 14
// (cxr, rings 3 × B and 4 × g/x̂) lost and were removed: git 4c2ca2b; 15 (cxr-nob) and 16
// (cxr-hoist): git 8acb515. 15th session: 17 = cxr-h2 (the build in bf16x2 arithmetic); 18 =
// cxrt-h2 (dW's side: C = Gᵀ·B, g and x̂ given [K, M], rstd/m [6, K]; bf16x2); 20 = cxrt-h2s (18
// with the per-token scalars from shared memory, filled by warp 1); 21 = cxr-h2-serial (17 with
// wgmma i waited before the next build: a diagnostic); 22 = w256-s4 with the side job (the whole
// Q/K norm of `rows` rows on warps 1-3, wp_set_side), 23 = the side job alone; 27 = w256-s4 with A
// L2-resident, 28 = 27 with the side job; 29, 30 = 17, 20 in clusters of 2 with B multicast (kMC).
// 19 (ping-pong), 24, 25 (3 B / 4 g/x̂ stages) and 26 (w from shared memory) lost and were removed
// (see the cxr kernel's comment). Returns 0, a cudaError_t, -1 (tensor map) or -2 (shape).
// dep (15th session; run in the 16th): norm = 1: the norm warps make G (into `G`) from g, x̂, w, rs
// while the GEMM C = G·B reads it, `ready` ([M/128, K/256] int32) zeroed by the caller before each
// launch; norm = 0: C = G·B from a G made beforehand (same kernel, no norm, no waits). 16th
// session: 2 = 1 with 8 rows in flight per norm warp; 3 = rows split across the row block's CTAs;
// 4 = 3 with 8 rows in flight; 5 = 1 with each step's 4 rows through each phase together
// (side_rows_phased; 6 or 8 rows spill in the norm warps' 104 registers); 6 = 5 with rows split;
// 7 = 5 fed by a per-warp cp.async ring of two 4-row slots (side_rows_cp); 8 = three 3-row slots
// (two steps ahead; three 4-row slots do not fit beside the stages, two 5-row ones spill).
int wp_dep_launch(int norm, void* G, const void* b, void* c, int m, int n, int k, const void* g, const void* x,
                  const void* w, const void* rs, void* ready, void* stream) {
  const wp::DepArgs da{reinterpret_cast<const __nv_bfloat16*>(g), reinterpret_cast<const __nv_bfloat16*>(x),
                       reinterpret_cast<const __nv_bfloat16*>(w), reinterpret_cast<const float*>(rs),
                       reinterpret_cast<__nv_bfloat16*>(G), reinterpret_cast<int*>(ready)};
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (norm && !(g && x && w && rs && ready)) return -2;
  switch (norm) {
    case 0: return wp::launch_dep<false>(G, b, c, m, n, k, da, s);
    case 1: return wp::launch_dep<true>(G, b, c, m, n, k, da, s);
    case 2: return wp::launch_dep<true, false, 8>(G, b, c, m, n, k, da, s);
    case 3: return wp::launch_dep<true, true>(G, b, c, m, n, k, da, s);
    case 4: return wp::launch_dep<true, true, 8>(G, b, c, m, n, k, da, s);
    case 5: return wp::launch_dep<true, false, 4, true>(G, b, c, m, n, k, da, s);
    case 6: return wp::launch_dep<true, true, 4, true>(G, b, c, m, n, k, da, s);
    case 7: return wp::launch_dep<true, false, 4, false, 2>(G, b, c, m, n, k, da, s);
    case 8: return wp::launch_dep<true, false, 3, false, 3>(G, b, c, m, n, k, da, s);
    default: return -2;
  }
}

void wp_set_side(const void* g, const void* x, const void* rs, const void* w, void* out, int rows) {
  wp::g_side = wp::SideArgs{reinterpret_cast<const __nv_bfloat16*>(g), reinterpret_cast<const __nv_bfloat16*>(x),
                            reinterpret_cast<const float*>(rs), reinterpret_cast<const __nv_bfloat16*>(w),
                            reinterpret_cast<__nv_bfloat16*>(out), rows, 256, 1};
}

int wp_launch(int variant, const void* a, const void* b, void* c, int m, int n, int k, const void* x, const void* w,
              const void* rs, const void* mm, void* stream) {
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  const wp::XArgs xa{reinterpret_cast<const __nv_bfloat16*>(x), reinterpret_cast<const __nv_bfloat16*>(w),
                     reinterpret_cast<const float*>(rs), reinterpret_cast<const float*>(mm)};
  switch (variant) {
    case 0: return wp::launch<256, 4, false>(a, b, c, m, n, k, xa, s);
    case 1: return wp::launch<256, 3, false>(a, b, c, m, n, k, xa, s);
    case 2: return wp::launch<128, 4, false>(a, b, c, m, n, k, xa, s);
    case 3: return wp::launch<128, 6, false>(a, b, c, m, n, k, xa, s);
    case 4: return wp::launch<256, 4, true>(a, b, c, m, n, k, xa, s);
    case 5: return wp::launch<128, 4, true>(a, b, c, m, n, k, xa, s);
    case 6: return (x && w && rs && mm) ? wp::launch<256, 3, false, true>(a, b, c, m, n, k, xa, s) : -2;
    case 7: return (x && w && rs && mm) ? wp::launch<256, 3, false, false, true>(a, b, c, m, n, k, xa, s) : -2;
    case 11: return (x && w && rs && mm) ? wp::launch_cxr<4, 3>(a, b, c, m, n, k, xa, s) : -2;
    case 12: return (x && w && rs && mm) ? wp::launch_cxr<4, 3, 12>(a, b, c, m, n, k, xa, s) : -2;
    case 17: return (x && w && rs && mm) ? wp::launch_cxr<4, 3, 0, 1>(a, b, c, m, n, k, xa, s) : -2;
    case 18: return (x && w && rs && mm) ? wp::launch_cxr<4, 3, 0, 2>(a, b, c, m, n, k, xa, s) : -2;
    case 20: return (x && w && rs && mm) ? wp::launch_cxr<4, 3, 0, 3>(a, b, c, m, n, k, xa, s) : -2;
    case 21: return (x && w && rs && mm) ? wp::launch_cxr<4, 3, 0, 1, true>(a, b, c, m, n, k, xa, s) : -2;
    case 22: return wp::g_side.rows > 0 ? wp::launch<256, 4, false, false, false, 1>(a, b, c, m, n, k, xa, s) : -2;
    case 23: return wp::g_side.rows > 0 ? wp::launch<256, 4, false, false, false, 2>(a, b, c, m, n, k, xa, s) : -2;
    case 27: return wp::launch<256, 4, false, false, false, 3>(a, b, c, m, n, k, xa, s);
    case 28: return wp::g_side.rows > 0 ? wp::launch<256, 4, false, false, false, 4>(a, b, c, m, n, k, xa, s) : -2;
    case 29: return (x && w && rs && mm) ? wp::launch_cxr<4, 3, 0, 1, false, true>(a, b, c, m, n, k, xa, s) : -2;
    case 30: return (x && w && rs && mm) ? wp::launch_cxr<4, 3, 0, 3, false, true>(a, b, c, m, n, k, xa, s) : -2;
    default: return -2;
  }
}
}
