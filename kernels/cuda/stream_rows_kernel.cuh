// The streamed row kernel of forward-only KL and cross-entropy (defers_row_loss: the log-softmax
// path without a support mask, KL and cross-entropy at T = 1, KL at T = 2^k), and of the Jefferys
// rows' forward there at T = 1 and 2^k and on the probability path at T = 1 (masked_jefferys'
// default), and of squared Hellinger's forward there at T = 1 (centred_forward_launch:
// JefferysCentredPolicy, HellingerCentredPolicy, whose
// one-pass sums are centred records, merged where KL's sums are added; tame rows only, the others
// go to the cluster kernel after the combine, logit_launch.cu launch_centred_fallback): no thread block
// cluster, no shared-memory staging, no exchange between CTAs. Each CTA takes one tile of one row
// (columns [j W, j W + W) of row r, the plan's `slice` W = G groups of N x R x 8 columns,
// stream_plan.hpp: R = kStreamChunks chunks per thread, 4 for 16-bit and 2 for float, so that a
// group is 32 registers of row data per thread; G = 4 by default). Per group each thread loads its
// R chunks of both sides into registers at once (chunks t, t + N, ... of the group: coalesced
// 16-byte loads, all in flight together), takes their range, then the one-pass sums relative to
// its own maxima (one_pass_chunk, the cluster kernel's chunk code), and merges that partial into
// its running one (rescale_partial). The CTA's message (sums relative to the CTA's maxima, and its
// range: row_reduce.cuh one_exchange_cta_message, one CTA barrier) goes to memory, and
// combine_one_pass_rows finishes every row after the launch as for the deferred cluster kernel:
// the same messages, the same combine (the tiles in the place of a cluster's CTAs, at most
// kMaxStreamTiles = 32 per row).
//
// Passes over HBM and what stays on chip: each input read once (no staging; the columns of a
// tile short of a whole group, and unaligned rows, take the unstaged passes, whose second read
// comes from the caches); on chip only the thread's chunks of one group (registers) and the warp
// records of the CTA stage. The messages (32 bytes per tile and row) are written once and read
// once by the combine (0.1% of the input bytes at the benchmark shapes).
// Why a kernel of its own (bench/RESULTS.md step 55): the cluster kernel's deferred forward spent
// 28% of its time fixed per CTA and row (the wait for the whole slice before the scan, the
// end-of-row barrier, thread 0's next-row search), which three 64 KB CTAs per SM could not hide
// (the f32 4096x256000 plan holds one 128 KB CTA per SM: 0.68 of the copy); here a CTA waits only
// for its own group's loads, and the SM holds three (16-bit, 80 registers) or two (float, 64)
// at different phases.
// Measured (H200, step 55, forward of the benchmark shapes): f32 1.00-1.05 of the copy (64 registers),
// bf16 0.88-0.97 (80 registers; at 64 the group loop spilled and ran 0.71-0.83): bench/RESULTS.md.
// The centred forwards (steps 79-81, an H100 only so far, 2026-12-08): f32 1.02-1.03 of the copy;
// bf16 Jefferys rows 0.76-0.79 before step 81's held centres (+3.5-4.0%; ~20 instructions per column,
// spills at 80 registers), Hellinger 0.85-0.88.
// Summation depth of a row statistic: 3 (chunk) + R (the group's chunks in order) + 3 (G - 1)
// (each merge: a rescale of two levels and an addition) + the warp stage (2 + 5), the CTA stage
// (2 + log2 of N/32 warps) and the combine's tree over the tiles (2 + log2 of the tiles): within
// sigma(V) for every streamed plan (tests/cuda/emulation/plan_math_test.cpp).
// Masked positions: nothing is read, no message (the combine skips them). A poisoned tile
// (NaN or +inf logit) carries it in its range; the combine makes the row's loss NaN.
// This header is also compiled by the kernel emulator (tests/cuda/emulation).
#pragma once

#include "kernels/cuda/logit_rows_kernel.cuh"
#include "kernels/cuda/stream_plan.hpp"

