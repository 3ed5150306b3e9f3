// Row reductions of the logit kernel: inside a CTA of 128, 256 or 512 threads and across the
// CTAs of a thread block cluster, all in a fixed order, no atomics.
//
// Inside the CTA every warp at once combines its 32 lanes by the butterfly of reduction_order.hpp's
// warp tree (offsets 16..1, 5 levels; lane 0's value is the tree's, and every lane ends with the
// same bits: IEEE addition is commutative), and lane 0 writes the warp's result as one record to
// shared memory (BlockScratch, the first records); after a CTA barrier lane w of warp 0 takes
// warp w's record (exact zeros, or the identity, past the last warp) and the 32 lanes combine
// them by the same butterfly. (Until step 24 warp 0 alone combined every thread's record, 8 or
// 16 per lane, while the other warps waited at the barrier behind the exchange: 31% of KL's stall
// samples, bench/RESULTS.md.) Lane r of warp 0 pushes the CTA's result into the mailbox of CTA r
// (cluster_exchange.cuh); after the mailbox's phase completes, lane r of warp 0 holds CTA r's
// result and the lanes combine them by a pairwise tree over the CTA rank (offsets C/2..1), the
// same in every CTA, so every CTA holds bitwise the same row statistic.
//   * float sums: depth 5 + log2(N / 32) + log2 C = log2 N + log2 C (a tree over lanes or warps
//     that hold no columns adds exact zeros);
//   * max (NaN-propagating) and min: exact in any order;
//   * FixedSum (math/exact_sum.hpp; S of total variation): integer, exact in any order.
#pragma once

#include <cooperative_groups.h>

#include "kernels/cuda/cluster_exchange.cuh"
#include "kernels/cuda/lane_order_sum.cuh"
#include "kernels/cuda/plan_math.hpp"
#include "kernels/cuda/row_range.cuh"
#include "kernels/math/exact_sum.hpp"
#include "kernels/math/hd.hpp"
#include "kernels/math/reduction_order.hpp"
#include "kernels/math/softmax.hpp"

