// The streamed row kernel of KL and cross-entropy WITH gradients (the one-pass rows' launches on
// the log-softmax path without a support mask, at T = 1, and KL at T = 2^k: one_pass_row_launch,
// device_types.hpp): no thread block cluster, no shared-memory staging, and no CTA waits for the
// data it is about to read. A (row, tile) item is a tile of G groups of N x R x 8 columns, as in
// the forward-only streamed kernel (stream_rows_kernel.cuh); a cooperative grid of the CTAs the
// device holds takes the items in row-major order, CTA b the items b, b + grid, ... Per step a
// CTA runs
//   A (its new item): each thread loads its chunks of both sides (a group at a time, all in
//     flight), sums the one-pass terms relative to its own maxima (stream_tile, the forward
//     kernel's code), the CTA's message goes to memory (reduce_one_exchange_to_memory), and
//     thread 0 counts it in the row's arrivals (a release);
//   B (its item of the previous step): thread 0 waits until the row's arrivals reach its tiles
//     (relaxed polls, then one acquire; the row's other tiles went to the next CTAs one step
//     ago, so the design expected no wait: measured, there often was one), warp 0 combines the row's messages (one_exchange_combine: the order and the bits of
//     combine_one_pass_rows), the CTA of tile 0 writes the row's loss, and the CTA reads its tile
//     again, meant to come from L2 (since phase A the grid read one tile per CTA and wrote as
//     many gradient bytes; measured: mostly it did not, see below), and writes its gradients once
//     (streaming stores).
// The design's bet: the wait for a row's statistics, which the cluster kernel pays per CTA-row
// (the exchange's barrier and the wait for the row's slices: ~20% of its stall samples,
// bench/RESULTS.md "Reading the misses"), would be over before it is asked for.
//
// Passes over HBM: each input read once in phase A and once more in phase B (meant from L2;
// measured, mostly from HBM again); each gradient written once. On chip: half a group's chunks per thread in phase B, a group's in
// phase A (registers), the CTA's warp records and the row's statistics (shared memory).
// Determinism: every tile of a row combines the same messages in the same tree (lanes >= tiles
// add the identity), so the row's statistics, loss and gradients are the same bits whichever CTA
// ran which item and whenever. No float atomics.
// Summation depth: the forward-only streamed kernel's at the same G (stream_depth; its loss is
// that kernel's bits at the same G).
// Masked positions: nothing is read; phase A writes the tile's gradients as exact +0, and the row
// has no message, no arrival and no phase B. A poisoned row (NaN or +inf logit, or a side without
// a finite logit) gets a NaN loss and NaN gradients, as in one_exchange_row.
// Measured (H200, bench/RESULTS.md step 56): 0.48-0.58 of the copy at the benchmark shapes, 0.72-0.93x
// of the cluster kernel's speed, so a launch takes it only where stream_rows 2 forces it. ncu (bf16
// KL): most phase-B reads missed L2 (DRAM traffic ~1.55x the minimum: a grid step moves 25-50 MB),
// and phase B often waited for its row (~96 polls per item; 15% of the stall samples at the
// barriers behind the wait).
// This header is also compiled by the kernel emulator (tests/cuda/emulation), which runs the
// whole grid's CTAs concurrently, as the cooperative launch does.
#pragma once

#if !defined(__CUDA_ARCH__)
#include <thread>
#endif

#include "kernels/cuda/stream_rows_kernel.cuh"

namespace divcheck::cuda {

// The row's arrivals: thread 0 of a CTA counts its message (release: the message store before
// it is visible to whoever acquires the count), and thread 0 of a phase B waits for the count.
__device__ __forceinline__ void arrive_release(unsigned* count) {
#if defined(__CUDA_ARCH__)
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(count) : "memory");
#else
  __atomic_fetch_add(count, 1u, __ATOMIC_RELEASE);  // the emulator (g++)
#endif
}

__device__ __forceinline__ unsigned load_acquire(unsigned* count) {
#if defined(__CUDA_ARCH__)
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count) : "memory");
  return v;
