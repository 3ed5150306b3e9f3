// A CTA's slices of the current row as its threads see them (SliceRef: staged in shared memory,
// whole or the first K chunks, or read from global memory), the loops over a thread's chunks of
// both sides in chunk order (for_each_chunk, for_each_chunk_pair), pass 1 of the row kernel (the
// range of the thread's chunks, which also stages them: scan_slices, scan_bulk_staged) and the
// fills of a masked or poisoned row's gradient slices. No divergence arithmetic: the columns are
// row_columns.cuh's, the passes row_passes.cuh's (logit_rows_kernel.cuh has the design).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/element_io.cuh"
#include "kernels/cuda/row_range.cuh"
#include "kernels/cuda/row_reduce.cuh"

namespace divcheck::cuda {

// Chunks per side whose loads are in flight together while staging: 32 bytes per side for every
// dtype (two 16-bit chunks, one float chunk), which keeps the float kernels within 64 registers.
template <class Elem>
inline constexpr int kLoadUnroll = sizeof(Elem) == 4 ? 1 : 2;
inline constexpr int kQuietNaNBits = 0x7fc00000;  // the NaN the CPU backend writes (quiet_NaN)

// One side's slice of the current row as a thread sees it. kPartial: a partly staged kernel's
// (logit_rows_body), whose slices keep only their first k chunks in shared memory; every other
// kernel stages a slice whole or not at all, and its staged test is the pointer's (with the
// slice's bound, the compiler then knows every chunk index staged: a run-time chunk test in
// those kernels cost up to 11 registers and a stack frame, bench/RESULTS.md step 60).
template <class Elem, bool kPartial = false>
struct SliceRef {
  const Elem* g;  // global memory (the row's slice)
  Elem* s;        // the staged copy in shared memory, or nullptr (not staged)
  bool vec;       // whole chunks may move with 16-byte accesses (the rows are 16-byte aligned)
  uint32_t sa;    // shared_address(s) where staged (element_io.cuh load_staged)
  __device__ __forceinline__ bool staged(int) const { return s != nullptr; }
};
template <class Elem>
struct SliceRef<Elem, true> {
  const Elem* g;
  Elem* s;
  bool vec;
  uint32_t sa;
  // Chunks 0..k-1 are staged (0 when s is nullptr; K a multiple of 32 chunks, so the test is
  // uniform across a warp): the chunks past K are read from global memory (L2) by every pass.
  int k = 0;
  __device__ __forceinline__ bool staged(int i) const { return i < k; }
};

// The number of valid columns of chunk i of an n-column slice (1..8).
// Slice-local indices are 32-bit (a slice has at most V < 2^31 columns: the launcher checks).
__device__ __forceinline__ int chunk_count(int i, int n) {
  const int left = n - i * kChunk;
  return left < kChunk ? left : kChunk;
}

// Runs body(i, cnt, tag) over the thread's chunks of an n-column slice in chunk order: the
// whole chunks in a loop without count checks (tag std::true_type), then the slice's partial
// last chunk, if any, in the thread that owns it (the first index past the loop is the partial
// chunk's index exactly in that thread; tag std::false_type). The same order as a loop over
// every chunk: a thread's partial chunk is its last.
template <class Body>
__device__ __forceinline__ void for_each_chunk(int n, const Body& body) {
  const int whole = n / kChunk;
  int i = threadIdx.x;
  for (; i < whole; i += cta_threads()) body(i, kChunk, std::true_type{});
  if (i == whole && n % kChunk != 0) body(i, n - whole * kChunk, std::false_type{});
}

// Chunk i of a slice: from shared memory when staged, else from global memory.
template <class Elem, bool kP>
__device__ __forceinline__ void read_chunk(const SliceRef<Elem, kP>& r, int i, int cnt, RawChunk<Elem>& c) {
  if (r.staged(i))
    load_staged(r.s, r.sa, i, c);  // staged as whole aligned chunks
  else
    load_raw<Elem, true>(r.g + i * kChunk, cnt, r.vec && cnt == kChunk, c);
}

// Chunk i of both sides' slices. kOneTest: one staged test decides both loads (the sides are
// staged together, process_row), else each side's own (read_chunk). Only the code differs: one
// test per chunk made the loss-only kernels 1-6% faster and the others up to 13% slower (the
// register allocation of their loops, bench/RESULTS.md step 46), so kOneTest is kIsLossOnly.
template <bool kOneTest, class Elem, bool kP>
__device__ __forceinline__ void read_chunks(const SliceRef<Elem, kP>& y, const SliceRef<Elem, kP>& x, int i, int cnt,
                                            RawChunk<Elem>& cy, RawChunk<Elem>& cx) {
  if constexpr (kOneTest) {
    if (y.staged(i)) {  // staged as whole aligned chunks
      load_staged(y.s, y.sa, i, cy);
      load_staged(x.s, x.sa, i, cx);
    } else {
      load_raw<Elem, true>(y.g + i * kChunk, cnt, y.vec && cnt == kChunk, cy);
      load_raw<Elem, true>(x.g + i * kChunk, cnt, x.vec && cnt == kChunk, cx);
    }
  } else {
    read_chunk(y, i, cnt, cy);
    read_chunk(x, i, cnt, cx);
  }
}

// How many of the first `whole` chunks of both slices the staged loops of for_each_chunk_pair and
// write_gradients take: all of them where the slices are staged whole, none where they are not
// staged, and none in a partly staged kernel (kP): its first K chunks in such a loop, the rest in
// the general one, measured 0.91-0.96x for KL, cross-entropy, the temperature KL row and
// Hellinger with gradients (f32, both benchmark shapes; the same loops without it 0.99-1.01x of
// the kernels before: bench/RESULTS.md step 65).
template <class Elem, bool kP>
__device__ __forceinline__ int whole_staged_chunks(const SliceRef<Elem, kP>& y, const SliceRef<Elem, kP>& x,
                                                   int whole) {
  if constexpr (kP) {
    return 0;
  } else {
    return y.s != nullptr && x.s != nullptr ? whole : 0;
  }
}

// Runs body(i, cnt, tag, cy, cx) over the thread's chunks of both sides' n-column slices in
// chunk order, as for_each_chunk, with each chunk read (read_chunks<kOneTest>). The staged whole
// chunks (whole_staged_chunks) go through a loop of their own that reads shared memory without
// the per-chunk staged test (three body instantiations instead of two: the staged loop's, and
// the general loop's whole and partial chunks; bench/RESULTS.md step 65).
// kStagedLoop false (the general path's kernels: a support mask or the path chosen at run time,
// whose code at the register cap grew stack frames with the third body) and the partly staged
// kernels (whole_staged_chunks) keep for_each_chunk's code.
template <bool kOneTest, bool kStagedLoop = true, class Elem, bool kP, class Body>
__device__ __forceinline__ void for_each_chunk_pair(const SliceRef<Elem, kP>& y, const SliceRef<Elem, kP>& x, int n,
                                                    const Body& body) {
  if constexpr (kP || !kStagedLoop) {
    for_each_chunk(n, [&](int i, int cnt, auto whole) {
      RawChunk<Elem> cy, cx;
      read_chunks<kOneTest>(y, x, i, cnt, cy, cx);
      body(i, cnt, whole, cy, cx);
    });
    return;
  }
  const int whole = n / kChunk;
  int i = threadIdx.x;
  const int staged = whole_staged_chunks(y, x, whole);
  for (; i < staged; i += cta_threads()) {
    RawChunk<Elem> cy, cx;
    load_staged(y.s, y.sa, i, cy);
    load_staged(x.s, x.sa, i, cx);
    body(i, kChunk, std::true_type{}, cy, cx);
  }
  for (; i < whole; i += cta_threads()) {
    RawChunk<Elem> cy, cx;
    read_chunks<kOneTest>(y, x, i, kChunk, cy, cx);
    body(i, kChunk, std::true_type{}, cy, cx);
  }
  if (i == whole && n % kChunk != 0) {
    const int cnt = n - whole * kChunk;
    RawChunk<Elem> cy, cx;
    read_chunks<kOneTest>(y, x, i, cnt, cy, cx);
    body(i, cnt, std::false_type{}, cy, cx);
  }
}

// Stages a chunk (shared memory, 16-byte aligned, whole chunk).
template <class Elem>
__device__ __forceinline__ void store_shared_chunk(Elem* dst, const RawChunk<Elem>& c) {
  uint4* d = reinterpret_cast<uint4*>(dst);
#pragma unroll
  for (int i = 0; i < RawChunk<Elem>::kWords; ++i) d[i] = c.w[i];
}

// Pass 1 over the thread's chunks of both sides: their range (row_range.cuh); stages the chunks.
template <class Elem, bool kP>
__device__ __forceinline__ void scan_slices(const SliceRef<Elem, kP>& y, const SliceRef<Elem, kP>& x, int n,
                                            SideRange<Elem>& ry, SideRange<Elem>& rx) {
  const int chunks = (n + kChunk - 1) / kChunk;
  constexpr int kUnroll = kLoadUnroll<Elem>;
  for (int base = threadIdx.x; base < chunks; base += kUnroll * cta_threads()) {
    RawChunk<Elem> cy[kUnroll], cx[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {  // every load first: they are in flight together
      const int i = base + u * cta_threads();
      if (i < chunks) {
        const int cnt = chunk_count(i, n);
        load_raw<Elem, true>(y.g + i * kChunk, cnt, y.vec && cnt == kChunk, cy[u]);
        load_raw<Elem, true>(x.g + i * kChunk, cnt, x.vec && cnt == kChunk, cx[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * cta_threads();
      if (i < chunks) {
        const int cnt = chunk_count(i, n);
        if (y.staged(i)) {  // staged in full 8-column chunks (the slice buffers are rounded up to chunks)
          store_shared_chunk(y.s + i * kChunk, cy[u]);
          store_shared_chunk(x.s + i * kChunk, cx[u]);
        }
        ry.add(cy[u], cnt);
        rx.add(cx[u], cnt);
      }
    }
  }
}

// Pass 1 over a slice staged by the bulk copy engine (whole chunks; process_row): the range of
// the thread's chunks read from shared memory; the slice's partial last chunk, which the engine
// does not copy, is loaded from global memory and staged by its thread. A partly staged
// kernel's chunks past K (kP) are read from global memory here and in every later pass (the
// bulk copy asked the L2 to prefetch them: SliceStream::request_slices).
template <class Elem, bool kP>
__device__ __forceinline__ void scan_bulk_staged(const SliceRef<Elem, kP>& y, const SliceRef<Elem, kP>& x, int n,
                                                 SideRange<Elem>& ry, SideRange<Elem>& rx) {
  if constexpr (!kP) {
    for_each_chunk(n, [&](int i, int cnt, auto whole) {
      RawChunk<Elem> cy, cx;
      if constexpr (decltype(whole)::value) {
        load_staged(y.s, y.sa, i, cy);
        load_staged(x.s, x.sa, i, cx);
        ry.add_whole(cy);
        rx.add_whole(cx);
      } else {
        load_raw<Elem, true>(y.g + i * kChunk, cnt, false, cy);
        load_raw<Elem, true>(x.g + i * kChunk, cnt, false, cx);
        store_shared_chunk(y.s + i * kChunk, cy);
        store_shared_chunk(x.s + i * kChunk, cx);
        ry.add(cy, cnt);
        rx.add(cx, cnt);
      }
    });
  } else {
    // The range does not depend on the order of the chunks: the staged ones in a loop of their
    // own, then the rest.
    const int whole = n / kChunk;
    const int staged = whole < y.k ? whole : y.k;
    int i = threadIdx.x;
    for (; i < staged; i += cta_threads()) {
      RawChunk<Elem> cy, cx;
      load_staged(y.s, y.sa, i, cy);
      load_staged(x.s, x.sa, i, cx);
      ry.add_whole(cy);
      rx.add_whole(cx);
    }
    for (; i < whole; i += cta_threads()) {  // the chunks past K
      RawChunk<Elem> cy, cx;
      load_raw<Elem, true>(y.g + i * kChunk, kChunk, true, cy);
      load_raw<Elem, true>(x.g + i * kChunk, kChunk, true, cx);
      ry.add_whole(cy);
      rx.add_whole(cx);
    }
    if (i == whole && n % kChunk != 0) {  // the partial last chunk, in the thread that owns it
      const int cnt = n - whole * kChunk;
      RawChunk<Elem> cy, cx;
      load_raw<Elem, true>(y.g + i * kChunk, cnt, false, cy);
      load_raw<Elem, true>(x.g + i * kChunk, cnt, false, cx);
      if (y.staged(i)) {
        store_shared_chunk(y.s + i * kChunk, cy);
        store_shared_chunk(x.s + i * kChunk, cx);
      }
      ry.add(cy, cnt);
      rx.add(cx, cnt);
    }
  }
}

__device__ __forceinline__ void copy_bytes(const uint8_t* __restrict__ g, int n, uint8_t* stage) {
  for (int j = threadIdx.x; j < n; j += cta_threads()) stage[j] = g[j];
}

// Writes `value` (rounded once to Elem) to every column of the slice's gradient.
template <class Elem>
__device__ __forceinline__ void fill_slice(Elem* g, int n, bool vec, float value) {
  if (g == nullptr) return;
  RawChunk<Elem> c;
#pragma unroll
  for (int k = 0; k < kChunk; ++k) raw_set<Elem>(c, k, value);
  const int chunks = (n + kChunk - 1) / kChunk;
  for (int i = threadIdx.x; i < chunks; i += cta_threads()) {
    const int cnt = chunk_count(i, n);
    store_raw(g + i * kChunk, cnt, vec && cnt == kChunk, c);
  }
}

}  // namespace divcheck::cuda