namespace divcheck::cuda {

namespace cg = cooperative_groups;

inline constexpr int kMaxWarps = kRowThreadsMax / 32;  // 16
inline constexpr int kMaxStats = 7;                      // total_variation: |p - q| and six class masses
static_assert(kMaxStats <= kRecordFloats, "a record holds every statistic");

// The CTA's threads (a plan's choice: 256 or 512, plan_math.hpp).
__device__ __forceinline__ int cta_threads() { return static_cast<int>(blockDim.x); }

// Per-CTA scratch of the reductions: one record per thread (at the start of the dynamic shared
// memory, plan_math.hpp dynamic_bytes).
struct BlockScratch {
  float (*rec)[kRecordFloats];
};

// The mailboxes of a CTA (cluster_exchange.cuh), used in this order per row: the range (max y,
// max x, min y, min x), the first statistics exchange (S of both sides, with the one-pass sums),
// the second (the policy's sums of the two-pass rows).
inline constexpr int kStatsWords = 2;  // 8 words: two FixedSums (6) and 2 sums, or up to 8 sums
struct RowMailboxes {
  Mailbox<1> range;
  Mailbox<kStatsWords> first;
  Mailbox<kStatsWords> second;
};

// The row statistics every CTA of the cluster ends up with (bitwise equal in all of them).
struct RowShared {
  float max[2];
  int poison;
  bool tame;       // both sides tame (math::tame_side): the passes take the *_tame forms
  float s[2];      // S of each side (FixedSum value)
  float log_s[2];
  float stats[kMaxStats];
};

// Combines the 32 lanes' values by a butterfly (exact, order-free combines: max, min).
template <int N, class Combine>
__device__ __forceinline__ void xor_tree(float (&r)[N], const Combine& combine) {
#pragma unroll
  for (int offset = 16; offset >= 1; offset >>= 1) {
    float o[N];
#pragma unroll
    for (int k = 0; k < N; ++k) o[k] = __shfl_xor_sync(0xffffffffu, r[k], offset);
    combine(r, o);
  }
}

__device__ __forceinline__ float bits_float(uint32_t b) { return __uint_as_float(b); }
__device__ __forceinline__ uint32_t float_bits(float f) { return __float_as_uint(f); }

template <int N>
__device__ __forceinline__ void get_record(const BlockScratch& sc, int thread, float (&v)[N]) {
  const float4* s = reinterpret_cast<const float4*>(sc.rec[thread]);
#pragma unroll
  for (int i = 0; i < N / 4; ++i) {
    const float4 w = s[i];
    v[4 * i] = w.x;
    v[4 * i + 1] = w.y;
    v[4 * i + 2] = w.z;
    v[4 * i + 3] = w.w;
  }
}

// One thread's view of the kernel's mailboxes (cluster_exchange.cuh): the CTA's mailboxes and
// how often this thread has used each (the parity of the next phase), the same in every thread.
struct RowExchange {
  RowMailboxes& box;
  unsigned range_uses = 0, first_uses = 0, second_uses = 0;
  bool ready = false;  // past the start barrier of the cluster (cluster_exchange.cuh)
  __device__ __forceinline__ void make_ready(cg::cluster_group& cl) {
    if (!ready) {
      cluster_wait_start(cl);
      ready = true;
    }
  }
};

// Combines two ranges (max y, max x, min y, min x): NaN-propagating max, min; exact in any order.
struct RangeCombine {
  __device__ __forceinline__ void operator()(float (&r)[4], const float (&o)[4]) const {
    r[0] = max_nan(r[0], o[0]);
    r[1] = max_nan(r[1], o[1]);
    r[2] = fminf(r[2], o[2]);
    r[3] = fminf(r[3], o[3]);
  }
};

// The row's range (max y, max x, min y, min x) into the row statistics: the maxima, the poison
// flag (a NaN max fails every comparison: poison) and whether both sides are tame.
template <class Temp>
__device__ __forceinline__ void publish_range(RowShared& rs, const float (&r)[4], Temp temperature) {
  const float m0 = r[0], m1 = r[1];
  rs.poison = (m0 > -math::kInf && m0 < math::kInf && m1 > -math::kInf && m1 < math::kInf) ? 0 : 1;
  rs.tame = rs.poison == 0 && math::tame_side(r[2], m0, temperature) && math::tame_side(r[3], m1, temperature);
  rs.max[0] = m0;
  rs.max[1] = m1;
}

// The range of each side's logits over the cluster: max (NaN-propagating) and min. Gives the
// row's maxima, the poison flag (docs/semantics.md rule 1: a NaN or +inf logit, or a side with
// no finite logit) and whether both sides are tame (math::tame_side).
// Every thread must have passed RowExchange::make_ready. parity: of the mailbox's phase (its
// uses so far, mod 2; by value, so that the reductions, which the compiler keeps out of line,
// leave the caller's counters in registers).
template <class Temp>
__device__ inline void reduce_range(cg::cluster_group& cl, const BlockScratch& sc, Mailbox<1>& box, unsigned parity,
                                    RowShared& rs, const float (&range)[4], Temp temperature) {
  const RangeCombine combine;
  constexpr float kIdentity[4] = {-math::kInf, -math::kInf, math::kInf, math::kInf};
  const int lane = threadIdx.x & 31;
  {  // every warp at once: its range (every lane), written by lane 0 as the warp's record
    float w[4] = {range[0], range[1], range[2], range[3]};
    xor_tree(w, combine);
    if (lane == 0) reinterpret_cast<float4*>(sc.rec[threadIdx.x >> 5])[0] = make_float4(w[0], w[1], w[2], w[3]);
  }
  __syncthreads();
  const unsigned ctas = cl.num_blocks(), rank = cl.block_rank();
  if (threadIdx.x < 32) {  // the CTA's range from the warps' (every lane of warp 0), pushed to every CTA
    float r[4] = {kIdentity[0], kIdentity[1], kIdentity[2], kIdentity[3]};
    if (lane < (cta_threads() >> 5)) {
      const float4 w = reinterpret_cast<const float4*>(sc.rec[lane])[0];
      r[0] = w.x;
      r[1] = w.y;
      r[2] = w.z;
      r[3] = w.w;
    }
    xor_tree(r, combine);
    if (lane == 0) mailbox_arm(box, ctas);
    if (static_cast<unsigned>(lane) < ctas) {
      const uint4 msg[1] = {make_uint4(float_bits(r[0]), float_bits(r[1]), float_bits(r[2]), float_bits(r[3]))};
      mailbox_push(cl, box, rank, static_cast<unsigned>(lane), msg);
    }
  }
  mailbox_wait(cl, box, parity);
  if (threadIdx.x < 32) {  // the C ranges, one per lane, combined (exact in any order)
    float r[4] = {kIdentity[0], kIdentity[1], kIdentity[2], kIdentity[3]};
    if (static_cast<unsigned>(lane) < ctas) {
      const uint4 w = box.from[lane][0];
      r[0] = bits_float(w.x);
      r[1] = bits_float(w.y);
      r[2] = bits_float(w.z);
      r[3] = bits_float(w.w);
    }
    xor_tree(r, combine);
    if (lane == 0) publish_range(rs, r, temperature);
  }
  __syncthreads();
}

// Merges the FixedSums of the 32 lanes (exact, any order): every lane holds the total.
__device__ __forceinline__ void xor_merge_fixed(math::FixedSum& f) {
#pragma unroll
  for (int offset = 16; offset >= 1; offset >>= 1) {
    math::FixedSum o;
    o.lo = __shfl_xor_sync(0xffffffffu, f.lo, offset);
    o.hi = __shfl_xor_sync(0xffffffffu, f.hi, offset);
    f.merge(o);
  }
}

// A hook that does nothing (reduce_stats, reduce_one_exchange).
struct NoHook {
  __device__ __forceinline__ void operator()() const {}
};

// The single exchange of the one-pass rows (KL, cross-entropy and their temperature variants on
// the log-softmax path without a support mask; row_passes.cuh one_exchange_row): every
// thread summed its chunks relative to its own maxima (m_y, m_x of its chunks), so no row
// maximum is needed before the sums, and the range travels with them in one exchange instead of
// two (the wait at each exchange for the cluster's slowest CTA was 29% of KL bf16 forward's stall
// samples, bench/RESULTS.md step 21).
// acc: the policy's K - 2 one-pass sums, then S_y, S_x (K <= 4); range: the thread's max y,
// max x, min y, min x. A partial (sums relative to maxima m) moves to larger maxima M by
// rescale_partial: f = exp((m - M)/T) per side (math::shifted_logit, f_softmax_exp; exactly 1
// where m = M), S' = S f, and the policy's sums by Policy::rescale_one_pass (kernels/math:
// e_y (t_y - t_x) with t relative to M is e'_y f (t'_y - t'_x + d_y - d_x)).
// Order: every warp at once rescales its lanes' sums to the warp's maxima (its range by the xor
// tree: exact) and adds them by the warp tree; lane w of warp 0 then takes warp w's record,
// the lanes find the CTA's range, rescale to it and add by the warp tree (lanes past the last
// warp hold exact zeros); lane r pushes the CTA's message (its sums relative to the CTA's
// maxima, and its range) to CTA r; after the wait lane r takes CTA r's message, the lanes
// combine the ranges (the row's maxima, minima, poison and tame flags as reduce_range), rescale
// their message to the row's maxima and add the C messages by the pairwise tree over the rank.
// Depth of a row sum: the thread's (chunk pairwise 3, chunks in order), then per stage (warp,
// CTA, cluster) one rescale product (two for the policy sums: the shift and the factor) and the
// stage's tree (docs/semantics.md, "Summation order"). All warps work on their own records at
// once: warp 0 alone, reading and rescaling 8 or 16 records per lane, made the CTAs wait at the
// barrier after the exchange for 31% of the stall samples (bench/RESULTS.md, step 22).
// mailbox: `first` and `second` alternate by row (ping-pong): CTA A pushes into B's mailbox X
// for a row only after it received B's message of the previous row (mailbox Y), which B sent
// after it had read X for the row before that; so a slot is never overwritten before its reader
// is done, and no phase receives bytes of the next (cluster_exchange.cuh).
// The exchange policy of an exchange that carries S alone (the two-pass rows; every policy on the
// probability path): reduce_one_exchange reads only kOnePass (and rescale_one_pass where it is > 0).
struct SOnlyExchange {
  static constexpr int kOnePass = 0;
};

// The warp's combination of the one-pass sums v[0..K) (K = kOnePass + 2) in every lane: the warp
// tree of sums (warp_tree_sum), or for centred records the same butterfly with merges
// (Policy::merge_records: math::jefferys_merge and math::hellinger_merge are symmetric bit for
// bit, so every lane holds the same record).
template <class Policy>
__device__ __forceinline__ void warp_tree_combine(float* v) {
  constexpr int K = Policy::kOnePass + 2;
  if constexpr (kCentredRecords<Policy>) {
#pragma unroll
    for (int offset = 16; offset >= 1; offset >>= 1) {
      float o[K];
#pragma unroll
      for (int k = 0; k < K; ++k) o[k] = __shfl_xor_sync(0xffffffffu, v[k], offset);
      merge_one_pass_sums<Policy>(v, o);
    }
  } else {
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = warp_tree_sum(v[k]);
  }
}

template <class Policy, class Temp>
__device__ __forceinline__ void rescale_partial(float (&v)[8], float my, float mx, Temp temperature) {
  constexpr int K = Policy::kOnePass + 2;
  const float dy = math::shifted_logit(v[4], my, temperature);  // <= 0; -inf for an empty part
  const float dx = math::shifted_logit(v[5], mx, temperature);
  const float fy = math::f_softmax_exp(dy), fx = math::f_softmax_exp(dx);
  if constexpr (Policy::kOnePass > 0) {  // (the two-pass rows send S alone)
    float a[Policy::kOnePass];
#pragma unroll
    for (int k = 0; k < Policy::kOnePass; ++k) a[k] = v[k];
    Policy::rescale_one_pass(a, v[K - 2], fy, dy, dx, v[K - 1], fx);
#pragma unroll
    for (int k = 0; k < Policy::kOnePass; ++k) v[k] = a[k];
  }
  v[K - 2] = v[K - 2] * fy;
  v[K - 1] = v[K - 1] * fx;
}

// The first two stages of the one exchange: every warp at once, then warp 0 (the CTA stage). In
// warp 0 every lane returns the CTA's message: words 0-3 its sums relative to the CTA's maxima
// (exact zeros past the policy's K), words 4-7 its range. after_reads runs in thread 0 right
// after the barrier behind which no thread reads the row's slices any more.
template <class Policy, class Hook, class Temp>
__device__ __forceinline__ void one_exchange_cta_message(const BlockScratch& sc, const float* acc,
                                                         const float (&range)[4], Temp temperature,
                                                         const Hook& after_reads, float (&msg)[8]) {
  constexpr int K = Policy::kOnePass + 2;
  static_assert(K <= 4 && kRecordFloats == 8 && 4 * kStatsWords == 8, "sums in words 0-3, the range in 4-7");
  const RangeCombine range_combine;
  constexpr float kIdentity[4] = {-math::kInf, -math::kInf, math::kInf, math::kInf};
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  {
    // Every warp at once: its range (every lane), its lanes' sums rescaled to the warp's maxima
    // and added by the warp tree; lane 0 writes the warp's record (sums, range).
    float v[8];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = k < K ? acc[k] : 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) v[4 + k] = range[k];
    float wr[4] = {range[0], range[1], range[2], range[3]};
    xor_tree(wr, range_combine);
    rescale_partial<Policy>(v, wr[0], wr[1], temperature);
    warp_tree_combine<Policy>(v);
#pragma unroll
    for (int k = 0; k < 4; ++k) v[4 + k] = wr[k];
    if (lane == 0) {
      float4* d = reinterpret_cast<float4*>(sc.rec[warp]);
      d[0] = make_float4(v[0], v[1], v[2], v[3]);
      d[1] = make_float4(v[4], v[5], v[6], v[7]);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) after_reads();
  if (threadIdx.x < 32) {
    // Lane w: warp w's record; the CTA's range (every lane), the records rescaled to its maxima
    // and added by the warp tree (the lanes past the last warp add exact zeros).
    const int warps = cta_threads() >> 5;
    float v[8] = {0.0f, 0.0f, 0.0f, 0.0f, kIdentity[0], kIdentity[1], kIdentity[2], kIdentity[3]};
    if (lane < warps) get_record(sc, lane, v);
    float cr[4] = {v[4], v[5], v[6], v[7]};
    xor_tree(cr, range_combine);
    if (lane < warps) rescale_partial<Policy>(v, cr[0], cr[1], temperature);
    if constexpr (kCentredRecords<Policy>) {
      warp_tree_combine<Policy>(v);
#pragma unroll
      for (int k = 0; k < 4; ++k) msg[k] = k < K ? v[k] : 0.0f;
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) msg[k] = k < K ? warp_tree_sum(v[k]) : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) msg[4 + k] = cr[k];
  }
}

