// Host side: TMA tensor maps for 2-D bf16 row-major matrices, 64x64 boxes, 128-byte swizzle
// (what sm90.cuh's tma_load_2d / tma_store_2d and the wgmma descriptors expect).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <mutex>

namespace kidx {

constexpr int kBoxRows = 64;
constexpr int kBoxCols = 64;
constexpr int kBoxBytes = kBoxRows * kBoxCols * 2;  // one bf16 box

// cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda at link time).
inline PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
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

// [rows, cols] bf16 with a row stride of `stride` elements; zero fill out of bounds.
inline bool make_map(CUtensorMap* map, const void* ptr, int64_t rows, int64_t cols, int64_t stride) {
  auto fn = encode_fn();
  if (!fn) return false;
  cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride * 2)};
  cuuint32_t box[2] = {kBoxCols, kBoxRows};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(ptr), dims, strides, box, estr,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

}  // namespace kidx
