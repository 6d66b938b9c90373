// A ring of N shared-memory stages guarded by mbarriers: full[s] (the producer's copies landed)
// and empty[s] (the consumers are done with the stage). Producer and consumers walk the ring with
// a RingPos; the phase bit flips each time the ring wraps.
#pragma once

#include <stdint.h>

#include "sm90.cuh"

namespace kidx {

template <int N>
struct RingPos {
  int stage = 0;
  uint32_t phase = 0;

  __device__ __forceinline__ void advance() {
    if (++stage == N) {
      stage = 0;
      phase ^= 1;
    }
  }
};

// Producer: wait until the consumers released the stage, then announce `tx_bytes` of copies.
template <int N>
__device__ __forceinline__ void ring_acquire(uint64_t* full, uint64_t* empty, const RingPos<N>& pos,
                                             uint32_t tx_bytes) {
  mbar_wait(&empty[pos.stage], pos.phase ^ 1);
  mbar_expect_tx(&full[pos.stage], tx_bytes);
}

// Set up the ring's barriers (one thread, before the CTA's first __syncthreads).
template <int N>
__device__ __forceinline__ void ring_init(uint64_t* full, uint64_t* empty, uint32_t consumers) {
  for (int s = 0; s < N; ++s) {
    mbar_init(&full[s], 1);
    mbar_init(&empty[s], consumers);
  }
  fence_barrier_init();
}

}  // namespace kidx