// The last stage of the one exchange, in one warp: lane r holds CTA r's message (v; the other
// lanes zero sums and the range's identity); the row's range (every lane), the messages rescaled
// to the row's maxima and added by the pairwise tree over the rank (offsets C/2..1, the tree of
// docs/semantics.md); lane 0 publishes the row's statistics into rs. The mailbox exchange and
// the combine kernel of forward-only launches (combine_one_pass_rows) both end here: the same
// bits.
template <class Policy, class Temp>
__device__ __forceinline__ void one_exchange_combine(float (&v)[8], unsigned ctas, Temp temperature, RowShared& rs) {
  constexpr int K = Policy::kOnePass + 2;
  const int lane = threadIdx.x & 31;
  float g[4] = {v[4], v[5], v[6], v[7]};
  xor_tree(g, RangeCombine{});
  if (static_cast<unsigned>(lane) < ctas) rescale_partial<Policy>(v, g[0], g[1], temperature);
  for (unsigned offset = ctas / 2; offset >= 1; offset /= 2) {
    if constexpr (kCentredRecords<Policy>) {
      float o[K];
#pragma unroll
      for (int k = 0; k < K; ++k) o[k] = __shfl_down_sync(0xffffffffu, v[k], offset);
      merge_one_pass_sums<Policy>(v, o);
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k) v[k] = v[k] + __shfl_down_sync(0xffffffffu, v[k], offset);
    }
  }
  if (lane == 0) {
    publish_range(rs, g, temperature);
#pragma unroll
    for (int k = 0; k < K; ++k) rs.stats[k] = v[k];
    rs.s[0] = v[K - 2];
    rs.s[1] = v[K - 1];
    rs.log_s[0] = math::f_log(rs.s[0]);
    rs.log_s[1] = math::f_log(rs.s[1]);
  }
}

