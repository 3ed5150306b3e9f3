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
// division by T, at T = 2^k another multiplies by 2^-k (TempForm: the same bits). The __global__ wrapper, which declares the shared memory, is
// in logit_row_kernels.cuh; this header is also compiled by the kernel emulator (tests/cuda).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/bulk_copy.cuh"
#include "kernels/cuda/device_types.hpp"
#include "kernels/cuda/element_io.cuh"
#include "kernels/cuda/row_policies.cuh"
#include "kernels/cuda/row_reduce.cuh"
#include "kernels/cuda/workspace.hpp"
#include "kernels/math/exact_sum.hpp"
#include "kernels/math/softmax.hpp"

namespace divcheck::cuda {

struct RowKernelParams {
  const void* y;                 // p-side logits (B*T, V)
  const void* x;                 // q-side logits
  const uint8_t* valid;          // (B*T) or nullptr
  const uint8_t* support;        // (B*T, V) or nullptr
  int64_t rows, vocab, seq;
  int64_t slice;                 // W: columns per CTA
  float temperature;
  bool prob_path;
  bool staged;
  bool prefetch;                 // forward-only persistent launch: prefetch each next row (process_row)
  bool allow_tame;
  unsigned long long* counters;  // LogitArgs::counters (diagnostics) or nullptr
  RowOptions opt;
  // A partly staged kernel's K (logit_rows_body<..., kPartial>): the chunks of each slice in
  // shared memory. In the 4 bytes of padding after opt: a field that moved every later one
  // changed the code of the whole staged kernels (bench/RESULTS.md step 60).
  int staged_chunks;
  const float* coef;             // per sequence b; nullptr when no gradient is wanted
  void* gp;                      // d/dy or nullptr
  void* gq;                      // d/dx or nullptr
  float* row_loss;               // (B*T) per-position loss (LogitWorkspace::row_loss; its messages follow)
};

// The kernel parameters of a launch (host side; shared with the kernel emulator).
inline RowKernelParams make_row_params(const LogitArgs& a, const LogitPlan& plan, float* row_loss, const float* coef) {
  RowKernelParams prm{};
  prm.y = a.p_logits;
  prm.x = a.q_logits;
  prm.valid = a.valid;
  prm.support = a.support;
  prm.rows = a.batch * a.seq;
  prm.vocab = a.vocab;
  prm.seq = a.seq;
  prm.slice = plan.slice;
  prm.temperature = static_cast<float>(a.temperature);
  prm.prob_path = a.prob_path;
  prm.staged = plan.staged;
  prm.staged_chunks = plan.staged ? static_cast<int>(plan.staged_columns / kChunk) : 0;
  prm.prefetch = plan.persistent && plan.staged && a.grad_p == nullptr && a.grad_q == nullptr;
  prm.allow_tame = a.allow_tame;
  prm.counters = a.counters;
  prm.opt.has_support = a.support != nullptr;
  prm.opt.capped = a.capped;
  prm.opt.max_loss = static_cast<float>(a.max_loss);
  prm.opt.scaling_factor = static_cast<float>(a.scaling_factor);
  prm.coef = coef;
  prm.gp = a.grad_p;
  prm.gq = a.grad_q;
  prm.row_loss = row_loss;
  return prm;
}

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
  if (r.staged(i)) load_staged(r.s, r.sa, i, c);  // staged as whole aligned chunks
  else load_raw<Elem, true>(r.g + i * kChunk, cnt, r.vec && cnt == kChunk, c);
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
__device__ __forceinline__ void scan_slices(const SliceRef<Elem, kP>& y, const SliceRef<Elem, kP>& x, int n, SideRange<Elem>& ry,
                                            SideRange<Elem>& rx) {
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

// How a kernel instantiation forms the columns p_v, lp_v (logit_rows_body picks it from kPaths):
//   log_softmax: no support mask, the log-softmax path (RowPaths plain_*): lp = t - log S;
//   probability: no support mask, the probability path at T = 1 (RowPaths::prob_unit_t):
//                p = exp(t) / S, lp = log p (math::prob_path_from_shifted);
//   general:     a support mask, or either path chosen at run time (prm.prob_path).
// The first two compile without the support tests and take the tame forms on tame rows.
enum class Columns : unsigned char { log_softmax, probability, general };

template <Columns kCols>
inline constexpr bool kNoSupport = kCols != Columns::general;

// The exchange policy of the first exchange of a two-pass row: the policy's GradOnePass where a
// kernel takes it, else S alone (SOnlyExchange, row_reduce.cuh).
template <class Policy, bool kTake>
struct GradOnePassOf {
  using type = SOnlyExchange;
};
template <class Policy>
struct GradOnePassOf<Policy, true> {
  using type = typename Policy::GradOnePass;
};

// One side's row statistics as the column formulas read them: m, 1/S (only where the probability
// path may read it: one division per row and side), log S.
struct SideRow {
  float m, inv_s, log_s;
  float c;  // -log S * log2(e), math::tame_exp2_offset's value: the folded tame forms'
            // (softmax_column_tame_folded, _roots). Written out in side_row: the call, same value, moved
            // the scheduling of 9 other kernels (bench/sass_diff.py, 2026-12-06).
};

template <Columns kCols>
__device__ __forceinline__ SideRow side_row(const RowKernelParams& prm, const RowShared& rs, int side) {
  const bool prob = kCols == Columns::probability || (kCols == Columns::general && prm.prob_path);
  return SideRow{rs.max[side], prob ? 1.0f / rs.s[side] : 0.0f, rs.log_s[side], -rs.log_s[side] * math::kLog2e};
}

// The temperature as the shared formulas see it. At T = 1 the constant lets the compiler drop
// the division in math::shifted_logit: (z - m) / 1 is exactly z - m; at T = 2^k the division is a
// multiplication by 2^-k (math::PowerOfTwoTemperature). The results are the same bits in these
// forms; only the work differs. TempForm::reciprocal multiplies by 1/T rounded (IEEE, once per
// thread: math::ReciprocalTemperature), which is not the division's bits (docs/tolerances.md).
template <TempForm kT>
__device__ __forceinline__ auto temperature_of(const RowKernelParams& prm) {
  if constexpr (kT == TempForm::unit) {
    return 1.0f;
  } else if constexpr (kT == TempForm::power_of_two) {
    // The launcher checked that T is one (row_paths); 2^-k straight from T's exponent bits, with no
    // failure branch, which left the compiler a case 2^-k = 0 to specialise every loop for (two
    // copies of each column loop in the pow2 kernels, 1.3x their code, until step 73).
    return math::power_of_two_temperature_of(prm.temperature);
  } else if constexpr (kT == TempForm::reciprocal) {
    return math::reciprocal_temperature(prm.temperature);  // a normal float (the launcher checked)
  } else {
    return prm.temperature;
  }
}

// The column v of both sides (y_v, x_v as floats). kTame: a tame row on the log-softmax or the
// probability path (math::softmax_column_tame, prob_column_tame: the same values in fewer
// instructions). prob_path: the run-time path of Columns::general. kFold: how a tame log-softmax
// column is formed (row_policies.cuh TameFold: the general form's values, or total variation's
// p, q or squared Hellinger's roots by one fma of the shifted logit, not the same bits); the roots
// form returns a RootedColumn, every other form a Column.
template <Columns kCols, bool kTame, TameFold kFold = TameFold::none, class Temp>
__device__ __forceinline__ auto make_column(float zy, float zx, bool s, const SideRow& py, const SideRow& qx,
                                            Temp temperature, bool prob_path) {
  static_assert(!kTame || kNoSupport<kCols>, "the tame forms are the plain paths'");
  if constexpr (kTame && kFold == TameFold::roots && kCols == Columns::log_softmax) {
    const math::ProbLogRoot a = math::softmax_column_tame_roots(zy, py.m, py.log_s, py.c, temperature);
    const math::ProbLogRoot b = math::softmax_column_tame_roots(zx, qx.m, qx.log_s, qx.c, temperature);
    return RootedColumn{{a.p, a.lp, b.p, b.lp, s}, a.r, b.r};
  } else if constexpr (kTame && kFold == TameFold::probs && kCols == Columns::log_softmax) {
    const math::ProbAndLog a = math::softmax_column_tame_folded(zy, py.m, py.log_s, py.c, temperature);
    const math::ProbAndLog b = math::softmax_column_tame_folded(zx, qx.m, qx.log_s, qx.c, temperature);
    return Column{a.p, a.lp, b.p, b.lp, s};
  } else if constexpr (kTame && kCols == Columns::log_softmax) {
    const math::ProbAndLog a = math::softmax_column_tame(zy, py.m, py.log_s, temperature);
    const math::ProbAndLog b = math::softmax_column_tame(zx, qx.m, qx.log_s, temperature);
    return Column{a.p, a.lp, b.p, b.lp, s};
  } else if constexpr (kTame) {
    const math::ProbAndLog a = math::prob_column_tame(zy, py.m, py.inv_s, temperature);
    const math::ProbAndLog b = math::prob_column_tame(zx, qx.m, qx.inv_s, temperature);
    return Column{a.p, a.lp, b.p, b.lp, s};
  } else {
    const bool prob = kCols == Columns::probability || (kCols == Columns::general && prob_path);  // (as side_row)
    const math::ProbAndLog a = math::softmax_column(zy, py.m, py.inv_s, py.log_s, temperature, prob);
    const math::ProbAndLog b = math::softmax_column(zx, qx.m, qx.inv_s, qx.log_s, temperature, prob);
    return Column{a.p, a.lp, b.p, b.lp, s};
  }
}

// The policy's terms of columns [k0, k0 + W) of a chunk, summed pairwise (W a power of two);
// columns at or past cnt contribute exact +0. kTame: the policy's tame forms (a tame row).
template <class Policy, int W, bool kWhole, bool kTame, class ColumnAt>
__device__ __forceinline__ void pairwise_terms(int k0, int cnt, const ColumnAt& column_at,
                                               float (&out)[Policy::kStats]) {
  if constexpr (W == 1) {
    if (kWhole || k0 < cnt) {
      Policy::template terms<kTame>(column_at(k0), out);
    } else {
#pragma unroll
      for (int s = 0; s < Policy::kStats; ++s) out[s] = 0.0f;
    }
  } else {
    float a[Policy::kStats], b[Policy::kStats];
    pairwise_terms<Policy, W / 2, kWhole, kTame>(k0, cnt, column_at, a);
    pairwise_terms<Policy, W / 2, kWhole, kTame>(k0 + W / 2, cnt, column_at, b);
#pragma unroll
    for (int s = 0; s < Policy::kStats; ++s) out[s] = a[s] + b[s];
  }
}

// The gradients of chunk i of a slice (columns at or past cnt get exact +0; kWhole: all 8 are
// there), rounded once into the logits' dtype: pass 4's work per chunk (write_gradients) and the
// streamed kernel's with gradients (stream_grad_rows_kernel.cuh, chunks held in registers).
// ssrc: the slice's support bytes (read only on the general path) or nullptr.
template <class Elem, class Policy, TempForm kT, Columns kCols, bool kTame, bool kWhole>
__device__ __forceinline__ void gradient_chunk(const RowKernelParams& prm, const RawChunk<Elem>& cy,
                                               const RawChunk<Elem>& cx, const uint8_t* ssrc, int i, int cnt,
                                               const SideRow& py, const SideRow& qx, const float* st, float factor,
                                               RawChunk<Elem>& oy, RawChunk<Elem>& ox) {
  float a[kChunk], b[kChunk];
  if constexpr (kTame && kCols == Columns::log_softmax && kHasTameShiftedGrads<Policy> && kT != TempForm::any) {
    // Tame rows of KL, the temperature KL row and cross-entropy: the gradients from the shifted
    // logits (kl.hpp kl_grads_tame; 3 operations per column fewer, bench/RESULTS.md step 66). The
    // row's constants are loop-invariant: the compiler computes them once per pass. At T = 1,
    // T = 2^k and by the reciprocal (the TempForm::any kernels keep the general forms;
    // their f32 stack frames grew in this step with or without these forms: bench/RESULTS.md
    // step 65).
    const typename Policy::TameGradRow rc = Policy::tame_grad_row(py.log_s, qx.log_s, st, factor);
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      a[k] = 0.0f;
      b[k] = 0.0f;
      if (kWhole || k < cnt) {
        const float ty = math::shifted_logit_tame(raw_get<Elem>(cy, k), py.m, temperature_of<kT>(prm));
        const float tx = math::shifted_logit_tame(raw_get<Elem>(cx, k), qx.m, temperature_of<kT>(prm));
        Policy::grads_tame_shifted(ty, tx, rc, a[k], b[k]);
      }
      if (k & 1) {  // each pair as it is done (fewer live values than packing after the loop)
        raw_set_pair<Elem>(oy, k / 2, a[k - 1], a[k]);
        raw_set_pair<Elem>(ox, k / 2, b[k - 1], b[k]);
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      a[k] = 0.0f;
      b[k] = 0.0f;
      if (kWhole || k < cnt) {
        const bool s = (!kNoSupport<kCols> && ssrc) ? ssrc[i * kChunk + k] != 0 : true;
        const auto c = make_column<kCols, kTame, kTameFoldOf<Policy>>(raw_get<Elem>(cy, k), raw_get<Elem>(cx, k), s, py,
                                                                      qx, temperature_of<kT>(prm), prm.prob_path);
        Policy::template grads<kTame>(c, st, prm.opt, factor, a[k], b[k]);
      }
      if (k & 1) {
        raw_set_pair<Elem>(oy, k / 2, a[k - 1], a[k]);
        raw_set_pair<Elem>(ox, k / 2, b[k - 1], b[k]);
      }
    }
  }
}

// Pass 4: the gradients of the thread's chunks.
template <class Elem, class Policy, TempForm kT, Columns kCols, bool kTame, bool kP>
__device__ __forceinline__ void write_gradients(const RowKernelParams& prm, const SliceRef<Elem, kP>& y, const SliceRef<Elem, kP>& x,
                                const uint8_t* ssrc, int n, const SideRow& py, const SideRow& qx, const float* st,
                                const RowResult& res, Elem* gp, Elem* gq, bool out_vec) {
  if (res.mode != GradMode::values) {
    const float v = res.mode == GradMode::nan ? __int_as_float(kQuietNaNBits) : 0.0f;
    fill_slice(gp, n, out_vec, v);
    fill_slice(gq, n, out_vec, v);
    return;
  }
  int i = threadIdx.x;
  if constexpr (kNoSupport<kCols> && !kP) {
    // Staged slices and aligned gradients (the benchmark's case and training's): the whole chunks
    // of slices staged whole (whole_staged_chunks) in a loop of their own, without the count,
    // staged and alignment tests of the loop below, which then takes the partial last chunk, if
    // any (bench/RESULTS.md step 65).
    if (out_vec) {
      const int staged = whole_staged_chunks(y, x, n / kChunk);
      for (; i < staged; i += cta_threads()) {
        RawChunk<Elem> cy, cx, oy, ox;
        load_staged(y.s, y.sa, i, cy);
        load_staged(x.s, x.sa, i, cx);
        gradient_chunk<Elem, Policy, kT, kCols, kTame, true>(prm, cy, cx, nullptr, i, kChunk, py, qx, st, res.factor,
                                                             oy, ox);
        if (gp) store_raw(gp + i * kChunk, kChunk, true, oy);
        if (gq) store_raw(gq + i * kChunk, kChunk, true, ox);
      }
    }
  }
  // One loop over every chunk with the count test inside (not for_each_chunk: bench/RESULTS.md,
  // step 15).
  const int chunks = (n + kChunk - 1) / kChunk;
  for (; i < chunks; i += cta_threads()) {
    const int cnt = chunk_count(i, n);
    RawChunk<Elem> cy, cx, oy, ox;
    read_chunks<false>(y, x, i, cnt, cy, cx);
    if constexpr (kNoSupport<kCols> && !kP) {
      // One body for every chunk: a partial chunk's missing columns (zero bits, load_raw and
      // the staging) get values too, which no store writes; no support byte is read (step 65).
      // Not in the partly staged kernels, whose f32 code at the 80-register cap spilled with it
      // (masked_jefferys' kernel with gradients: a 24-byte stack frame, 0.92-0.95x).
      gradient_chunk<Elem, Policy, kT, kCols, kTame, true>(prm, cy, cx, ssrc, i, cnt, py, qx, st, res.factor, oy, ox);
    } else if (cnt == kChunk) {
      gradient_chunk<Elem, Policy, kT, kCols, kTame, true>(prm, cy, cx, ssrc, i, cnt, py, qx, st, res.factor, oy, ox);
    } else {
      gradient_chunk<Elem, Policy, kT, kCols, kTame, false>(prm, cy, cx, ssrc, i, cnt, py, qx, st, res.factor, oy, ox);
    }
    if (gp) store_raw(gp + i * kChunk, cnt, out_vec && cnt == kChunk, oy);
    if (gq) store_raw(gq + i * kChunk, cnt, out_vec && cnt == kChunk, ox);
  }
}

// Pass 4 fused with the loss's sum, for a tame row whose gradient statistics came with S
// (Policy::GradOnePass, one_exchange_row): the gradients of the thread's chunks (as
// write_gradients, factor coef: a tame row's loss is finite, so its gradient mode is `values`)
// and the loss's terms (LossOnly<Policy>::terms; pairwise per chunk, the chunk sums in chunk
// order: the statistics pass's order, so the same bits) into acc. A loop of its own, not a flag
// of write_gradients: that merge (tried 2026-12-02) changed the SASS of two kernels that never
// take this path (f32 KL and cross-entropy, RowPaths::general), which the measured binary had not.
template <class Elem, class Policy, TempForm kT, Columns kCols, bool kP>
__device__ __forceinline__ void write_gradients_and_loss(const RowKernelParams& prm, const SliceRef<Elem, kP>& y,
                                                         const SliceRef<Elem, kP>& x, int n, const SideRow& py,
                                                         const SideRow& qx, const float* st, float coef, Elem* gp,
                                                         Elem* gq, bool out_vec, float& acc) {
  static_assert(kNoSupport<kCols> && LossOnly<Policy>::kStats == 1, "a plain path's tame row; one loss sum");
  const int chunks = (n + kChunk - 1) / kChunk;
  for (int i = threadIdx.x; i < chunks; i += cta_threads()) {
    const int cnt = chunk_count(i, n);
    RawChunk<Elem> cy, cx, oy, ox;
    read_chunks<false>(y, x, i, cnt, cy, cx);
    float t[kChunk];
    auto body = [&](auto whole) {
#pragma unroll
      for (int k = 0; k < kChunk; ++k) {
        float a = 0.0f, b = 0.0f;
        t[k] = 0.0f;
        if (decltype(whole)::value || k < cnt) {
          const auto c = make_column<kCols, true, kTameFoldOf<Policy>>(raw_get<Elem>(cy, k), raw_get<Elem>(cx, k), true,
                                                                       py, qx, temperature_of<kT>(prm), false);
          Policy::template grads<true>(c, st, prm.opt, coef, a, b);
          float term[1];
          LossOnly<Policy>::template terms<true>(c, term);
          t[k] = term[0];
        }
        raw_set<Elem>(oy, k, a);
        raw_set<Elem>(ox, k, b);
      }
    };
    if (cnt == kChunk) body(std::true_type{});
    else body(std::false_type{});
    if (gp) store_raw(gp + i * kChunk, cnt, out_vec && cnt == kChunk, oy);
    if (gq) store_raw(gq + i * kChunk, cnt, out_vec && cnt == kChunk, ox);
    acc = acc + (((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7])));  // as pairwise_terms
  }
}

// One side pair of a valid position as the passes after the scan see it.
template <class Elem, bool kP>
struct RowSlices {
  SliceRef<Elem, kP> y, x;
  const uint8_t* ssrc;  // the support bytes (staged or global), or nullptr
  int n;                // columns of this CTA's slice
  Elem* gp;
  Elem* gq;
  bool out_vec;
  bool leader;
  int64_t row;
};

// The one-pass sums of one chunk of both sides relative to maxima m0, m1 (kernels/math/kl.hpp,
// cross_entropy.hpp): the policy's kOnePass sums, then e_y, e_x, each the chunk's 8 terms pairwise
// (columns at or past cnt contribute exact +0; kWhole: all 8 are there). kTame: the chunk is tame
// relative to those maxima (math::tame_side): the tame forms of the exponentials (the same
// values), and the policy's terms as products of two finite factors, summed unscaled with the
// first pairwise level fused (fmaf); one_pass_scale then scales the thread's sum by 2^-64 once
// (math::kl_one_pass_factors_tame has the argument; kTameSumScale: Hellinger's terms, factor 1,
// are summed as they are). One chunk's work for one_pass_sums (the staged and unstaged slices) and
// stream_rows_kernel.cuh (chunks held in registers).
template <class Elem, class Policy, TempForm kT, bool kTame, bool kWhole>
__device__ __forceinline__ void one_pass_chunk(const RowKernelParams& prm, const RawChunk<Elem>& cy,
                                               const RawChunk<Elem>& cx, int cnt, float m0, float m1,
                                               float (&part)[Policy::kOnePass + 2]) {
  constexpr int kP = Policy::kOnePass;
  constexpr int kSums = kP + 2;
  static_assert(!Policy::kExactS, "the one-pass rows sum S in float");
  if constexpr (kTame) {
    float a[kChunk][kP], b[kChunk][kP], ey[kChunk], ex[kChunk];
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      ey[k] = 0.0f;
      ex[k] = 0.0f;
#pragma unroll
      for (int s2 = 0; s2 < kP; ++s2) a[k][s2] = b[k][s2] = 0.0f;
      if (kWhole || k < cnt) {
        if constexpr (kT == TempForm::power_of_two) {
          // T = 2^k folded (math::folds_into_one_pass_sums): d = z - m, exp(t) = 2^(d log2(e) 2^-k),
          // the factors in units of T; one_pass_scale scales by 2^-k.
          static_assert(kTameFactorsLinearInT<Policy>, "T = 2^k folds only factors linear in t");
          const float l2t = math::log2e_over(temperature_of<kT>(prm));
          const float dy = raw_get<Elem>(cy, k) - m0, dx = raw_get<Elem>(cx, k) - m1;
          ey[k] = math::f_exp2_ftz(dy * l2t);
          ex[k] = math::f_exp2_ftz(dx * l2t);
          Policy::one_pass_factors_tame(dy, dx, ey[k], ex[k], a[k], b[k]);
        } else {
          const float ty = math::shifted_logit_tame(raw_get<Elem>(cy, k), m0, temperature_of<kT>(prm));
          const float tx = math::shifted_logit_tame(raw_get<Elem>(cx, k), m1, temperature_of<kT>(prm));
          ey[k] = math::f_softmax_exp_ftz(ty);
          ex[k] = math::f_softmax_exp_ftz(tx);
          Policy::one_pass_factors_tame(ty, tx, ey[k], ex[k], a[k], b[k]);
        }
      }
    }
#pragma unroll
    for (int s2 = 0; s2 < kP; ++s2)  // pairwise; each first-level pair a0 b0 + a1 b1 in one fmaf
      part[s2] = (fmaf(a[0][s2], b[0][s2], a[1][s2] * b[1][s2]) + fmaf(a[2][s2], b[2][s2], a[3][s2] * b[3][s2])) +
                 (fmaf(a[4][s2], b[4][s2], a[5][s2] * b[5][s2]) + fmaf(a[6][s2], b[6][s2], a[7][s2] * b[7][s2]));
    part[kSums - 2] = ((ey[0] + ey[1]) + (ey[2] + ey[3])) + ((ey[4] + ey[5]) + (ey[6] + ey[7]));
    part[kSums - 1] = ((ex[0] + ex[1]) + (ex[2] + ex[3])) + ((ex[4] + ex[5]) + (ex[6] + ex[7]));
  } else {
    float t[kChunk][kSums];
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
#pragma unroll
      for (int s2 = 0; s2 < kSums; ++s2) t[k][s2] = 0.0f;
      if (kWhole || k < cnt) {
        const float ty = math::shifted_logit(raw_get<Elem>(cy, k), m0, temperature_of<kT>(prm));
        const float tx = math::shifted_logit(raw_get<Elem>(cx, k), m1, temperature_of<kT>(prm));
        const float ey = math::f_softmax_exp(ty), ex = math::f_softmax_exp(tx);
        t[k][kSums - 2] = ey;
        t[k][kSums - 1] = ex;
        float one[kP];
        Policy::one_pass_terms(ty, tx, ey, ex, one);
#pragma unroll
        for (int s2 = 0; s2 < kP; ++s2) t[k][s2] = one[s2];
      }
    }
#pragma unroll
    for (int s2 = 0; s2 < kSums; ++s2)  // pairwise, as pairwise_terms
      part[s2] = ((t[0][s2] + t[1][s2]) + (t[2][s2] + t[3][s2])) + ((t[4][s2] + t[5][s2]) + (t[6][s2] + t[7][s2]));
  }
}

