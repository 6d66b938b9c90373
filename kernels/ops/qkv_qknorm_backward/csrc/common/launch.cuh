// Host side: launch helpers shared by the kernels' launch functions.
#pragma once

#include <cuda_runtime.h>

#include <mutex>
#include <set>
#include <utility>

namespace kidx {

// Raise a kernel's dynamic shared-memory limit, once per device and kernel.
inline cudaError_t allow_dynamic_smem(const void* kernel, int bytes) {
  static std::mutex mu;
  static std::set<std::pair<int, const void*>> done;
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  std::lock_guard<std::mutex> lock(mu);
  if (done.count({dev, kernel})) return cudaSuccess;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (err == cudaSuccess) done.insert({dev, kernel});
  return err;
}

// The launch's own error, else the last one (an asynchronous launch failure shows there).
inline cudaError_t launched(cudaError_t err) { return err != cudaSuccess ? err : cudaGetLastError(); }

// Host API error codes besides cudaError_t values.
constexpr int kErrTensorMap = -1;  // a tensor map could not be encoded
constexpr int kErrArguments = -2;  // bad launch arguments

inline const char* error_string(int code) {
  if (code == kErrTensorMap) return "a tensor map could not be encoded (cuTensorMapEncodeTiled)";
  if (code == kErrArguments) return "bad launch arguments";
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

}  // namespace kidx