// A message (8 floats) as lane r of the combining warp reads it, or the identity where r >= C.
__device__ __forceinline__ void message_or_identity(const float* m, bool present, float (&v)[8]) {
  constexpr float kIdentity[4] = {-math::kInf, -math::kInf, math::kInf, math::kInf};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    v[k] = present ? m[k] : 0.0f;
    v[4 + k] = present ? m[4 + k] : kIdentity[k];
  }
}

template <class Policy, class Temp, class Hook = NoHook>
__device__ void reduce_one_exchange(cg::cluster_group& cl, const BlockScratch& sc, Mailbox<kStatsWords>& box,
                                    unsigned parity, RowShared& rs, const float* acc, const float (&range)[4],
                                    Temp temperature, const Hook& after_reads = Hook{}) {
  float msg[8] = {};  // (set in warp 0, the only reader)
  one_exchange_cta_message<Policy>(sc, acc, range, temperature, after_reads, msg);
  const unsigned ctas = cl.num_blocks(), rank = cl.block_rank();
  const int lane = threadIdx.x & 31;
  if (threadIdx.x < 32) {
    if (lane == 0) mailbox_arm(box, ctas);
    if (static_cast<unsigned>(lane) < ctas) {
      const uint4 m[kStatsWords] = {
          make_uint4(float_bits(msg[0]), float_bits(msg[1]), float_bits(msg[2]), float_bits(msg[3])),
          make_uint4(float_bits(msg[4]), float_bits(msg[5]), float_bits(msg[6]), float_bits(msg[7]))};
      mailbox_push(cl, box, rank, static_cast<unsigned>(lane), m);
    }
  }
  mailbox_wait(cl, box, parity);
  if (threadIdx.x < 32) {  // lane r: CTA r's message; the row's range, then the sums
    const bool present = static_cast<unsigned>(lane) < ctas;
    float m[8] = {};
    if (present) {
      const uint4 a = box.from[lane][0], b = box.from[lane][1];
      const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
      for (int k = 0; k < 8; ++k) m[k] = bits_float(w[k]);
    }
    float v[8];
    message_or_identity(m, present, v);
    one_exchange_combine<Policy>(v, ctas, temperature, rs);
  }
  __syncthreads();
}