// After a thread's chunks: the tame sums' one scaling (one_pass_chunk), at T = 2^k with the 2^-k
// the chunks folded out (2^-(64+k), a normal float: math::folds_into_one_pass_sums).
template <class Policy, bool kTame, TempForm kT>
__device__ __forceinline__ void one_pass_scale(const RowKernelParams& prm, float (&acc)[Policy::kOnePass + 2]) {
  if constexpr (kTame && kT == TempForm::power_of_two) {
    static_assert(kTameSumScale<Policy> == math::kOnePassDown, "2^-(64+k) is normal for k <= 62 only");
    const float scale = kTameSumScale<Policy> * temperature_of<kT>(prm).inverse;
#pragma unroll
    for (int s2 = 0; s2 < Policy::kOnePass; ++s2) acc[s2] = acc[s2] * scale;
  } else if constexpr (kTame && kTameSumScale<Policy> != 1.0f) {
#pragma unroll
    for (int s2 = 0; s2 < Policy::kOnePass; ++s2) acc[s2] = acc[s2] * kTameSumScale<Policy>;
  }
}

// The one-pass sums of the thread's chunks relative to maxima m0, m1 (the thread's own:
// one_exchange_row; the row's: row_passes at T != 1): one_pass_chunk per chunk, the chunk sums
// added in chunk order.
template <class Elem, class Policy, TempForm kT, bool kTame, bool kP>
__device__ __forceinline__ void one_pass_sums(const RowKernelParams& prm, const SliceRef<Elem, kP>& y,
                                              const SliceRef<Elem, kP>& x, int n, float m0, float m1,
                                              float (&acc)[Policy::kOnePass + 2]) {
  constexpr int kSums = Policy::kOnePass + 2;
  for_each_chunk_pair<kIsLossOnly<Policy>>(y, x, n, [&](int, int cnt, auto whole, const RawChunk<Elem>& cy,
                                                        const RawChunk<Elem>& cx) {
    float part[kSums];
    one_pass_chunk<Elem, Policy, kT, kTame, decltype(whole)::value>(prm, cy, cx, cnt, m0, m1, part);
#pragma unroll
    for (int k = 0; k < kSums; ++k) acc[k] = acc[k] + part[k];
  });
  one_pass_scale<Policy, kTame, kT>(prm, acc);
}

