// The row kernel of the logit-level divergences: one thread block cluster of C CTAs x N threads
// (N = 256 or 512, the plan's choice) per position (b, t) at a time (one cluster per position,
// or, forward-only, the clusters the device holds at once looping over the positions and
// prefetching the next one: process_row); CTA c owns the columns [c W, c W + W)
// of the row (W a multiple of the 8-column chunk, plan_math.hpp), and thread t of a CTA owns
// the chunks t, t + N, ...
// of its slice: it loads them (16-byte loads), keeps them, and is the only thread that reads
// them again, so every pass is 16-byte shared-memory reads and float math, and only the row
// statistics cross threads (row_reduce.cuh).
//
// Passes over HBM and what stays on chip, per valid position:
//   staged (the plan fits the slices in shared memory; at the benchmark shapes W x 2 rows is
//   64 KB per CTA for bf16 at V = 128256 (C = 8) and V = 256000 (C = 16) and for f32 at
//   V = 128256 (C = 16): three 256-thread CTAs per SM, so one CTA's loads overlap the others'
//   arithmetic; f32 at V = 256000 would stage 128 KB per CTA with C = 16, one 512-thread CTA per
//   SM, and the automatic plan stages part of each slice instead: partly staged, below):
//     read y and x once into shared memory (aligned rows: one thread asks the bulk copy
//     engine for the slice's whole chunks, bulk_copy.cuh; else each thread stages its chunks),
//     then the scan and every later pass read shared memory; the gradients are written once.
//     HBM traffic = the minimum: 2 V reads (+ V support bytes) and one write per gradient.
//   partly staged (LogitArgs::partial_stage 2 or 3: 16 CTAs x 256 threads, so that two or three
//     CTAs share an SM where whole slices allow only one): the first K chunks of each slice
//     (K a multiple of 32: the staged test is warp-uniform) by the bulk copy engine, the rest
//     read from global memory by every pass, after an L2 prefetch (cp.async.bulk.prefetch.L2)
//     requested with the copy; HBM traffic the minimum while the rest stays in the L2; the
//     summation order is the whole staged plan's (bench/RESULTS.md step 59: f32 4096x256000
//     0.46-0.56 of the copy forward, 0.51-0.70 forward+backward, 1.21-1.46x one CTA per SM).
//     Kernels of their own (kPartial; float32 only: device_types.hpp partly_staged), so that
//     the chunk-index staged test stays out of every other kernel (step 60);
//   not staged (slower fallback, rows too long for the cluster's shared memory):
//     the same passes read global memory: 4 reads of both rows (3 without gradients).
// The passes (each thread over its chunks; statistics combined across the cluster):
//   1. max (NaN-propagating) and min of y and of x, compared as packed bf16/f16 pairs
//      (row_range.cuh): the poison flag (NaN, +inf, or no finite logit: the row is NaN) and
//      whether the row is tame (math::tame_side: finite logits, shifted logits >= -64); tame
//      rows without a support mask (the log-softmax path, or the probability path at T = 1:
//      Columns) take the tame forms of passes 2-4 (no -inf tests, no clamp, no subnormal branch
//      of the exponential, no FLT_MIN fallback: the same values);
//   2. S of each side, the sum of exp((z - m)/T), log S: a float sum in the order below, or,
//      for total variation (Policy::kExactS), the exact, order-independent FixedSum;
//   3. the policy's sums (row_policies.cuh): each chunk's 8 terms summed pairwise, the chunk
//      sums added in chunk order per thread, then the CTA and cluster trees; the loss.
//      KL and cross-entropy on the log-softmax path without a support mask take their sums in
//      pass 2 instead (the one-pass forms of kernels/math/kl.hpp); at T = 1, 2^k or by the
//      reciprocal (one_exchange_row) relative to each thread's own maxima, so right after the
//      scan and without the range exchange:
//      the sums and the range travel in ONE exchange that rescales them to the row's maxima
//      (row_reduce.cuh reduce_one_exchange); no pass 3. Jefferys and Hellinger with gradients on
//      a plain path sum their gradients' one-pass statistics there too (K_p, K_q:
//      JefferysGradOnePass; H_p = H_q: HellingerGradOnePass), and a tame row's pass 4 also sums
//      the loss (write_gradients_and_loss): no pass 3 for those rows either;
//   4. gradients: w g / T (coef of the sequence) times the policy's formula, rounded once
//      into the logits' dtype, written with 16-byte stores where the rows are aligned.
// Summation depth of a row statistic: 3 (chunk) + ceil(W / 8N) (chunks per thread) + 9 (8 for
// N = 256: CTA tree, row_reduce.cuh) + log2 C (cluster tree) <= ceil(V / 2048) + 16 <= sigma(V);
// the one-exchange rows add their rescales (docs/tolerances.md, "One exchange"; the bound is
// checked for every plan by tests/cuda/emulation/plan_math_test.cpp).
// Masked positions: nothing is read; the gradient slices are written as exact +0.
// On chip besides the slices: the reduction records and the mailboxes of the row exchanges
// (cluster_exchange.cuh: pushes and an mbarrier per exchange, no cluster barrier per row; 1.3 KB).
// Forward-only KL and cross-entropy at T = 1, and KL at T = 2^k (defers_row_loss), run an instantiation of their own
// (kDeferred): the one exchange ends with each CTA's message in memory and no CTA waits for its
// cluster; combine_one_pass_rows (one warp per row) finishes the rows after the launch. (Since
// step 55 the automatic plan runs those launches on the streamed kernel, stream_rows_kernel.cuh;
// this instantiation serves a forced cluster size, row grid or unstaged plan, and stream_rows 1.)
// Every other forward-only launch runs the policy LossOnly<Policy> (row_policies.cuh): no pass 4,
// and pass 3 sums only the loss's terms (Jefferys 1 of 5 sums, Hellinger 1 of 3, TV 1 of 7).
// With gradients, a kernel carries only the path set of its launch (kPaths: device_types.hpp
// RowPaths), so that no other path's code shares its register allocation (bench/RESULTS.md
// steps 36 and 37).
// Measured on the H200 at the benchmark shapes (whole launch sequence): see bench/RESULTS.md for
// every row (KL and cross-entropy best, Jensen-Shannon worst; step 66: KL bf16 8192x128256
// forward+backward 0.83 of the copy, cross-entropy 0.84; step 51: KL bf16 forward (before the
// streamed kernel) 0.82-0.86 (across calls), 0.77 forward+backward; f32 0.91 / 0.68; Jefferys
// 0.50 / 0.67; Hellinger 0.44 / 0.56; Jensen-Shannon 0.33 / 0.38, total variation 0.37 / 0.40).
// KL bf16 forward (ncu, step 28): ~24.5 instructions per column, issue slots 67% busy, DRAM 57%,
// barrier stalls 12.5% of the samples (31% before the deferral). The code generated for the whole kernel is
// sensitive to small changes (bench/RESULTS.md steps 15 and 18): compare the SASS (stack frame,
// spills in the loops) before and after any edit here.
// Global row offsets are 64-bit. At T = 1 a specialised copy of the passes skips the
// division by T, at T = 2^k another multiplies by 2^-k (TempForm: the same bits). The __global__ wrapper, which
// declares the shared memory, is in logit_row_kernels.cuh; this header is also compiled by the kernel emulator
// (tests/cuda). The parts, each building on the ones before it: row_kernel_params.cuh (the launch's parameters),
// row_slices.cuh (the slices, the chunk loops, pass 1), row_columns.cuh (a column from two logits),
// row_gradients.cuh (pass 4), row_one_pass_sums.cuh (the thread sums after the scan),
// row_passes.cuh (passes 2-4 with their exchanges), slice_stream.cuh (the bulk staging); this
// file: one position (process_row) and the kernel body (logit_rows_body).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/bulk_copy.cuh"
#include "kernels/cuda/device_types.hpp"
#include "kernels/cuda/element_io.cuh"
#include "kernels/cuda/row_columns.cuh"
#include "kernels/cuda/row_kernel_params.cuh"
#include "kernels/cuda/row_passes.cuh"
#include "kernels/cuda/row_policies.cuh"
#include "kernels/cuda/row_reduce.cuh"
#include "kernels/cuda/row_slices.cuh"
#include "kernels/cuda/slice_stream.cuh"

