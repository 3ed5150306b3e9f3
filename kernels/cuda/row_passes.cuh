// Passes 2-4 of a valid position after the scan, with their row exchanges (row_reduce.cuh): on a
// plain path the thread sums of one_exchange_row in ONE exchange, then the loss and the gradients
// (or the two-pass rows' statistics pass); elsewhere row_passes (S, the statistics pass and its
// exchange, the loss, the gradients); and the combine of the deferred rows' messages after the
// row kernel (combine_one_pass_rows_body). logit_rows_kernel.cuh has the design and the order of
// the sums.
#pragma once

#include <cstdint>

#include "kernels/cuda/row_columns.cuh"
#include "kernels/cuda/row_gradients.cuh"
#include "kernels/cuda/row_one_pass_sums.cuh"
#include "kernels/cuda/row_policies.cuh"
#include "kernels/cuda/row_reduce.cuh"
#include "kernels/cuda/row_slices.cuh"
#include "kernels/cuda/workspace.hpp"
#include "kernels/math/exact_sum.hpp"
#include "kernels/math/softmax.hpp"

namespace divcheck::cuda {

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

template <class Elem, class Policy, TempForm kT, Columns kCols, bool kTame, bool kHaveS, class Hook, bool kP>
__device__ __forceinline__ void row_passes(const RowKernelParams& prm, const RowSlices<Elem, kP>& r,
                                           cg::cluster_group& cl, const BlockScratch& sc, RowExchange& ex,
                                           RowShared& rs, const Hook& after_reads);

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
// two-pass rows (Jefferys, Jensen-Shannon, Hellinger; and KL on the probability path) send S alone, then run their
// statistics pass and its exchange (row_passes with kHaveS): two exchanges per row instead of three. Tame forms where
// the thread's chunks are tame (the sums) or the whole row is (the later passes). Poison (a NaN or +inf logit, or a
// side without a finite logit) is known only after the exchange: the sums of such a row are discarded. after_reads: the
// prefetch hook, run by the row's last exchange. kCols: log_softmax, or probability (T = 1, RowPaths::prob_unit_t: S
// alone in the exchange, for every policy; the one-pass forms are the log-softmax path's).
template <class Elem, class Policy, TempForm kT, Columns kCols, bool kDeferred, class Hook, bool kP>
__device__ __forceinline__ void one_exchange_row(const RowKernelParams& prm, const RowSlices<Elem, kP>& r,
                                                 const float (&range)[4], cg::cluster_group& cl, const BlockScratch& sc,
                                                 RowExchange& ex, RowShared& rs, const Hook& after_reads) {
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
    if (tame)
      one_pass_sums<Elem, Policy, kT, true>(prm, r.y, r.x, r.n, range[0], range[1], acc);
    else
      one_pass_sums<Elem, Policy, kT, false>(prm, r.y, r.x, r.n, range[0], range[1], acc);
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
      if (tame)
        one_pass_sums<Elem, GradEx, kT, true>(prm, r.y, r.x, r.n, range[0], range[1], acc);
      else
        one_pass_sums<Elem, GradEx, kT, false>(prm, r.y, r.x, r.n, range[0], range[1], acc);
    } else {
      if (tame)
        s_sums<Elem, kT, true, kIsLossOnly<Policy>>(prm, r.y, r.x, r.n, range[0], range[1], acc);
      else
        s_sums<Elem, kT, false, kIsLossOnly<Policy>>(prm, r.y, r.x, r.n, range[0], range[1], acc);
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
    if (row_tame)
      row_passes<Elem, Policy, kT, kCols, true, true>(prm, r, cl, sc, ex, rs, after_reads);
    else
      row_passes<Elem, Policy, kT, kCols, false, true>(prm, r, cl, sc, ex, rs, after_reads);
  } else {
    float st[Policy::kStats];
    const RowResult res = one_pass_result<Policy>(prm, rs, r.row, st);
    if (r.leader) prm.row_loss[r.row] = res.ell;
    if (r.gp || r.gq) {
      const SideRow py = side_row<kCols>(prm, rs, 0);
      const SideRow qx = side_row<kCols>(prm, rs, 1);
      if (row_tame)
        write_gradients<Elem, Policy, kT, kCols, true>(prm, r.y, r.x, nullptr, r.n, py, qx, st, res, r.gp, r.gq,
                                                       r.out_vec);
      else
        write_gradients<Elem, Policy, kT, kCols, false>(prm, r.y, r.x, nullptr, r.n, py, qx, st, res, r.gp, r.gq,
                                                        r.out_vec);
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
    const bool masked = prm.valid && prm.valid[row] == 0;
    unsigned char* fallback = kCentredRecords<Policy>
                                  ? LogitWorkspace::fallback_of(prm.row_loss, prm.rows / prm.seq, prm.seq) + row
                                  : nullptr;
    if (kCentredRecords<Policy> && lane == 0 && masked) *fallback = 0;
    if (masked) continue;  // masked: no messages, no loss (as the row kernel)
    const bool present = lane < present_ctas;
    const float* m = LogitWorkspace::messages_of(prm.row_loss, prm.rows / prm.seq, prm.seq) +
                     (row * ctas + (present ? lane : 0u)) * LogitWorkspace::kMessageFloats;
    float v[8];
    message_or_identity(m, present, v);
    RowShared rs{};  // lane 0 writes and reads it
    one_exchange_combine<Policy>(v, ctas, temperature_of<kT>(prm), rs);
    if (lane == 0) {
      // Centred records hold the loss of tame rows only: the others go to the cluster kernel.
      const bool hand_over = kCentredRecords<Policy> && !rs.poison && !(rs.tame && prm.allow_tame);
      if (kCentredRecords<Policy>) *fallback = hand_over ? 1 : 0;
      if (rs.poison) {
        prm.row_loss[row] = __int_as_float(kQuietNaNBits);
      } else if (!hand_over) {
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
__device__ __forceinline__ void row_passes(const RowKernelParams& prm, const RowSlices<Elem, kP>& r,
                                           cg::cluster_group& cl, const BlockScratch& sc, RowExchange& ex,
                                           RowShared& rs, const Hook& after_reads) {
  const SliceRef<Elem, kP>& y = r.y;
  const SliceRef<Elem, kP>& x = r.x;
  const uint8_t* ssrc = r.ssrc;
  const int n = r.n;
  float st[Policy::kStats];
  constexpr bool kOnePassRow = kCols == Columns::log_softmax && Policy::kOnePass > 0;
  static_assert(!(kOnePassRow && kT != TempForm::any),
                "the one-pass rows at T = 1, 2^k or by the reciprocal take one_exchange_row");
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
    for_each_chunk_pair<kIsLossOnly<Policy>, kNoSupport<kCols>>(
        y, x, n, [&](int, int cnt, auto whole, const RawChunk<Elem>& cy, const RawChunk<Elem>& cx) {
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
      write_gradients<Elem, Policy, kT, kCols, kTame>(prm, y, x, ssrc, n, py, qx, st, res, r.gp, r.gq, r.out_vec);
  }
}

}  // namespace divcheck::cuda
