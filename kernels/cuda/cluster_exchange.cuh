// The cross-CTA exchange of a row statistic: every CTA of the cluster pushes its message into a
// mailbox of every CTA (one slot per sender rank) with st.async, which completes bytes on the
// receiving CTA's mbarrier; each CTA waits on its own mbarrier until the C messages have landed,
// then combines them locally. No cluster-wide barrier per exchange, no remote loads: a message
// costs one remote store per word and receiver, and the wait ends as soon as the last message
// lands (a cluster barrier also waits for every thread of every CTA, and its release orders all
// of the thread's earlier memory operations).
//
// Protocol. Kernel start: thread 0 initialises the mailboxes' mbarriers (arrival count 1), then
// every thread fences the initialisations (fence.mbarrier_init, a release at cluster scope) and
// arrives at the cluster barrier (relaxed); before its first push a thread waits on
// it (cluster_ready), so no message reaches a mailbox before its mbarrier exists. The wait can
// come late (after the first row's load and scan), so it costs nothing.
// Per use of a mailbox: thread 0 arms its phase (arrive.expect_tx with C x the message size;
// remote bytes may land before that, the tx-count may go negative, the phase cannot complete
// while the arrival is pending); lane r of warp 0 (r < C) pushes the CTA's message to CTA r;
// warp 0 waits for the phase (try_wait.parity, acquire at cluster scope: the messages are
// visible after it), combines the messages and publishes the result behind a CTA barrier.
// Reuse without barriers: a kernel uses its mailboxes in a fixed order per row (range, then one
// or two statistics exchanges), each mailbox at most once per row; the one-exchange rows
// (row_reduce.cuh reduce_one_exchange) use one statistics mailbox per row, alternating between
// the two, so the argument below holds with "the row before" for "the preceding use". CTA A can push into B's
// mailbox for row r + 1 only after A received B's last message of row r, which B sent after it
// had read (and finished with) every mailbox use of row r that precedes it; so no slot is
// overwritten before its reader is done, and no phase receives bytes of the next one.
// Exit: every push targets a CTA that waits for it, so no CTA exits while a message to it is in
// flight; no CTA reads another's shared memory.
// The emulator (tests/cuda) runs the portable branch: a push is a plain store into the other
// CTA's shared storage, a wait is a barrier of the whole cluster.
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include "kernels/cuda/element_io.cuh"  // shared_address

namespace divcheck::cuda {

namespace cg = cooperative_groups;

inline constexpr int kMaxCtas = 16;

// The grid's clusters (1-D grids of 1-D clusters of `ctas` CTAs): this CTA's cluster and how
// many there are, read from the special registers %clusterid.x and %nclusterid.x rather than
// computed as blockIdx.x / C and gridDim.x / C: two unsigned divisions by a run-time C (~20
// instructions each, a MUFU.RCP among them) on every CTA's path to its first request
// (bench/RESULTS.md step 67). The emulator divides.
struct GridClusters {
  unsigned index, count;
};

// The same by the divisions (the forward-only row kernels', logit_rows_kernel.cuh).
__device__ __forceinline__ GridClusters grid_clusters_by_division(unsigned ctas) {
  GridClusters g;
  g.count = gridDim.x / ctas;
  g.index = blockIdx.x / ctas;
  return g;
}

__device__ __forceinline__ GridClusters grid_clusters(unsigned ctas) {
#if defined(__CUDA_ARCH__)
  (void)ctas;
  GridClusters g;
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(g.index));
  asm("mov.u32 %0, %%nclusterid.x;" : "=r"(g.count));
  return g;
#else
  return grid_clusters_by_division(ctas);
#endif
}

// A mailbox of kWords 16-byte words per sender rank, and its mbarrier.
template <int kWords>
struct Mailbox {
  uint4 from[kMaxCtas][kWords];
  unsigned long long bar;
  static constexpr unsigned kMessageBytes = kWords * 16u;
};

// Thread 0, once per CTA, before the cluster arrive of cluster_start.
template <int kWords>
__device__ __forceinline__ void mailbox_init(Mailbox<kWords>& box) {
#if defined(__CUDA_ARCH__)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(&box.bar)) : "memory");
#else
  box.bar = 0;
#endif
}

// Every thread, once, after thread 0 initialised the mailboxes (and a __syncthreads()). The
// only writes other CTAs rely on are the mbarrier initialisations, which the
// fence.mbarrier_init release fence orders before the arrive; so the arrive itself is relaxed
// (a release arrive compiles to a GPU-scope memory barrier in every CTA: ~4.5% of KL f32
// forward+backward's stall samples, bench/RESULTS.md step 20).
__device__ __forceinline__ void cluster_arrive_start() {
#if defined(__CUDA_ARCH__)
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}

// Every thread, once, before its first push (and at the latest before the kernel ends).
__device__ __forceinline__ void cluster_wait_start(cg::cluster_group& cl) {
#if defined(__CUDA_ARCH__)
  (void)cl;
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
  cl.sync();
#endif
}

// Thread 0: arms the mailbox's current phase for `ctas` messages.
template <int kWords>
__device__ __forceinline__ void mailbox_arm(Mailbox<kWords>& box, unsigned ctas) {
#if defined(__CUDA_ARCH__)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(&box.bar)),
               "r"(ctas * Mailbox<kWords>::kMessageBytes)
               : "memory");
#else
  (void)box;
  (void)ctas;
#endif
}

// One thread: pushes the message (kWords words) of CTA `rank` into the slot `rank` of the
// mailbox of CTA `dest`.
template <int kWords>
__device__ __forceinline__ void mailbox_push(cg::cluster_group& cl, Mailbox<kWords>& box, unsigned rank, unsigned dest,
                                             const uint4 (&msg)[kWords]) {
#if defined(__CUDA_ARCH__)
  (void)cl;
  unsigned slot, bar;
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(slot) : "r"(shared_address(&box.from[rank][0])), "r"(dest));
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(bar) : "r"(shared_address(&box.bar)), "r"(dest));
#pragma unroll
  for (int w = 0; w < kWords; ++w)
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(
                     slot + 16u * w),
                 "r"(msg[w].x), "r"(msg[w].y), "r"(msg[w].z), "r"(msg[w].w), "r"(bar)
                 : "memory");
#else
  Mailbox<kWords>* remote = cl.map_shared_rank(&box, dest);
#pragma unroll
  for (int w = 0; w < kWords; ++w) remote->from[rank][w] = msg[w];
#endif
}

// Called by every thread: warp 0 waits until the mailbox's phase with parity `phase` has
// completed (every message has landed and is visible to it); the other warps go on to the
// CTA barrier that follows the combine (row_reduce.cuh), where they wait without issuing
// (polling warps would take issue slots from the SM's other CTAs).
template <int kWords>
__device__ __forceinline__ void mailbox_wait(cg::cluster_group& cl, Mailbox<kWords>& box, unsigned phase) {
#if defined(__CUDA_ARCH__)
  (void)cl;
  if (threadIdx.x >= 32) return;
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra WAIT_%=;\n}" ::"r"(shared_address(&box.bar)),
      "r"(phase)
      : "memory");
#else
  (void)box;
  (void)phase;
  cl.sync();
#endif
}

}  // namespace divcheck::cuda