#else
  return __atomic_load_n(count, __ATOMIC_ACQUIRE);
#endif
}

__device__ __forceinline__ unsigned load_relaxed(unsigned* count) {
#if defined(__CUDA_ARCH__)
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count) : "memory");
  return v;
#else
  return __atomic_load_n(count, __ATOMIC_RELAXED);
#endif
}

// Polls with relaxed loads, then one acquire load (an acquire load is a load and an L1
// invalidation, CCTL.IVALL: polled, it ran 6.3 million times in one forward+backward launch and
// invalidated the SM's L1 for its other CTAs each time, bench/RESULTS.md step 56). The count only
// grows, so the acquire reads `tiles` from the release sequence of the row's arrivals.
__device__ __forceinline__ void wait_arrivals(unsigned* count, unsigned tiles) {
  while (load_relaxed(count) < tiles) {
#if defined(__CUDA_ARCH__)
    __nanosleep(64);
#else
    std::this_thread::yield();
#endif
  }
  (void)load_acquire(count);
}

// The shared state of a CTA of this kernel besides its warp records (uniform values, kept out of
// the registers that phase A and phase B need for row data).
struct StreamGradShared {
  RowShared rs;                // the row statistics of phase B (lane 0 of warp 0 writes them)
  StreamItem prev;             // the item awaiting its phase B (thread 0 writes it)
};

// Chunks per side that phase B holds at once: half a group's (16 registers of row data), which
// with the gradient formulas' temporaries fits the register cap; the reads hit L2.
template <class Elem>
inline constexpr int kGradHold = kStreamChunks<Elem> / 2;

// Phase B's gradients of one whole, aligned group (n >= N x R x 8 columns from yg, xg): the
// thread's R chunks of both sides, kGradHold at a time loaded together (from L2), then each
// chunk's gradients (gradient_chunk, the cluster kernel's) stored with 16-byte streaming stores.
template <class Elem, class Policy, TempForm kT, bool kTame>
__device__ __forceinline__ void stream_grad_group_fast(const RowKernelParams& prm, const Elem* yg, const Elem* xg,
                                                       Elem* gp, Elem* gq, const SideRow& py, const SideRow& qx,
                                                       const float* st, float factor) {
  constexpr int R = kStreamChunks<Elem>, H = kGradHold<Elem>;
#pragma unroll
  for (int h = 0; h < R; h += H) {
    RawChunk<Elem> cy[H], cx[H];
#pragma unroll
    for (int u = 0; u < H; ++u) {
      const int i = threadIdx.x + (h + u) * cta_threads();
      load_raw<Elem, true>(yg + i * kChunk, kChunk, true, cy[u]);
      load_raw<Elem, true>(xg + i * kChunk, kChunk, true, cx[u]);
    }
#pragma unroll
    for (int u = 0; u < H; ++u) {
      const int i = threadIdx.x + (h + u) * cta_threads();
      RawChunk<Elem> oy, ox;
      gradient_chunk<Elem, Policy, kT, Columns::log_softmax, kTame, true>(prm, cy[u], cx[u], nullptr, 0, kChunk, py,
                                                                          qx, st, factor, oy, ox);
      if (gp) store_raw(gp + i * kChunk, kChunk, true, oy);
      if (gq) store_raw(gq + i * kChunk, kChunk, true, ox);
    }
  }
}

