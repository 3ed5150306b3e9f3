// The sums a thread takes over its chunks relative to given maxima (its own right after the scan,
// or the row's): the one-pass sums of one chunk (one_pass_chunk, also the streamed kernels',
// stream_rows_kernel.cuh) and of the thread's chunks (one_pass_sums: KL and cross-entropy's
// statistics, Jefferys' and Hellinger's gradient statistics, with S of each side), and S of each
// side alone (s_sums). Each chunk's 8 terms pairwise, the chunk sums in chunk order.
#pragma once

#include "kernels/cuda/element_io.cuh"
#include "kernels/cuda/row_columns.cuh"
#include "kernels/cuda/row_policies.cuh"
#include "kernels/cuda/row_slices.cuh"
#include "kernels/math/softmax.hpp"

namespace divcheck::cuda {

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
  if constexpr (kCentredRecords<Policy>) {
    // The chunk's centred record (Policy::centred_chunk): tame chunks only. A chunk that is not
    // tame belongs to a row that is not (tame_side is monotone), which the combine hands to the
    // cluster kernel: its sums are never read, so they are zeros here.
    if constexpr (kTame) {
      float ty[kChunk] = {}, tx[kChunk] = {};
#pragma unroll
      for (int k = 0; k < kChunk; ++k) {
        if (kWhole || k < cnt) {
          ty[k] = math::shifted_logit_tame(raw_get<Elem>(cy, k), m0, temperature_of<kT>(prm));
          tx[k] = math::shifted_logit_tame(raw_get<Elem>(cx, k), m1, temperature_of<kT>(prm));
        }
      }
      Policy::template centred_chunk<kChunk, kWhole>(ty, tx, cnt, part);
    } else {
#pragma unroll
      for (int s2 = 0; s2 < kSums; ++s2) part[s2] = 0.0f;
    }
  } else if constexpr (kTame) {
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
  if constexpr (kCentredRecords<Policy>) {
    // records, not scaled sums: nothing to do
  } else if constexpr (kTame && kT == TempForm::power_of_two) {
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
  for_each_chunk_pair<kIsLossOnly<Policy>>(
      y, x, n, [&](int, int cnt, auto whole, const RawChunk<Elem>& cy, const RawChunk<Elem>& cx) {
        float part[kSums];
        one_pass_chunk<Elem, Policy, kT, kTame, decltype(whole)::value>(prm, cy, cx, cnt, m0, m1, part);
        merge_one_pass_sums<Policy>(acc, part);
      });
  one_pass_scale<Policy, kTame, kT>(prm, acc);
}

// S of each side over the thread's chunks relative to maxima m0, m1 (the thread's own:
// one_exchange_row for the two-pass rows; the row's: row_passes), each chunk's 8 terms pairwise,
// the chunk sums in chunk order. kTame: as one_pass_sums. The terms are the flushing ex2
// (f_softmax_exp_ftz): a flushed term is below 2^-126 against S >= 1. kOneTest: read_chunks'.
template <class Elem, TempForm kT, bool kTame, bool kOneTest, bool kStagedLoop = true, bool kP>
__device__ __forceinline__ void s_sums(const RowKernelParams& prm, const SliceRef<Elem, kP>& y,
                                       const SliceRef<Elem, kP>& x, int n, float m0, float m1, float (&acc)[2]) {
  for_each_chunk_pair<kOneTest, kStagedLoop>(
      y, x, n, [&](int, int cnt, auto whole, const RawChunk<Elem>& cy, const RawChunk<Elem>& cx) {
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

}  // namespace divcheck::cuda