// S of each side over the thread's chunks relative to maxima m0, m1 (the thread's own:
// one_exchange_row for the two-pass rows; the row's: row_passes), each chunk's 8 terms pairwise,
// the chunk sums in chunk order. kTame: as one_pass_sums. The terms are the flushing ex2
// (f_softmax_exp_ftz): a flushed term is below 2^-126 against S >= 1. kOneTest: read_chunks'.
template <class Elem, TempForm kT, bool kTame, bool kOneTest, bool kStagedLoop = true, bool kP>
__device__ __forceinline__ void s_sums(const RowKernelParams& prm, const SliceRef<Elem, kP>& y, const SliceRef<Elem, kP>& x,
                                       int n, float m0, float m1, float (&acc)[2]) {
  for_each_chunk_pair<kOneTest, kStagedLoop>(y, x, n, [&](int, int cnt, auto whole, const RawChunk<Elem>& cy,
                                             const RawChunk<Elem>& cx) {
    float ey[kChunk], ex[kChunk];
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      ey[k] = 0.0f;
      ex[k] = 0.0f;
      if (decltype(whole)::value || k < cnt) {
        const float zy = raw_get<Elem>(cy, k), zx = raw_get<Elem>(cx, k);
        if constexpr (kTame) {
          ey[k] = math::f_softmax_exp_ftz(math::shifted_logit_tame(zy, m0, temperature_of<kT>(prm)));
          ex[k] = math::f_softmax_exp_ftz(math::shifted_logit_tame(zx, m1, temperature_of<kT>(prm)));
        } else {  // shifted_logit: a -inf logit is -inf also where the thread's maximum is -inf
          ey[k] = math::f_softmax_exp_ftz(math::shifted_logit(zy, m0, temperature_of<kT>(prm)));
          ex[k] = math::f_softmax_exp_ftz(math::shifted_logit(zx, m1, temperature_of<kT>(prm)));
        }
      }
    }
    acc[0] = acc[0] + (((ey[0] + ey[1]) + (ey[2] + ey[3])) + ((ey[4] + ey[5]) + (ey[6] + ey[7])));
    acc[1] = acc[1] + (((ex[0] + ex[1]) + (ex[2] + ex[3])) + ((ex[4] + ex[5]) + (ex[6] + ex[7])));
  });
}

