// The bulk staging of a CTA's slices over its rows (SliceStream): what the bulk copy engine moves
// of a slice (staged_bytes: the whole chunks, or a partly staged kernel's first K and the L2
// prefetch of the rest), whether a row's slices are aligned for it (row_aligned), and the
// requests: the first row's at the kernel's entry, a row's own, the next row's (the prefetch).
#pragma once

#include <cstdint>

#include "kernels/cuda/bulk_copy.cuh"
#include "kernels/cuda/element_io.cuh"
#include "kernels/cuda/row_kernel_params.cuh"

namespace divcheck::cuda {

// What the bulk copy engine moves of a CTA's slice of n columns: its whole chunks (all of them,
// or a partly staged kernel's first K), and (kPartial) the bytes of the whole chunks after them,
// which the L2 prefetches (0 in every other kernel).
struct StagedBytes {
  unsigned bytes, tail;
};

template <class Elem, bool kPartial>
__device__ __forceinline__ StagedBytes staged_bytes(const RowKernelParams& prm, int n) {
  constexpr auto kChunkBytes = static_cast<unsigned>(kChunk * sizeof(Elem));
  const unsigned bytes =
      kPartial ? static_cast<unsigned>(n / kChunk < prm.staged_chunks ? n / kChunk : prm.staged_chunks) * kChunkBytes
               : static_cast<unsigned>(n / kChunk) * kChunk * static_cast<unsigned>(sizeof(Elem));
  return {bytes, kPartial ? static_cast<unsigned>(n / kChunk) * kChunkBytes - bytes : 0u};
}

template <class Elem>
__device__ __forceinline__ bool row_aligned(const RowKernelParams& prm, int64_t row, int64_t v0) {
  const int64_t off = row * prm.vocab + v0;
  return aligned16(static_cast<const Elem*>(prm.y) + off) && aligned16(static_cast<const Elem*>(prm.x) + off);
}

// The bulk staging of a CTA's slices over its rows: the CTA's mbarrier and how many of its
// phases completed (the same in every thread), and the row whose slices were requested ahead
// (the prefetch, or the first row's request at the kernel's entry; thread 0's, which alone
// requests: -1 in the other threads).
template <class Elem>
struct SliceStream {
  BulkBarrier& bar;
  Elem* ys;
  Elem* xs;
  uint32_t ys_sa, xs_sa;  // their shared_address
  unsigned uses = 0;
  int64_t ahead = -1;  // the row whose slices the engine is copying already, or -1
  bool first = false;  // ahead is the CTA's first row, requested at entry (not a prefetch)
  // Thread 0, at the kernel's entry, right after the mbarrier's initialisation: requests the
  // slices of the CTA's first row if process_row would (staged, with data, aligned, whole
  // chunks), so that their copy starts before the rest of the prologue (the barrier and cluster
  // arrive, the row's pointers and the load of the position mask were all on the path to the
  // request before; bench/RESULTS.md step 67). Returns whether it did (then `ahead` = row).
  template <bool kPartial>
  __device__ static __forceinline__ bool request_first(const RowKernelParams& prm, BulkBarrier& bar, Elem* ys, Elem* xs,
                                                       int64_t row, int64_t v0, int n) {
    if (!prm.staged || row >= prm.rows || (prm.valid && prm.valid[row] == 0) || !row_aligned<Elem>(prm, row, v0))
      return false;
    const StagedBytes b = staged_bytes<Elem, kPartial>(prm, n);
    if (b.bytes == 0) return false;
    request_slices(bar, ys, xs, static_cast<const Elem*>(prm.y), static_cast<const Elem*>(prm.x), row * prm.vocab + v0,
                   b.bytes, b.tail);
    return true;
  }
  // Thread 0: requests the staged whole chunks (bytes) of this CTA's slices of `row`, and asks
  // the L2 to prefetch the whole chunks after them (tail bytes: a partly staged kernel's, which
  // every pass reads from global memory; 0 in every other kernel).
  __device__ __forceinline__ void request(const RowKernelParams& prm, int64_t row, int64_t v0, unsigned bytes,
                                          unsigned tail = 0) {
    request_slices(bar, ys, xs, static_cast<const Elem*>(prm.y), static_cast<const Elem*>(prm.x), row * prm.vocab + v0,
                   bytes, tail);
  }
  __device__ static __forceinline__ void request_slices(BulkBarrier& bar, Elem* ys, Elem* xs, const Elem* y,
                                                        const Elem* x, int64_t off, unsigned bytes, unsigned tail = 0) {
    bulk_arm(bar, 2 * bytes);
    bulk_copy(ys, y + off, bytes, bar);
    bulk_copy(xs, x + off, bytes, bar);
    if (tail > 0) {
      const int64_t past = off + bytes / sizeof(Elem);
      bulk_prefetch_l2(y + past, tail);
      bulk_prefetch_l2(x + past, tail);
    }
  }
};

}  // namespace divcheck::cuda
