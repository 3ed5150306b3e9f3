// Staging a row slice with the Hopper bulk-copy engine (cp.async.bulk, global -> shared memory)
// and one mbarrier per CTA: one thread requests every byte of the slice at once, the CTA's
// threads wait on the barrier's phase and then read shared memory. Compared with per-thread
// 16-byte loads (a few in flight per thread, staged through registers), the whole slice is in
// flight together and no thread spends instructions on moving it.
//
// Protocol per use (logit_rows_kernel.cuh): every thread is past its last read of the buffers
// (the kernel's end-of-row CTA barrier); thread 0 orders those generic-proxy reads before
// the async-proxy writes (fence.proxy.async), arms the barrier with the byte count
// (arrive.expect_tx) and issues the copies; every thread waits for the phase to complete.
// Sizes and addresses are multiples of 16 bytes (the caller copies whole 16-byte chunks).
// The emulator (tests/cuda) runs the portable branch: a memcpy by the issuing thread, and a
// block barrier in place of the wait.
#pragma once

#include <cstdint>
#include <cstring>

namespace divcheck::cuda {

struct BulkBarrier {
  unsigned long long word;  // the mbarrier (shared memory)
};

// Once per CTA, by one thread, before a __syncthreads().
__device__ __forceinline__ void bulk_barrier_init(BulkBarrier& b) {
#if defined(__CUDA_ARCH__)
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(&b.word));
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(addr) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
  b.word = 0;
#endif
}

// By the issuing thread: orders earlier generic reads of the destination before the copy and
// arms the barrier for `bytes` bytes in total.
__device__ __forceinline__ void bulk_arm(BulkBarrier& b, unsigned bytes) {
#if defined(__CUDA_ARCH__)
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(&b.word));
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(addr), "r"(bytes) : "memory");
#else
  (void)b;
  (void)bytes;
#endif
}

// By the issuing thread: copies `bytes` (a multiple of 16) from global src to shared dst.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, BulkBarrier& b) {
#if defined(__CUDA_ARCH__)
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&b.word));
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(d),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
#else
  (void)b;
  std::memcpy(dst, src, bytes);
#endif
}

// By the issuing thread: asks the L2 to fetch `bytes` (a multiple of 16) from global src (16-byte
// aligned), without waiting (cp.async.bulk.prefetch.L2: a hint; the emulator does nothing).
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, unsigned bytes) {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
#else
  (void)src;
  (void)bytes;
#endif
}
// Every thread of the CTA: waits until the phase with parity `phase` has completed.
__device__ __forceinline__ void bulk_wait(BulkBarrier& b, unsigned phase) {
#if defined(__CUDA_ARCH__)
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(&b.word));
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra WAIT_%=;\n}" ::"r"(addr),
      "r"(phase)
      : "memory");
#else
  (void)b;
  (void)phase;
  __syncthreads();
#endif
}

}  // namespace divcheck::cuda