// Phase B's gradients of a tile (n columns): its whole groups where the rows and gradients are
// 16-byte aligned, the rest by pass 4 of the cluster kernel (write_gradients over global memory).
template <class Elem, class Policy, TempForm kT, bool kTame>
__device__ __forceinline__ void stream_grad_tile(const RowKernelParams& prm, const Elem* yg, const Elem* xg, Elem* gp,
                                                 Elem* gq, int n, const SideRow& py, const SideRow& qx,
                                                 const float* st, const RowResult& res) {
  const bool out_vec = gradients_aligned16(gp, gq);
  const bool vec = aligned16(yg) && aligned16(xg);
  int g0 = 0;
  if (res.mode == GradMode::values && vec && out_vec) {
    const int group = cta_threads() * kStreamChunks<Elem> * kChunk;
#pragma unroll 1
    for (; g0 + group <= n; g0 += group)
      stream_grad_group_fast<Elem, Policy, kT, kTame>(prm, yg + g0, xg + g0, gp ? gp + g0 : nullptr,
                                                      gq ? gq + g0 : nullptr, py, qx, st, res.factor);
  }
  if (g0 < n) {
    const SliceRef<Elem> y{yg + g0, nullptr, vec, 0u}, x{xg + g0, nullptr, vec, 0u};
    write_gradients<Elem, Policy, kT, Columns::log_softmax, kTame>(prm, y, x, nullptr, n - g0, py, qx, st, res,
                                                                   gp ? gp + g0 : nullptr, gq ? gq + g0 : nullptr,
                                                                   out_vec);
  }
}


template <class Elem>
__device__ __forceinline__ Elem* grad_at(void* g, int64_t off) {
  return g ? static_cast<Elem*>(g) + off : nullptr;
}

// Phase A of a valid item: the tile's message to memory, then its arrival.
template <class Elem, class Policy, TempForm kT>
__device__ __forceinline__ void stream_grad_phase_a(const RowKernelParams& prm, const StreamItem& it, unsigned stride,
                                                    const BlockScratch& sc, unsigned* arrivals) {
  float run[8];
  stream_tile<Elem, Policy, kT>(prm, static_cast<const Elem*>(prm.y) + it.off, static_cast<const Elem*>(prm.x) + it.off,
                                it.n, run);
  const float acc[4] = {run[0], run[1], run[2], run[3]};
  const float range[4] = {run[4], run[5], run[6], run[7]};
  float* message = LogitWorkspace::messages_of(prm.row_loss, prm.rows / prm.seq, prm.seq) +
                   (it.row * stride + it.tile) * LogitWorkspace::kMessageFloats;
  reduce_one_exchange_to_memory<Policy>(sc, message, acc, range, temperature_of<kT>(prm));
  if (threadIdx.x == 0) arrive_release(arrivals + it.row);  // after thread 0's store of the message
}

// Phase B of a valid item: the row's statistics from every tile's message, the loss (tile 0),
// the tile's gradients.
template <class Elem, class Policy, TempForm kT>
__device__ __forceinline__ void stream_grad_phase_b(const RowKernelParams& prm, const StreamItem& it, unsigned tiles,
                                                    unsigned stride, unsigned* arrivals, RowShared& rs) {
  if (threadIdx.x == 0) wait_arrivals(arrivals + it.row, tiles);
  __syncthreads();  // (thread 0's acquire, then the CTA barrier: every thread sees the messages)
  if (threadIdx.x < 32) {
    const unsigned lane = threadIdx.x;
    const bool present = lane < tiles;
    const float* m = LogitWorkspace::messages_of(prm.row_loss, prm.rows / prm.seq, prm.seq) +
                     (it.row * stride + (present ? lane : 0u)) * LogitWorkspace::kMessageFloats;
    // L2 reads (written by other CTAs during this launch; never cached in L1 before).
    const float4 a = __ldcg(reinterpret_cast<const float4*>(m));
    const float4 b = __ldcg(reinterpret_cast<const float4*>(m) + 1);
    const float w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    float v[8];
    message_or_identity(w, present, v);
    one_exchange_combine<Policy>(v, stride, temperature_of<kT>(prm), rs);
  }
  __syncthreads();
  const bool leader = it.tile == 0 && threadIdx.x == 0;
  Elem* gp = grad_at<Elem>(prm.gp, it.off);
  Elem* gq = grad_at<Elem>(prm.gq, it.off);
  if (rs.poison) {
    const float nan = __int_as_float(kQuietNaNBits);
    if (leader) prm.row_loss[it.row] = nan;
    const bool out_vec = gradients_aligned16(gp, gq);
    fill_slice(gp, it.n, out_vec, nan);
    fill_slice(gq, it.n, out_vec, nan);
    return;
  }
  const bool row_tame = rs.tame && prm.allow_tame;
  if (row_tame && prm.counters && leader) atomicAdd(prm.counters + kTameRowsCounter, 1ull);  // diagnostics only
  float st[Policy::kStats];
  const RowResult res = one_pass_result<Policy>(prm, rs, it.row, st);
  if (leader) prm.row_loss[it.row] = res.ell;
  const SideRow py = side_row<Columns::log_softmax>(prm, rs, 0);
  const SideRow qx = side_row<Columns::log_softmax>(prm, rs, 1);
  const auto* yg = static_cast<const Elem*>(prm.y) + it.off;
  const auto* xg = static_cast<const Elem*>(prm.x) + it.off;
  if (row_tame) stream_grad_tile<Elem, Policy, kT, true>(prm, yg, xg, gp, gq, it.n, py, qx, st, res);
  else stream_grad_tile<Elem, Policy, kT, false>(prm, yg, xg, gp, gq, it.n, py, qx, st, res);
}

