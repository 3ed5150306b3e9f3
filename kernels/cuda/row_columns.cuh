// How the row kernels form a column (p_v and lp_v of both sides) from two logits and the row's
// statistics: the path a kernel instantiation carries (Columns), one side's statistics as the
// column formulas read them (SideRow), the temperature's form (temperature_of) and the column
// itself (make_column: the general forms, or a tame row's), and the policy's terms of a chunk
// summed pairwise (pairwise_terms). The formulas are kernels/math's, shared with the CPU backend.
#pragma once

#include "kernels/cuda/device_types.hpp"
#include "kernels/cuda/row_kernel_params.cuh"
#include "kernels/cuda/row_policies.cuh"
#include "kernels/cuda/row_reduce.cuh"
#include "kernels/math/softmax.hpp"

namespace divcheck::cuda {

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

}  // namespace divcheck::cuda