template <class Elem, class Policy, TempForm kT, Columns kCols, bool kTame, bool kHaveS, class Hook, bool kP>
__device__ __forceinline__ void row_passes(const RowKernelParams& prm, const RowSlices<Elem, kP>& r, cg::cluster_group& cl,
                                           const BlockScratch& sc, RowExchange& ex, RowShared& rs,
                                           const Hook& after_reads);

// The statistics and the result (loss, gradient mode and factor) of an unpoisoned one-pass row
// from its exchanged sums (one_exchange_row; combine_one_pass_rows).
template <class Policy>
__device__ __forceinline__ RowResult one_pass_result(const RowKernelParams& prm, const RowShared& rs, int64_t row,
                                                     float (&st)[Policy::kStats]) {
  Policy::stats_from_one_pass(rs.stats, rs.s[0], rs.log_s[0], rs.s[1], rs.log_s[1], st);
  const float coef = prm.coef ? prm.coef[row / prm.seq] : 0.0f;
  return Policy::finish(st, coef, prm.opt);
}

// A valid position on a plain path at T = 1, T = 2^k or by the reciprocal (no support mask: the log-softmax path, or
// the probability path at T = 1; every policy but total variation, whose S is the exact FixedSum; at any other T the
// division of a zero z - m, once per thread and side here, would take the division's slow path:
// row_passes; at T = 2^k it is a multiplication, math::PowerOfTwoTemperature, and on
// plain_recip_t the product by the reciprocal, math::ReciprocalTemperature),
// after the scan: sums relative to the thread's own maxima, then ONE exchange
// (reduce_one_exchange: the sums with the range, rescaled to the row's maxima). The one-pass rows
// (KL, cross-entropy) send their one-pass sums and S, and the loss and the gradients follow; the
// two-pass rows (Jefferys, Jensen-Shannon, Hellinger; and KL on the probability path) send S alone, then run their statistics
// pass and its exchange (row_passes with kHaveS): two exchanges per row instead of three.
// Tame forms where the thread's chunks are tame (the sums) or the whole row is (the later
// passes). Poison (a NaN or +inf logit, or a side without a finite logit) is known only after
// the exchange: the sums of such a row are discarded. after_reads: the prefetch hook, run by the
// row's last exchange. kCols: log_softmax, or probability (T = 1, RowPaths::prob_unit_t: S alone
// in the exchange, for every policy; the one-pass forms are the log-softmax path's).
template <class Elem, class Policy, TempForm kT, Columns kCols, bool kDeferred, class Hook, bool kP>
__device__ __forceinline__ void one_exchange_row(const RowKernelParams& prm, const RowSlices<Elem, kP>& r,
                                                 const float (&range)[4], cg::cluster_group& cl,
                                                 const BlockScratch& sc, RowExchange& ex, RowShared& rs,
                                                 const Hook& after_reads) {
  static_assert(kNoSupport<kCols>, "one_exchange_row is a plain path's");
  constexpr bool kOnePass = kCols == Columns::log_softmax && Policy::kOnePass > 0;
  static_assert(kOnePass || !kDeferred, "the deferred exchange is the one-pass rows'");
  // Jefferys and Hellinger with gradients (either plain path): the gradients' statistics as
  // one-pass sums with S (kHasGradOnePass; the sums read t, exp(t), S and log S, which both paths
  // form alike).
  constexpr bool kGradOnePass = !kDeferred && kHasGradOnePass<Policy>;
  using GradEx = typename GradOnePassOf<Policy, kGradOnePass>::type;
  constexpr int kSums = kOnePass ? Policy::kOnePass + 2 : GradEx::kOnePass + 2;
  const auto temperature = temperature_of<kT>(prm);
  float acc[kSums];
#pragma unroll
  for (int k = 0; k < kSums; ++k) acc[k] = 0.0f;
  // range: max y, max x, min y, min x of the thread's chunks.
  // (tame_side is false for a NaN or +inf max, and true for a thread without columns.)
  const bool tame = prm.allow_tame && math::tame_side(range[2], range[0], temperature) &&
                    math::tame_side(range[3], range[1], temperature);
  if constexpr (kOnePass) {
    if (tame) one_pass_sums<Elem, Policy, kT, true>(prm, r.y, r.x, r.n, range[0], range[1], acc);
    else one_pass_sums<Elem, Policy, kT, false>(prm, r.y, r.x, r.n, range[0], range[1], acc);
    if constexpr (kDeferred) {  // forward only (defers_row_loss): the message to memory
      float* message = LogitWorkspace::messages_of(prm.row_loss, prm.rows / prm.seq, prm.seq) +
                       (r.row * cl.num_blocks() + cl.block_rank()) * LogitWorkspace::kMessageFloats;
      reduce_one_exchange_to_memory<Policy>(sc, message, acc, range, temperature, after_reads);
      return;
    }
    // Ping-pong between the two statistics mailboxes (reduce_one_exchange). One call site: the
    // reduction is inlined, and two would double its code.
    const bool odd = (ex.first_uses + ex.second_uses) & 1u;
    Mailbox<kStatsWords>& box = odd ? ex.box.second : ex.box.first;
    const unsigned parity = (odd ? ex.second_uses++ : ex.first_uses++) & 1u;
    reduce_one_exchange<Policy>(cl, sc, box, parity, rs, acc, range, temperature, after_reads);
  } else {
    // The two-pass rows, and every policy on the probability path: S alone in this exchange
    // (mailbox `first`), or S with the gradient statistics' one-pass sums (GradEx); the
    // statistics pass and its exchange (`second`, with the prefetch hook) follow in row_passes,
    // or for a tame row with GradEx the gradient pass that also sums the loss. Each mailbox once
    // per row.
    if constexpr (kGradOnePass) {
      if (tame) one_pass_sums<Elem, GradEx, kT, true>(prm, r.y, r.x, r.n, range[0], range[1], acc);
      else one_pass_sums<Elem, GradEx, kT, false>(prm, r.y, r.x, r.n, range[0], range[1], acc);
    } else {
      if (tame) s_sums<Elem, kT, true, kIsLossOnly<Policy>>(prm, r.y, r.x, r.n, range[0], range[1], acc);
      else s_sums<Elem, kT, false, kIsLossOnly<Policy>>(prm, r.y, r.x, r.n, range[0], range[1], acc);
    }
    reduce_one_exchange<GradEx>(cl, sc, ex.box.first, ex.first_uses++ & 1u, rs, acc, range, temperature);
  }
  if (rs.poison) {
    // The two-pass rows' hook belongs to their statistics exchange, which a poisoned row skips:
    // run it here (every thread is past its last read of the slices: the exchange's barrier),
    // so that the next row's slices are requested as process_row records.
    if constexpr (!kOnePass) {
      if (threadIdx.x == 0) after_reads();
    }
    const float nan = __int_as_float(kQuietNaNBits);
    if (r.leader) prm.row_loss[r.row] = nan;
    fill_slice(r.gp, r.n, r.out_vec, nan);
    fill_slice(r.gq, r.n, r.out_vec, nan);
    return;
  }
  const bool row_tame = rs.tame && prm.allow_tame;
  if (row_tame && prm.counters && r.leader) atomicAdd(prm.counters + kTameRowsCounter, 1ull);  // diagnostics only
  if constexpr (kGradOnePass) {
    if (row_tame) {
      // The gradients with the one-pass statistics, and the loss's sum in the same pass; its
      // exchange (mailbox `second`) gives the loss. Other rows: the statistics pass as below
      // (all the policy's statistics), since their loss may decide the gradient mode.
      float st[Policy::kStats];
      GradEx::grad_stats(rs.stats, rs.s[0], rs.log_s[0], rs.s[1], rs.log_s[1], st);
      const float coef = prm.coef ? prm.coef[r.row / prm.seq] : 0.0f;
      float acc_loss[1] = {0.0f};
      write_gradients_and_loss<Elem, Policy, kT, kCols>(prm, r.y, r.x, r.n, side_row<kCols>(prm, rs, 0),
                                                 side_row<kCols>(prm, rs, 1), st, coef, r.gp, r.gq, r.out_vec,
                                                 acc_loss[0]);
      reduce_stats<1, SSum::none>(cl, sc, ex.box.second, ex.second_uses++ & 1u, rs, acc_loss, 0, 0, after_reads);
      st[0] = rs.stats[0];
      if (r.leader) prm.row_loss[r.row] = Policy::finish(st, coef, prm.opt).ell;
    } else {
      row_passes<Elem, Policy, kT, kCols, false, true>(prm, r, cl, sc, ex, rs, after_reads);
    }
  } else if constexpr (!kOnePass) {
    if (row_tame) row_passes<Elem, Policy, kT, kCols, true, true>(prm, r, cl, sc, ex, rs, after_reads);
    else row_passes<Elem, Policy, kT, kCols, false, true>(prm, r, cl, sc, ex, rs, after_reads);
  } else {
    float st[Policy::kStats];
    const RowResult res = one_pass_result<Policy>(prm, rs, r.row, st);
    if (r.leader) prm.row_loss[r.row] = res.ell;
    if (r.gp || r.gq) {
      const SideRow py = side_row<kCols>(prm, rs, 0);
      const SideRow qx = side_row<kCols>(prm, rs, 1);
      if (row_tame)
        write_gradients<Elem, Policy, kT, kCols, true>(prm, r.y, r.x, nullptr, r.n, py, qx, st, res, r.gp, r.gq, r.out_vec);
      else
        write_gradients<Elem, Policy, kT, kCols, false>(prm, r.y, r.x, nullptr, r.n, py, qx, st, res, r.gp, r.gq, r.out_vec);
    }
  }
}