// Forward-only launches of the one-exchange rows (RowKernelParams::messages): the first two
// stages as reduce_one_exchange, then thread 0 stores the CTA's message (8 floats) to `message`
// in global memory, and no CTA waits for the others: combine_one_pass_rows finishes the row
// after the launch, with one_exchange_combine, in the same order (bitwise the loss the mailbox
// exchange gives). The records in shared memory are read by warp 0 here and written again only
// after the CTA barrier that ends the row (logit_rows_body).
template <class Policy, class Temp, class Hook = NoHook>
__device__ void reduce_one_exchange_to_memory(const BlockScratch& sc, float* message, const float* acc,
                                              const float (&range)[4], Temp temperature,
                                              const Hook& after_reads = Hook{}) {
  float msg[8] = {};  // (set in warp 0, the only reader)
  one_exchange_cta_message<Policy>(sc, acc, range, temperature, after_reads, msg);
  if (threadIdx.x == 0) {
    float4* d = reinterpret_cast<float4*>(message);
    d[0] = make_float4(msg[0], msg[1], msg[2], msg[3]);
    d[1] = make_float4(msg[4], msg[5], msg[6], msg[7]);
  }
}

// How an exchange carries the normalisers S of the two sides (docs/semantics.md, "Summation order"):
//   none:   no S (the second exchange of the two-pass rows);
//   fixed:  the exact FixedSum (kernels/math/exact_sum.hpp; the rows whose policy needs bitwise
//           ties, total variation): per-thread 64-bit integers, merged with a carry word;
//   floats: float sums in the kernel's summation order, as the last two of the K float sums
//           (every other row: no float-to-integer conversion and 64-bit add per column and side).
enum class SSum { none, fixed, floats };