// The kernel body: CTA b takes the items (row, tile) b, b + grid, b + 2 grid, ... (row-major
// item order), phase A of each as it comes, then phase B of the one before. arrivals: (rows)
// zero at launch. rec, sh: the CTA's shared memory (the __global__ wrapper's,
// stream_grad_row_kernels.cu).
// Forward progress (the launch is cooperative: every CTA of the grid is resident): phase B of
// item j waits for phase A of the items of its row, j' < j + tiles; CTA j' mod grid runs A(j')
// right after its phase B of item j' - 2 grid, which waits only for items below
// j' - 2 grid + tiles <= j + 2 (tiles - 1 - grid): each wait is on strictly earlier items as long
// as 2 grid > tiles - 1, which the launcher checks (stream_grad_grid_ok; at most 32 tiles against
// hundreds of CTAs).
template <class Elem, class Policy, TempForm kT>
__device__ __forceinline__ void stream_grad_rows_body(const RowKernelParams& prm, unsigned tiles, unsigned stride,
                                                      unsigned* arrivals, float (*rec)[kRecordFloats],
                                                      StreamGradShared& sh) {
  static_assert(Policy::kOnePass > 0 && kT != TempForm::any, "the streamed rows are the one-pass rows");
  const BlockScratch sc{rec};
  const auto items = static_cast<unsigned long long>(prm.rows) * tiles;
  bool pending = false;  // the CTA's previous item (sh.prev) awaits its phase B
  for (unsigned long long item = blockIdx.x;; item += gridDim.x) {
    const bool more = item < items;
    StreamItem cur{};
    bool valid = false;
    if (more) {
      cur = stream_item(prm, static_cast<int64_t>(item), tiles);
      valid = !(prm.valid && prm.valid[cur.row] == 0);  // uniform across the CTA
      if (valid) {
        stream_grad_phase_a<Elem, Policy, kT>(prm, cur, stride, sc, arrivals);
      } else {
        const bool out_vec = gradients_aligned16(grad_at<Elem>(prm.gp, cur.off), grad_at<Elem>(prm.gq, cur.off));
        fill_slice(grad_at<Elem>(prm.gp, cur.off), cur.n, out_vec, 0.0f);
        fill_slice(grad_at<Elem>(prm.gq, cur.off), cur.n, out_vec, 0.0f);
      }
    }
    __syncthreads();  // warp 0 has read the records (phase A) before anything writes them again
    if (pending) {
      const StreamItem prev = sh.prev;
      stream_grad_phase_b<Elem, Policy, kT>(prm, prev, tiles, stride, arrivals, sh.rs);
    }
    if (!more) break;
    pending = valid;
    if (threadIdx.x == 0) sh.prev = cur;
    __syncthreads();  // sh.prev written; every thread is past its reads of sh.rs
  }
}

}  // namespace divcheck::cuda