// The rows of a forward-only launch of the one-exchange rows (defers_row_loss), after
// the row kernel: one warp per valid row; lane r takes CTA r's message, the lanes combine them as
// the mailbox exchange does (one_exchange_combine: the same order, the same bits) and lane 0
// writes the row's loss as one_exchange_row would (NaN for a poisoned row) and counts the tame
// rows (diagnostics, in the place of the row kernel). ctas: the plan's cluster size, or for the
// streamed rows (stream_rows_kernel.cuh) the power of two >= their tiles per row: the messages'
// stride per row and the width of the tree; present (<= ctas): the messages a row has (the cluster
// size, or the tiles; lanes from present to ctas add the identity: zero sums, which the rescale
// keeps zero). kT: the row kernel's (unit, power_of_two or reciprocal: the deferred kernels'
// temperature forms).
template <class Policy, TempForm kT>
__device__ __forceinline__ void combine_one_pass_rows_body(const RowKernelParams& prm, unsigned ctas,
                                                           unsigned present_ctas) {
  const unsigned lane = threadIdx.x & 31u;
  const int64_t warps_per_block = static_cast<int64_t>(blockDim.x >> 5);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * warps_per_block;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * warps_per_block + (threadIdx.x >> 5); row < prm.rows;
       row += stride) {
    if (prm.valid && prm.valid[row] == 0) continue;  // masked: no messages, no loss (as the row kernel)
    const bool present = lane < present_ctas;
    const float* m = LogitWorkspace::messages_of(prm.row_loss, prm.rows / prm.seq, prm.seq) +
                     (row * ctas + (present ? lane : 0u)) * LogitWorkspace::kMessageFloats;
    float v[8];
    message_or_identity(m, present, v);
    RowShared rs{};  // lane 0 writes and reads it
    one_exchange_combine<Policy>(v, ctas, temperature_of<kT>(prm), rs);
    if (lane == 0) {
      if (rs.poison) {
        prm.row_loss[row] = __int_as_float(kQuietNaNBits);
      } else {
        if (rs.tame && prm.allow_tame && prm.counters) atomicAdd(prm.counters + kTameRowsCounter, 1ull);
        float st[Policy::kStats];
        prm.row_loss[row] = one_pass_result<Policy>(prm, rs, row, st).ell;
      }
    }
  }
}

