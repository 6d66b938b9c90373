// Lab probe (11th session): how fast can each CTA of a 5-CTA cluster store 16-byte chunks into
// all five CTAs' shared memory (ext-fused's deleted `share` mode did that with its G slices), and
// how fast do bulk copies between them go (`share-bulk`)? LOG.md, 11th session, calls 1-3.
// Every thread stores its chunk to ranks 0..4 (or to its own CTA only, the reference), `iters`
// times over a 16 KiB buffer, then the cluster syncs; then bulk copies (probe_bulk). Prints per-SM
// bytes received per clock.
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I kernels/ops/qkv_qknorm_backward/csrc \
//        lab/qkv_qknorm_backward/dsmem_bw.cu -o dsmem_bw && ./dsmem_bw
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "common/sm90.cuh"

using namespace kidx;

// The two distributed-shared-memory instructions the deleted `share` / `share-bulk` modes used
// (their code: main's bee4230 … ab2c30e); only this probe uses them now.
__device__ __forceinline__ void st_dsmem_u4(uint32_t addr, const uint4& v) {
  asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
// A bulk copy (the copy engine) of `bytes` from this CTA's shared memory to `dst` in another CTA of
// the cluster, completing `bytes` of transactions on the mbarrier `bar` there (both from map_rank).
__device__ __forceinline__ void bulk_copy_to_rank(uint32_t dst, uint32_t src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "r"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// Both probes take kSmem bytes of dynamic shared memory so that one CTA runs per SM (call 2's
// numbers were per CTA with ~4.7 CTAs per SM for the stores, ~2 for the bulk copies).
constexpr int kSmem = 160 * 1024;

template <int kTargets>
__global__ void __cluster_dims__(5, 1, 1) probe(int iters, unsigned long long* cycles, int threads_storing) {
  extern __shared__ __align__(128) uint8_t buf[];
  cluster_sync_all();
  const uint64_t t0 = clock64();
  if (threadIdx.x < threads_storing) {
    const uint32_t base = smem_u32(buf) + (threadIdx.x * 16) % 16384;
    uint4 v = make_uint4(threadIdx.x, iters, 1, 2);
    const uint32_t me = cluster_ctarank();
    for (int i = 0; i < iters; ++i) {
      const uint32_t a = base + ((i * 4096) & 16383);
#pragma unroll
      for (int c = 0; c < kTargets; ++c) st_dsmem_u4(map_rank(a, kTargets == 1 ? me : c), v);
      v.y += 1;
    }
  }
  cluster_sync_all();
  const uint64_t t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

// The copy engine instead: each CTA sends 16 KiB to each of the other 4 per round (one bulk copy
// each, completing on the receiver's mbarrier), waits for its own 64 KiB, then the cluster syncs
// (so that no round's bytes land in the previous round's phase).
__global__ void __cluster_dims__(5, 1, 1) probe_bulk(int iters, unsigned long long* cycles, int bytes) {
  extern __shared__ __align__(128) uint8_t dyn[];  // src 16 KiB, 4 receive slots of 16 KiB
  __shared__ __align__(8) uint64_t bar;
  const uint32_t me = cluster_ctarank();
  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    fence_barrier_init();
  }
  cluster_sync_all();
  const uint64_t t0 = clock64();
  for (int i = 0; i < iters; ++i) {
    if (threadIdx.x == 0) {
      mbar_expect_tx(&bar, 4 * bytes);
      for (int c = 1; c < 5; ++c) {
        const uint32_t r = (me + c) % 5;
        bulk_copy_to_rank(map_rank(smem_u32(dyn + 16384 * c), r), smem_u32(dyn), bytes, map_rank(smem_u32(&bar), r));
      }
      mbar_wait(&bar, i & 1);
    }
    cluster_sync_all();
  }
  const uint64_t t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

int main() {
  int clusters = 0;
  cudaLaunchConfig_t cfg = {};
  cfg.blockDim = dim3(256);
  cfg.gridDim = dim3(5 * 26);
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = 5, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  cfg.dynamicSmemBytes = kSmem;
  cudaFuncSetAttribute(probe<5>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  cudaFuncSetAttribute(probe<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  cudaFuncSetAttribute(probe_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (cudaOccupancyMaxActiveClusters(&clusters, probe<5>, &cfg) != cudaSuccess) clusters = -1;
  printf("max active 5-CTA clusters (this probe): %d\n", clusters);
  const int grid = 5 * (clusters > 0 ? clusters : 26);
  unsigned long long* d;
  cudaMalloc(&d, grid * sizeof(unsigned long long));
  unsigned long long h[1024];
  const int iters = 4096;
  for (int storing : {128, 256}) {
    for (int targets : {1, 5}) {
      for (int rep = 0; rep < 2; ++rep) {
        if (targets == 5) probe<5><<<grid, 256, kSmem>>>(iters, d, storing);
        else probe<1><<<grid, 256, kSmem>>>(iters, d, storing);
        if (cudaDeviceSynchronize() != cudaSuccess) {
          printf("error: %s\n", cudaGetErrorString(cudaGetLastError()));
          return 1;
        }
      }
      cudaMemcpy(h, d, grid * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
      unsigned long long mx = 0, sum = 0;
      for (int i = 0; i < grid; ++i) mx = h[i] > mx ? h[i] : mx, sum += h[i];
      // bytes each CTA receives: every CTA of the cluster (targets 5) or itself (1) stores
      // storing × 16 B per iteration into it
      const double bytes = static_cast<double>(storing) * 16 * iters * (targets == 5 ? 5 : 1);
      printf("threads %d, targets %d, CTAs %d: %.1f B/clk received per SM (slowest CTA %llu clk, mean %.0f)\n",
             storing, targets, grid, bytes / mx, mx, static_cast<double>(sum) / grid);
    }
  }
  for (int bytes : {1024, 4096, 16384}) {
    for (int rep = 0; rep < 2; ++rep) {
      probe_bulk<<<grid, 256, kSmem>>>(512, d, bytes);
      if (cudaDeviceSynchronize() != cudaSuccess) {
        printf("error (bulk): %s\n", cudaGetErrorString(cudaGetLastError()));
        return 1;
      }
    }
    cudaMemcpy(h, d, grid * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    unsigned long long mx = 0;
    for (int i = 0; i < grid; ++i) mx = h[i] > mx ? h[i] : mx;
    printf("bulk copies, 4 x %d B per CTA per round + cluster sync, CTAs %d: %.1f B/clk received per SM, %.0f clk per round\n",
           bytes, grid, 512.0 * 4 * bytes / mx, mx / 512.0);
  }
  return 0;
}