namespace divcheck::cuda {

template <class Elem>
inline constexpr int kStreamChunks = stream_chunks(sizeof(Elem));  // stream_plan.hpp

// One group's partial of the thread: words 0-3 its sums relative to its own maxima (the policy's
// one-pass sums, S_y, S_x; exact zeros past them), words 4-7 its range (max y, max x, min y,
// min x), as the messages of row_reduce.cuh. A whole, aligned group (stream_group_fast): the
// thread's R whole chunks (t, t + N, ... of the group) loaded into registers at once and read
// from there (one_pass_chunk, the chunks in order). Any other columns (stream_group_slow: a
// tile's last columns short of a whole group, an unaligned row): the cluster kernel's unstaged
// passes over the thread's chunks (scan_slices, one_pass_sums: global memory, the second read
// from the caches).
template <class Policy>
__device__ __forceinline__ void to_partial(const float (&acc)[Policy::kOnePass + 2], const float (&range)[4],
                                           float (&v)[8]) {
#pragma unroll
  for (int k = 0; k < 4; ++k) v[k] = k < Policy::kOnePass + 2 ? acc[k] : 0.0f;
#pragma unroll
  for (int k = 0; k < 4; ++k) v[4 + k] = range[k];
}

template <class Elem, class Policy, TempForm kT>
__device__ __forceinline__ void stream_group_fast(const RowKernelParams& prm, const Elem* yg, const Elem* xg,
                                                  float (&v)[8]) {
  constexpr int R = kStreamChunks<Elem>;
  constexpr int kSums = Policy::kOnePass + 2;
  const auto temperature = temperature_of<kT>(prm);
  RawChunk<Elem> cy[R], cx[R];
#pragma unroll
  for (int u = 0; u < R; ++u) {  // every load first: they are in flight together
    const int i = threadIdx.x + u * cta_threads();
    load_raw<Elem, true>(yg + i * kChunk, kChunk, true, cy[u]);
    load_raw<Elem, true>(xg + i * kChunk, kChunk, true, cx[u]);
  }
  SideRange<Elem> ry, rx;
#pragma unroll
  for (int u = 0; u < R; ++u) {
    ry.add_whole(cy[u]);
    rx.add_whole(cx[u]);
  }
  float range[4], acc[kSums], part[kSums];
  ry.result(range[0], range[2]);
  rx.result(range[1], range[3]);
#pragma unroll
  for (int k = 0; k < kSums; ++k) acc[k] = 0.0f;
  // (tame_side is false for a NaN or +inf max.)
  if (prm.allow_tame && math::tame_side(range[2], range[0], temperature) &&
      math::tame_side(range[3], range[1], temperature)) {
    if constexpr (kHoldsCentres<Policy>) {
      // Centred records whose policy holds the centres: the chunks' and the running record's are
      // kept, not recomputed in every merge (the same bits; bench/RESULTS.md step 81).
      typename Policy::Centre crun{}, cpart{};
#pragma unroll
      for (int u = 0; u < R; ++u) {
        float ty[kChunk], tx[kChunk];
#pragma unroll
        for (int k = 0; k < kChunk; ++k) {
          ty[k] = math::shifted_logit_tame(raw_get<Elem>(cy[u], k), range[0], temperature);
          tx[k] = math::shifted_logit_tame(raw_get<Elem>(cx[u], k), range[1], temperature);
        }
        Policy::template centred_chunk<kChunk, true>(ty, tx, kChunk, part, cpart);
        Policy::merge_records(acc, crun, part, cpart);
      }
    } else {
#pragma unroll
      for (int u = 0; u < R; ++u) {
        one_pass_chunk<Elem, Policy, kT, true, true>(prm, cy[u], cx[u], kChunk, range[0], range[1], part);
        merge_one_pass_sums<Policy>(acc, part);
      }
    }
    one_pass_scale<Policy, true, kT>(prm, acc);
  } else {
#pragma unroll
    for (int u = 0; u < R; ++u) {
      one_pass_chunk<Elem, Policy, kT, false, true>(prm, cy[u], cx[u], kChunk, range[0], range[1], part);
      merge_one_pass_sums<Policy>(acc, part);
    }
  }
  to_partial<Policy>(acc, range, v);
}

template <class Elem, class Policy, TempForm kT>
__device__ __forceinline__ void stream_group_slow(const RowKernelParams& prm, const Elem* yg, const Elem* xg, int n,
                                                  float (&v)[8]) {
  const auto temperature = temperature_of<kT>(prm);
  const bool vec = aligned16(yg) && aligned16(xg);
  const SliceRef<Elem> y{yg, nullptr, vec, 0u}, x{xg, nullptr, vec, 0u};
  SideRange<Elem> ry, rx;
  scan_slices(y, x, n, ry, rx);
  float range[4], acc[Policy::kOnePass + 2];
  ry.result(range[0], range[2]);
  rx.result(range[1], range[3]);
#pragma unroll
  for (int k = 0; k < Policy::kOnePass + 2; ++k) acc[k] = 0.0f;
  // (tame_side is false for a NaN or +inf max, and true for a thread without columns.)
  if (prm.allow_tame && math::tame_side(range[2], range[0], temperature) &&
      math::tame_side(range[3], range[1], temperature))
    one_pass_sums<Elem, Policy, kT, true>(prm, y, x, n, range[0], range[1], acc);
  else
    one_pass_sums<Elem, Policy, kT, false>(prm, y, x, n, range[0], range[1], acc);
  to_partial<Policy>(acc, range, v);
}

// run += part: both partials moved to their common maxima (rescale_partial, as every stage of
// the one exchange) and added; the range combined. One rescale (two levels for the policy sums)
// and one addition per merge.
template <class Policy, class Temp>
__device__ __forceinline__ void merge_partial(float (&run)[8], float (&part)[8], Temp temperature) {
  float r[4] = {run[4], run[5], run[6], run[7]};
  const float o[4] = {part[4], part[5], part[6], part[7]};
  RangeCombine{}(r, o);
  rescale_partial<Policy>(run, r[0], r[1], temperature);
  rescale_partial<Policy>(part, r[0], r[1], temperature);
  merge_one_pass_sums<Policy>(run, part);
#pragma unroll
  for (int k = 0; k < 4; ++k) run[4 + k] = r[k];
}

// The thread's partial of one tile (n columns at yg, xg): its groups of N x R whole chunks in
// column order, each a partial of its own merged into the running one (so the thread sums G x R
// chunks per tile while holding only R in registers, and the warp and CTA stages of the tile's
// message run once per G groups: bench/RESULTS.md step 55), then the columns short of a whole
// group. The split depends only on (V, the plan, the rows' alignment): deterministic.
template <class Elem, class Policy, TempForm kT>
__device__ __forceinline__ void stream_tile(const RowKernelParams& prm, const Elem* yg, const Elem* xg, int n,
                                            float (&run)[8]) {
  const auto temperature = temperature_of<kT>(prm);
  const int group = cta_threads() * kStreamChunks<Elem> * kChunk;
  bool first = true;
  int g0 = 0;
  if (aligned16(yg) && aligned16(xg)) {
#pragma unroll 1
    for (; g0 + group <= n; g0 += group) {
      float part[8];
      stream_group_fast<Elem, Policy, kT>(prm, yg + g0, xg + g0, part);
      if (first) {
#pragma unroll
        for (int k = 0; k < 8; ++k) run[k] = part[k];
      } else {
        merge_partial<Policy>(run, part, temperature);
      }
      first = false;
    }
  }
  if (g0 < n) {
    float part[8];
    stream_group_slow<Elem, Policy, kT>(prm, yg + g0, xg + g0, n - g0, part);
    if (first) {
#pragma unroll
      for (int k = 0; k < 8; ++k) run[k] = part[k];
    } else {
      merge_partial<Policy>(run, part, temperature);
    }
  }
}

// A streamed item, tile `tile` of row `row` (items row-major: item = row x tiles + tile): its n
// columns (the row's last tile may be shorter) at global offset `off`.
struct StreamItem {
  int64_t row, tile, off;
  int n;
};
__device__ __forceinline__ StreamItem stream_item(const RowKernelParams& prm, int64_t item, unsigned tiles) {
  StreamItem it;
  it.row = item / tiles;
  it.tile = item - it.row * tiles;
  const int64_t v0 = it.tile * prm.slice;
  const int64_t left = prm.vocab - v0;
  it.n = static_cast<int>(left < prm.slice ? left : prm.slice);  // >= 1: tiles = ceil(V / W)
  it.off = it.row * prm.vocab + v0;
  return it;
}

// The kernel body: tiles `tiles` per row, their messages at stride `stride` (a power of two >=
// tiles, the combine's tree width) per row; rec: the CTA's warp records (static shared memory of
// the __global__ wrapper, stream_row_kernels.cu). kT: unit, power_of_two or reciprocal (the deferred forms).
template <class Elem, class Policy, TempForm kT>
__device__ __forceinline__ void stream_rows_body(const RowKernelParams& prm, unsigned tiles, unsigned stride,
                                                 float (*rec)[kRecordFloats]) {
  static_assert(Policy::kOnePass > 0 && kT != TempForm::any, "the streamed rows are the deferred one-pass rows");
  const BlockScratch sc{rec};
  const int64_t items = prm.rows * static_cast<int64_t>(tiles);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const StreamItem it = stream_item(prm, item, tiles);
    if (prm.valid && prm.valid[it.row] == 0) continue;  // uniform across the CTA: no read, no message
    float run[8];
    stream_tile<Elem, Policy, kT>(prm, static_cast<const Elem*>(prm.y) + it.off,
                                  static_cast<const Elem*>(prm.x) + it.off, it.n, run);
    const float acc[4] = {run[0], run[1], run[2], run[3]};
    const float range[4] = {run[4], run[5], run[6], run[7]};
    float* message = LogitWorkspace::messages_of(prm.row_loss, prm.rows / prm.seq, prm.seq) +
                     (it.row * stride + it.tile) * LogitWorkspace::kMessageFloats;
    reduce_one_exchange_to_memory<Policy>(sc, message, acc, range, temperature_of<kT>(prm));
    __syncthreads();  // warp 0 has read the records before the CTA's next tile writes them
  }
}

}  // namespace divcheck::cuda