// Sums K float partials (K <= kMaxStats) of every thread over the CTA and then the cluster, and,
// with SSum::fixed, the two sides' per-thread fixed-point sums of S in the same exchange (one
// barrier and one mailbox use). Results: rs.stats[0..K), and with fixed or floats rs.s, rs.log_s
// (floats: S_y, S_x are the sums K - 2 and K - 1).
// The per-thread fixed sums are plain 64-bit integers (fewer than 2^24 terms of at most 2^40);
// warp 0 adds them into FixedSums with a carry word (exact, any order).
// The message: with fixed the two FixedSums (lo, lo >> 32, hi of each side), then the K sums.
// after_reads(): run by thread 0 right after the CTA barrier that follows every thread's last
// pass (no thread reads the row's slices any more: the prefetch of process_row).
template <int K, SSum kS, class Hook = NoHook>
__device__ void reduce_stats(cg::cluster_group& cl, const BlockScratch& sc, Mailbox<kStatsWords>& box, unsigned parity,
                             RowShared& rs, const float* acc, uint64_t ly = 0, uint64_t lx = 0,
                             const Hook& after_reads = Hook{}) {
  constexpr bool kFixed = kS == SSum::fixed;
  static_assert(kS != SSum::floats || K >= 2, "S_y, S_x are the last two sums");
  constexpr int kMsgOff = kFixed ? 6 : 0;  // the message (and record) words of the fixed sums
  static_assert(kMsgOff + K <= 4 * kStatsWords, "message too small");
  static_assert(kMsgOff + K <= kRecordFloats, "a warp's record holds its message");
  const int lane = threadIdx.x & 31;
  {  // every warp at once: its sums (every lane), written by lane 0 as the warp's record
    float rec[kRecordFloats];
#pragma unroll
    for (int i = 0; i < kRecordFloats; ++i) rec[i] = 0.0f;
    if constexpr (kFixed) {
      math::FixedSum fy, fx;  // exact, any order
      fy.lo = ly;
      fx.lo = lx;
      xor_merge_fixed(fy);
      xor_merge_fixed(fx);
      rec[0] = bits_float(static_cast<uint32_t>(fy.lo));
      rec[1] = bits_float(static_cast<uint32_t>(fy.lo >> 32));
      rec[2] = bits_float(fy.hi);
      rec[3] = bits_float(static_cast<uint32_t>(fx.lo));
      rec[4] = bits_float(static_cast<uint32_t>(fx.lo >> 32));
      rec[5] = bits_float(fx.hi);
    }
#pragma unroll
    for (int k = 0; k < K; ++k) rec[kMsgOff + k] = warp_tree_sum(acc[k]);
    if (lane == 0) {
      float4* d = reinterpret_cast<float4*>(sc.rec[threadIdx.x >> 5]);
      d[0] = make_float4(rec[0], rec[1], rec[2], rec[3]);
      d[1] = make_float4(rec[4], rec[5], rec[6], rec[7]);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) after_reads();
  const unsigned ctas = cl.num_blocks(), rank = cl.block_rank();
  if (threadIdx.x < 32) {  // lane w: warp w's record; the CTA's sums (every lane), pushed to every CTA
    float r[kRecordFloats];
#pragma unroll
    for (int i = 0; i < kRecordFloats; ++i) r[i] = 0.0f;  // the lanes past the last warp: exact zeros
    if (lane < (cta_threads() >> 5)) get_record(sc, lane, r);
    uint32_t m[4 * kStatsWords] = {};
    if constexpr (kFixed) {
      math::FixedSum fy, fx;
      fy.lo = (static_cast<uint64_t>(float_bits(r[1])) << 32) | float_bits(r[0]);
      fy.hi = float_bits(r[2]);
      fx.lo = (static_cast<uint64_t>(float_bits(r[4])) << 32) | float_bits(r[3]);
      fx.hi = float_bits(r[5]);
      xor_merge_fixed(fy);
      xor_merge_fixed(fx);
      m[0] = static_cast<uint32_t>(fy.lo);
      m[1] = static_cast<uint32_t>(fy.lo >> 32);
      m[2] = fy.hi;
      m[3] = static_cast<uint32_t>(fx.lo);
      m[4] = static_cast<uint32_t>(fx.lo >> 32);
      m[5] = fx.hi;
    }
#pragma unroll
    for (int k = 0; k < K; ++k) m[kMsgOff + k] = float_bits(warp_tree_sum(r[kMsgOff + k]));
    if (lane == 0) mailbox_arm(box, ctas);
    if (static_cast<unsigned>(lane) < ctas) {
      uint4 msg[kStatsWords];
#pragma unroll
      for (int w = 0; w < kStatsWords; ++w) msg[w] = make_uint4(m[4 * w], m[4 * w + 1], m[4 * w + 2], m[4 * w + 3]);
      mailbox_push(cl, box, rank, static_cast<unsigned>(lane), msg);
    }
  }
  mailbox_wait(cl, box, parity);
  if (threadIdx.x < 32) {  // the C messages, one per lane, by the pairwise tree over the rank
    uint32_t m[4 * kStatsWords] = {};
    if (static_cast<unsigned>(lane) < ctas) {
#pragma unroll
      for (int w = 0; w < kStatsWords; ++w) {
        const uint4 v = box.from[lane][w];
        m[4 * w] = v.x;
        m[4 * w + 1] = v.y;
        m[4 * w + 2] = v.z;
        m[4 * w + 3] = v.w;
      }
    }
    float s[K > 0 ? K : 1];
#pragma unroll
    for (int k = 0; k < K; ++k) s[k] = bits_float(m[kMsgOff + k]);
    math::FixedSum fy, fx;
    if constexpr (kFixed) {
      fy.lo = (static_cast<uint64_t>(m[1]) << 32) | m[0];
      fy.hi = m[2];
      fx.lo = (static_cast<uint64_t>(m[4]) << 32) | m[3];
      fx.hi = m[5];
    }
    // Offsets C/2..1: lane i < offset adds lane i + offset (the tree of docs/semantics.md).
    for (unsigned offset = ctas / 2; offset >= 1; offset /= 2) {
#pragma unroll
      for (int k = 0; k < K; ++k) s[k] = s[k] + __shfl_down_sync(0xffffffffu, s[k], offset);
      if constexpr (kFixed) {
        math::FixedSum oy, ox;
        oy.lo = __shfl_down_sync(0xffffffffu, fy.lo, offset);
        oy.hi = __shfl_down_sync(0xffffffffu, fy.hi, offset);
        ox.lo = __shfl_down_sync(0xffffffffu, fx.lo, offset);
        ox.hi = __shfl_down_sync(0xffffffffu, fx.hi, offset);
        fy.merge(oy);
        fx.merge(ox);
      }
    }
    if (lane == 0) {
#pragma unroll
      for (int k = 0; k < K; ++k) rs.stats[k] = s[k];
      if constexpr (kFixed) {
        rs.s[0] = fy.value();
        rs.s[1] = fx.value();
      } else if constexpr (kS == SSum::floats) {
        rs.s[0] = s[K - 2];
        rs.s[1] = s[K - 1];
      }
      if constexpr (kS != SSum::none) {
        rs.log_s[0] = math::f_log(rs.s[0]);
        rs.log_s[1] = math::f_log(rs.s[1]);
      }
    }
  }
  __syncthreads();
}

}  // namespace divcheck::cuda