namespace divcheck::cuda {

// One valid position: the scan (pass 1), then passes 2-4 (row_passes). kCols (Columns):
// log_softmax, no support mask and the log-softmax path (the common case, compiled without those
// tests; staged or not, the same arithmetic): policies with one-pass statistics then skip pass 3,
// and tame rows take the tame forms; probability, no support mask and the probability path at
// T = 1: the same structure as the two-pass rows' (S in the one exchange, then the statistics
// pass), tame rows take its tame forms; general: everything at run time. next: the cluster's next row with data (or -1); with prm.prefetch (forward
// only, so the last pass over the slices precedes the last exchange), thread 0 requests its
// slices as soon as every thread is done with this row's, and the last exchange, the loss and
// the row loop overlap their arrival.
template <class Elem, class Policy, TempForm kT, Columns kCols, bool kDeferred, bool kPartial>
__device__ __forceinline__ void process_row(const RowKernelParams& prm, int64_t row, int64_t next, int64_t v0, int n,
                                            uint8_t* ss, cg::cluster_group& cl, const BlockScratch& sc,
                                            RowExchange& ex, RowShared& rs, SliceStream<Elem>& stream) {
  const int64_t off = row * prm.vocab + v0;
  const Elem* yg = static_cast<const Elem*>(prm.y) + off;
  const Elem* xg = static_cast<const Elem*>(prm.x) + off;
  const uint8_t* sg = prm.support ? prm.support + off : nullptr;
  constexpr bool kNoGradients = kDeferred || kIsLossOnly<Policy>;  // the forward-only instantiations
  Elem* gp = !kNoGradients && prm.gp ? static_cast<Elem*>(prm.gp) + off : nullptr;
  Elem* gq = !kNoGradients && prm.gq ? static_cast<Elem*>(prm.gq) + off : nullptr;
  const bool leader = cl.block_rank() == 0 && threadIdx.x == 0;
  const bool in_vec = aligned16(yg) && aligned16(xg);
  const bool out_vec = (gp == nullptr || aligned16(gp)) && (gq == nullptr || aligned16(gq));
  const StagedBytes staged_size = staged_bytes<Elem, kPartial>(prm, n);
  const unsigned bytes = staged_size.bytes;
  [[maybe_unused]] const unsigned tail = staged_size.tail;
  // (Initialized in place: the same SliceRef returned by a function cost the whole staged
  // kernels' code 104 instructions, step 60.)
  SliceRef<Elem, kPartial> y{yg, prm.staged ? stream.ys : nullptr, in_vec, stream.ys_sa};
  SliceRef<Elem, kPartial> x{xg, prm.staged ? stream.xs : nullptr, in_vec, stream.xs_sa};
  if constexpr (kPartial) {  // the first K chunks (a partly staged kernel's plan is staged)
    y.k = prm.staged ? prm.staged_chunks : 0;
    x.k = y.k;
  }

  // Pass 1 (and staging). Aligned staged rows: the bulk copy engine moves the slices' whole
  // chunks (bulk_copy.cuh; requested here, or ahead: by the previous row, or, the CTA's first
  // row, at the kernel's entry; every read of the previous row's slices is behind a CTA
  // barrier); else each thread loads and stages its chunks.
  SideRange<Elem> ry, rx;
  if (prm.staged && in_vec) {
    if (bytes > 0) {
      if (stream.ahead != row) {
        if (threadIdx.x == 0) {
          if constexpr (kPartial) stream.request(prm, row, v0, bytes, tail);
          else stream.request(prm, row, v0, bytes);
        }
      } else if (prm.counters && leader && !stream.first) {
        atomicAdd(prm.counters + kPrefetchedRowsCounter, 1ull);  // diagnostics: its slices came ahead
      }
      bulk_wait(stream.bar, stream.uses & 1u);
      ++stream.uses;
    }
    scan_bulk_staged(y, x, n, ry, rx);
  } else {
    scan_slices(y, x, n, ry, rx);
  }
  stream.ahead = -1;
  stream.first = false;
  if (prm.staged && sg) copy_bytes(sg, n, ss);
  float range[4];
  ry.result(range[0], range[2]);
  rx.result(range[1], range[3]);
  // The prefetch (prm.prefetch: no gradients, so the hook of the last exchange follows the last
  // pass). The hook captures values only: the reduction that runs it is out of line, and a
  // captured reference would move the caller's state to the stack.
  const bool ahead = prm.prefetch && bytes > 0 && next >= 0 && row_aligned<Elem>(prm, next, v0);
  BulkBarrier* bar = &stream.bar;
  Elem* const ys = stream.ys;
  Elem* const xs = stream.xs;
  const Elem* const yb = static_cast<const Elem*>(prm.y);
  const Elem* const xb = static_cast<const Elem*>(prm.x);
  const int64_t next_off = next * prm.vocab + v0;
  // (A closure per kernel kind: implicit capture is syntactic, so a tail named even in a discarded
  // branch would be a member of every kernel's hook.)
  auto prefetch = [&] {
    if constexpr (kPartial) {
      return [=]() {
        if (ahead) SliceStream<Elem>::request_slices(*bar, ys, xs, yb, xb, next_off, bytes, tail);
      };
    } else {
      return [=]() {
        if (ahead) SliceStream<Elem>::request_slices(*bar, ys, xs, yb, xb, next_off, bytes);
      };
    }
  }();
  ex.make_ready(cl);
  constexpr bool kPlain = kNoSupport<kCols>;
  static_assert(kCols != Columns::probability || kT == TempForm::unit, "the probability path's kernels are T = 1's");
  if constexpr (kPlain && kT != TempForm::any && !Policy::kExactS) {
    const RowSlices<Elem, kPartial> r{y, x, nullptr, n, gp, gq, out_vec, leader, row};
    one_exchange_row<Elem, Policy, kT, kCols, kDeferred>(prm, r, range, cl, sc, ex, rs, prefetch);
  } else {
    // Its barriers also publish the staged support bytes.
    reduce_range(cl, sc, ex.box.range, ex.range_uses++ & 1u, rs, range, temperature_of<kT>(prm));
    if (rs.poison) {
      // Every thread is past the scan, its only read of the slices (the range exchange's barrier):
      // the next row's slices are requested here, as after the last exchange of any other row.
      if (threadIdx.x == 0) prefetch();
      const float nan = __int_as_float(kQuietNaNBits);
      if (leader) prm.row_loss[row] = nan;
      fill_slice(gp, n, out_vec, nan);
      fill_slice(gq, n, out_vec, nan);
    } else {
      const RowSlices<Elem, kPartial> r{y, x, sg ? (prm.staged ? ss : sg) : nullptr, n, gp, gq, out_vec, leader, row};
      if (kPlain && rs.tame && prm.allow_tame) {
        if (prm.counters && leader) atomicAdd(prm.counters + kTameRowsCounter, 1ull);  // diagnostics only
        row_passes<Elem, Policy, kT, kCols, kPlain, false>(prm, r, cl, sc, ex, rs, prefetch);
      } else {
        row_passes<Elem, Policy, kT, kCols, false, false>(prm, r, cl, sc, ex, rs, prefetch);
      }
    }
  }
  if (ahead) stream.ahead = next;
}

// The shared memory of one CTA besides the row slices.
struct RowKernelShared {
  BulkBarrier bar;
  RowMailboxes box;
  RowShared rs;
};
static_assert(sizeof(RowKernelShared) <= kRowStaticSharedMax, "the plan arithmetic assumes at most this much");

// The kernel body (the __global__ wrapper is in logit_row_kernels.cuh; it declares the shared memory
// and passes it in): this CTA's share of every row of the cluster's rows. kDeferred: the kernel
// of forward-only one-exchange launches (defers_row_loss; KL and cross-entropy): only the plain
// T = 1, T = 2^k or reciprocal path, no gradient code, the row's exchange ends in memory
// (combine_one_pass_rows). kPaths: the paths the kernel carries (device_types.hpp row_paths, the
// launcher's choice; a deferred kernel is plain_unit_t, plain_pow2_t or plain_recip_t).
template <class Elem, class Policy, bool kDeferred, RowPaths kPaths, bool kPartial>
__device__ __forceinline__ void logit_rows_body(const RowKernelParams& prm, cg::cluster_group& cl, RowKernelShared& sh,
                                unsigned char* dyn_smem) {
  const unsigned ctas = cl.num_blocks();  // 32-bit: the grid has fewer than 2^31 CTAs
  const int64_t rank = static_cast<int64_t>(cl.block_rank());
  const int64_t v0 = rank * prm.slice;
  const int64_t left = prm.vocab - v0;
  const int n = static_cast<int>(left <= 0 ? 0 : (left < prm.slice ? left : prm.slice));
  // (A partly staged kernel's slice buffers hold its first K chunks: staged_chunks.)
  const int64_t slice_bytes =
      kPartial ? prm.staged_chunks * static_cast<int64_t>(kChunk * sizeof(Elem))
               : (prm.slice * static_cast<int64_t>(sizeof(Elem)) + 15) / 16 * 16;
  // plan_math.hpp dynamic_bytes: the staged slices first (so that their addresses are the
  // dynamic window's start plus the uniform slice size, which the compiler keeps in uniform
  // registers: element_io.cuh load_staged), then the reduction records.
  Elem* ys = reinterpret_cast<Elem*>(dyn_smem);
  Elem* xs = reinterpret_cast<Elem*>(dyn_smem + slice_bytes);
  uint8_t* ss = dyn_smem + 2 * slice_bytes;
  const int64_t support_bytes = prm.support ? (prm.slice + 15) / 16 * 16 : 0;
  const int64_t staged_bytes = prm.staged ? 2 * slice_bytes + support_bytes : 0;
  const BlockScratch sc{reinterpret_cast<float (*)[kRecordFloats]>(dyn_smem + staged_bytes)};

  // The kernels with gradients (one cluster per row: this prologue on every CTA-row) take the
  // cluster index and count from the special registers and request their row's slices first
  // thing (SliceStream::request_first). The forward-only kernels run persistent grids (this
  // prologue once per CTA, every later row prefetched) and keep the divisions and the request in
  // process_row: in their kernels of every path (RowPaths::all) either change alone moved the
  // register allocation of the general paths onto 40-88-byte stack frames.
  constexpr bool kForwardOnlyKernel = kDeferred || kIsLossOnly<Policy>;
  const GridClusters grid = kForwardOnlyKernel ? grid_clusters_by_division(ctas) : grid_clusters(ctas);
  const int64_t clusters = static_cast<int64_t>(grid.count);
  const int64_t first_row = static_cast<int64_t>(grid.index);
  bool first_requested = false;  // (thread 0's)
  if (threadIdx.x == 0) {
    bulk_barrier_init(sh.bar);
    if constexpr (!kForwardOnlyKernel)
      first_requested = SliceStream<Elem>::template request_first<kPartial>(prm, sh.bar, ys, xs, first_row, v0, n);
    mailbox_init(sh.box.range);
    mailbox_init(sh.box.first);
    mailbox_init(sh.box.second);
  }
  __syncthreads();
  cluster_arrive_start();  // its wait comes before the first push (RowExchange::make_ready)
  RowExchange ex{sh.box};
  SliceStream<Elem> stream{sh.bar, ys, xs, shared_address(ys), shared_address(xs)};
  if (first_requested) {
    stream.ahead = first_row;
    stream.first = true;
  }
  const bool unit_t = prm.temperature == 1.0f;  // (kPaths: the launcher's condition)
  const bool plain = !prm.prob_path && prm.support == nullptr;
  for (int64_t row = first_row; row < prm.rows; row += clusters) {
    if (prm.valid && prm.valid[row] == 0) {  // inert: never read, gradients exact +0
      const int64_t off = row * prm.vocab + v0;
      Elem* gp = prm.gp ? static_cast<Elem*>(prm.gp) + off : nullptr;
      Elem* gq = prm.gq ? static_cast<Elem*>(prm.gq) + off : nullptr;
      const bool out_vec = (gp == nullptr || aligned16(gp)) && (gq == nullptr || aligned16(gq));
      fill_slice(gp, n, out_vec, 0.0f);
      fill_slice(gq, n, out_vec, 0.0f);
      continue;  // uniform across the cluster: no exchange, no barrier
    }
    // The cluster's next row with data: only the prefetch asks (forward only). In the forward-only
    // kernels only thread 0 looks (the hook and the request are thread 0's), so only warp 0
    // waits for the loads of the position mask (bench/RESULTS.md step 51); the kernels with
    // gradients, which never prefetch, keep the test they were measured with.
    int64_t next = -1;
    constexpr bool kForwardOnly = kDeferred || kIsLossOnly<Policy>;
    if (prm.prefetch && (!kForwardOnly || threadIdx.x == 0)) {
      next = row + clusters;
      while (next < prm.rows && prm.valid && prm.valid[next] == 0) next += clusters;
      if (next >= prm.rows) next = -1;
    }
    constexpr TempForm kUnit = TempForm::unit, kAny = TempForm::any;
    constexpr Columns kLog = Columns::log_softmax, kGeneral = Columns::general;
    if constexpr (kDeferred) {
      static_assert(Policy::kOnePass > 0, "the deferred exchange is the one-pass rows' single exchange");
      static_assert(kPaths == RowPaths::plain_unit_t || kPaths == RowPaths::plain_pow2_t ||
                        kPaths == RowPaths::plain_recip_t,
                    "the deferred kernels are plain at T = 1, 2^k or by the reciprocal");
      constexpr TempForm kT = kPaths == RowPaths::plain_unit_t   ? kUnit
                              : kPaths == RowPaths::plain_pow2_t ? TempForm::power_of_two
                                                                 : TempForm::reciprocal;
      process_row<Elem, Policy, kT, kLog, true, kPartial>(prm, row, next, v0, n, ss, cl, sc, ex, sh.rs, stream);
    } else if constexpr (kPaths == RowPaths::plain_unit_t) {
      process_row<Elem, Policy, kUnit, kLog, false, kPartial>(prm, row, next, v0, n, ss, cl, sc, ex, sh.rs, stream);
    } else if constexpr (kPaths == RowPaths::plain_pow2_t) {
      process_row<Elem, Policy, TempForm::power_of_two, kLog, false, kPartial>(prm, row, next, v0, n, ss, cl, sc, ex, sh.rs,
                                                                    stream);
    } else if constexpr (kPaths == RowPaths::plain_recip_t) {
      process_row<Elem, Policy, TempForm::reciprocal, kLog, false, kPartial>(prm, row, next, v0, n, ss, cl, sc, ex, sh.rs,
                                                                  stream);
    } else if constexpr (kPaths == RowPaths::plain_scaled_t) {
      process_row<Elem, Policy, kAny, kLog, false, kPartial>(prm, row, next, v0, n, ss, cl, sc, ex, sh.rs, stream);
    } else if constexpr (kPaths == RowPaths::prob_unit_t) {
      process_row<Elem, Policy, kUnit, Columns::probability, false, kPartial>(prm, row, next, v0, n, ss, cl, sc, ex, sh.rs, stream);
    } else if constexpr (kPaths == RowPaths::general) {  // a support mask or the probability path
      if (unit_t) process_row<Elem, Policy, kUnit, kGeneral, false, kPartial>(prm, row, next, v0, n, ss, cl, sc, ex, sh.rs, stream);
      else process_row<Elem, Policy, kAny, kGeneral, false, kPartial>(prm, row, next, v0, n, ss, cl, sc, ex, sh.rs, stream);
    } else if (plain) {  // all: the launch's path, at run time (any T but by division)
      if (unit_t) process_row<Elem, Policy, kUnit, kLog, false, kPartial>(prm, row, next, v0, n, ss, cl, sc, ex, sh.rs, stream);
      else process_row<Elem, Policy, kAny, kLog, false, kPartial>(prm, row, next, v0, n, ss, cl, sc, ex, sh.rs, stream);
    } else {
      if (unit_t) process_row<Elem, Policy, kUnit, kGeneral, false, kPartial>(prm, row, next, v0, n, ss, cl, sc, ex, sh.rs, stream);
      else process_row<Elem, Policy, kAny, kGeneral, false, kPartial>(prm, row, next, v0, n, ss, cl, sc, ex, sh.rs, stream);
    }
    // Every read of this row's slices is done before the next row's copy. (The deferred kernels
    // ran without it, their records in two alternating sets: the other warps then waited for the
    // next row's slices instead of warp 0, no faster: bench/RESULTS.md step 50.)
    __syncthreads();
  }
  ex.make_ready(cl);  // every thread waits once on the start barrier (cluster_exchange.cuh)
}

}  // namespace divcheck::cuda