// Passes 2-4 of a valid, unpoisoned position. kTame: the row is tame (math::tame_side; only on
// the paths without a support mask, kNoSupport): the passes take the *_tame forms, which give the
// same values.
// after_reads: run by thread 0 once every thread has finished its last pass over the slices
// of a row without gradients (reduce_stats; the prefetch of process_row).
template <class Elem, class Policy, TempForm kT, Columns kCols, bool kTame, bool kHaveS, class Hook, bool kP>
__device__ __forceinline__ void row_passes(const RowKernelParams& prm, const RowSlices<Elem, kP>& r, cg::cluster_group& cl,
                                           const BlockScratch& sc, RowExchange& ex, RowShared& rs,
                                           const Hook& after_reads) {
  const SliceRef<Elem, kP>& y = r.y;
  const SliceRef<Elem, kP>& x = r.x;
  const uint8_t* ssrc = r.ssrc;
  const int n = r.n;
  float st[Policy::kStats];
  constexpr bool kOnePassRow = kCols == Columns::log_softmax && Policy::kOnePass > 0;
  static_assert(!(kOnePassRow && kT != TempForm::any), "the one-pass rows at T = 1, 2^k or by the reciprocal take one_exchange_row");
  if constexpr (kHaveS) {
    // S came with the range (one_exchange_row: the two-pass rows at T = 1, 2^k or by the reciprocal): no pass 2.
  } else if constexpr (kOnePassRow) {
    // T != 1: pass 2 with the one-pass statistics relative to the row's maxima (the range
    // exchange came first). one_exchange_row's sums relative to each thread's own maxima would
    // divide a zero z - m once per thread and side, and a zero dividend takes the IEEE
    // division's slow path (FCHK and a call; bench/RESULTS.md, steps 22 and 23).
    constexpr int kSums = Policy::kOnePass + 2;
    float acc[kSums];
#pragma unroll
    for (int k = 0; k < kSums; ++k) acc[k] = 0.0f;
    one_pass_sums<Elem, Policy, kT, kTame>(prm, y, x, n, rs.max[0], rs.max[1], acc);
    reduce_stats<kSums, SSum::floats>(cl, sc, ex.box.first, ex.first_uses++ & 1u, rs, acc, 0, 0, after_reads);
    Policy::stats_from_one_pass(rs.stats, rs.s[0], rs.log_s[0], rs.s[1], rs.log_s[1], st);
  } else if constexpr (Policy::kExactS) {
    // Pass 2: S = sum exp(t_v) of each side, exactly (each thread's terms in a plain 64-bit
    // integer: fewer than 2^24 of them, so no carry until the merge).
    const float m0 = rs.max[0], m1 = rs.max[1];
    uint64_t ly = 0, lx = 0;
    for_each_chunk_pair<kIsLossOnly<Policy>, kNoSupport<kCols>>(y, x, n, [&](int, int cnt, auto whole,
                                                                             const RawChunk<Elem>& cy,
                                                                             const RawChunk<Elem>& cx) {
#pragma unroll
      for (int k = 0; k < kChunk; ++k) {
        if (decltype(whole)::value || k < cnt) {
          ly += math::fixed_term(math::softmax_term(raw_get<Elem>(cy, k), m0, temperature_of<kT>(prm)));
          lx += math::fixed_term(math::softmax_term(raw_get<Elem>(cx, k), m1, temperature_of<kT>(prm)));
        }
      }
    });
    reduce_stats<0, SSum::fixed>(cl, sc, ex.box.first, ex.first_uses++ & 1u, rs, nullptr, ly, lx);
  } else {
    // Pass 2: S = sum exp(t_v) of each side as float sums in the kernel's order (s_sums: each
    // chunk's 8 terms pairwise, the chunk sums in chunk order; then the CTA and cluster trees),
    // relative to the row's maxima.
    float acc[2] = {0.0f, 0.0f};
    s_sums<Elem, kT, kTame, kIsLossOnly<Policy>, kNoSupport<kCols>>(prm, y, x, n, rs.max[0], rs.max[1], acc);
    reduce_stats<2, SSum::floats>(cl, sc, ex.box.first, ex.first_uses++ & 1u, rs, acc);
  }
  const SideRow py = side_row<kCols>(prm, rs, 0);
  const SideRow qx = side_row<kCols>(prm, rs, 1);

  if constexpr (!kOnePassRow) {
    // Pass 3: the policy's sums (pairwise inside a chunk, chunk sums in chunk order).
    float acc[Policy::kStats];
#pragma unroll
    for (int k = 0; k < Policy::kStats; ++k) acc[k] = 0.0f;
    for_each_chunk_pair<kIsLossOnly<Policy>, kNoSupport<kCols>>(
        y, x, n, [&](int i, int cnt, auto whole, const RawChunk<Elem>& cy, const RawChunk<Elem>& cx) {
          auto column_at = [&](int k) {
            return make_column<kCols, kTame, kTameFoldOf<Policy>>(
                raw_get<Elem>(cy, k), raw_get<Elem>(cx, k),
                (!kNoSupport<kCols> && ssrc) ? ssrc[i * kChunk + k] != 0 : true, py, qx, temperature_of<kT>(prm),
                prm.prob_path);
          };
          float part[Policy::kStats];
          pairwise_terms<Policy, kChunk, decltype(whole)::value, kTame>(0, cnt, column_at, part);
#pragma unroll
          for (int k = 0; k < Policy::kStats; ++k) acc[k] = acc[k] + part[k];
        });
    reduce_stats<Policy::kStats, SSum::none>(cl, sc, ex.box.second, ex.second_uses++ & 1u, rs, acc, 0, 0, after_reads);
#pragma unroll
    for (int k = 0; k < Policy::kStats; ++k) st[k] = rs.stats[k];
  }
  const float coef = prm.coef ? prm.coef[r.row / prm.seq] : 0.0f;
  const RowResult res = Policy::finish(st, coef, prm.opt);
  if (r.leader) prm.row_loss[r.row] = res.ell;

  // Pass 4 (none in the loss-only kernels: LossOnly has no gradient formulas).
  if constexpr (!kIsLossOnly<Policy>) {
    if (r.gp || r.gq)
      write_gradients<Elem, Policy, kT, kCols, kTame>(prm, y, x, ssrc, n, py, qx, st, res, r.gp, r.gq,
                                                           r.out_vec);
  }
}

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
  __device__ static __forceinline__ bool request_first(const RowKernelParams& prm, BulkBarrier& bar, Elem* ys,
                                                       Elem* xs, int64_t row, int64_t v0, int n) {
    if (!prm.staged || row >= prm.rows || (prm.valid && prm.valid[row] == 0) || !row_aligned<Elem>(prm, row, v0))
      return false;
    const StagedBytes b = staged_bytes<Elem, kPartial>(prm, n);
    if (b.bytes == 0) return false;
    request_slices(bar, ys, xs, static_cast<const Elem*>(prm.y), static_cast<const Elem*>(prm.x),
                   row * prm.vocab + v0, b.bytes, b.tail);
    return true;
  }
  // Thread 0: requests the staged whole chunks (bytes) of this CTA's slices of `row`, and asks
  // the L2 to prefetch the whole chunks after them (tail bytes: a partly staged kernel's, which
  // every pass reads from global memory; 0 in every other kernel).
  __device__ __forceinline__ void request(const RowKernelParams& prm, int64_t row, int64_t v0, unsigned bytes,
                                          unsigned tail = 0) {
    request_slices(bar, ys, xs, static_cast<const Elem*>(prm.y), static_cast<const Elem*>(prm.x),
                   row * prm.vocab + v0, bytes, tail);
  }
  __device__ static __forceinline__ void request_slices(BulkBarrier& bar, Elem* ys, Elem* xs, const Elem* y,
                                                        const Elem* x, int64_t off, unsigned bytes,
                                                        unsigned tail = 0) {
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
