// Pass 4 of the row kernel: the gradients of one chunk (gradient_chunk, also the streamed
// kernel's with gradients, stream_grad_rows_kernel.cuh), of a thread's chunks (write_gradients),
// and of a tame row's chunks together with the loss's sum (write_gradients_and_loss: the rows
// whose gradient statistics came with S). Each gradient is rounded once into the logits' dtype
// and written once, with 16-byte stores where the rows are aligned.
#pragma once

#include "kernels/cuda/element_io.cuh"
#include "kernels/cuda/row_columns.cuh"
#include "kernels/cuda/row_policies.cuh"
#include "kernels/cuda/row_slices.cuh"

namespace divcheck::cuda {

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
__device__ __forceinline__ void write_gradients(const RowKernelParams& prm, const SliceRef<Elem, kP>& y,
                                                const SliceRef<Elem, kP>& x, const uint8_t* ssrc, int n,
                                                const SideRow& py, const SideRow& qx, const float* st,
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
    if (cnt == kChunk)
      body(std::true_type{});
    else
      body(std::false_type{});
    if (gp) store_raw(gp + i * kChunk, cnt, out_vec && cnt == kChunk, oy);
    if (gq) store_raw(gq + i * kChunk, cnt, out_vec && cnt == kChunk, ox);
    acc = acc + (((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7])));  // as pairwise_terms
  }
}

}  // namespace divcheck::cuda
