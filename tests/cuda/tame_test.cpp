// The tame forms of the logit kernel (kernels/math/softmax.hpp, math::tame_side): rows whose
// logits are all finite and whose shifted logits stay above kTameShift take shorter forms of
// the same formulas. Checked exactly:
//   * the exponential the tame forms use equals the general one, bit for bit, on every float
//     of the range they can see (exhaustive);
//   * with the tame forms allowed or not, every output is bitwise the same (KL and cross-entropy,
//     whose tame one-pass sums round less, and total variation, whose tame p and q come from the
//     shifted logits by one fma: both within the verdict bound), on cases that mix
//     tame rows with rows the forms must not take (a -inf logit, a spread beyond 64 T, a
//     support mask, the probability path off prob_unit_t), and the kernel took the tame forms
//     exactly on the rows the host predicts (the count is reported by the kernel);
//   * the fast log (the probability path's, Jensen-Shannon's) is within its documented bound on
//     every float in [FLT_MIN, 2].
#include <cmath>
#include <iostream>
#include <limits>

#include "kernels/cuda/case_args.hpp"
#include "kernels/math/softmax.hpp"
#include "tests/cpu/test_cases.hpp"
#include "tests/cuda/gpu_cases.hpp"
#include "tests/cuda/gpu_test_support.hpp"
#include "tests/cuda/tame_exp_check.hpp"

namespace divcheck::gputest {
namespace {

using GpuTame = GpuTest;

TEST_F(GpuTame, ExponentialsOfTheTameRangeAreTheSameBits) {
  const TameExpCheck r = check_tame_exponentials();
  std::cout << "[ tame ] " << r.tested << " floats in [" << kTameExpLowest << ", 0]: " << r.mismatches
            << " mismatches, " << r.subnormal << " subnormal results\n";
  EXPECT_GT(r.tested, 1000000000u);  // every negative float down to -87: ~1.1e9 of them
  EXPECT_EQ(r.mismatches, 0u) << "first at x = " << r.first_mismatch;
  EXPECT_EQ(r.subnormal, 0u);
  // The range covers every tame argument: t_v >= kTameShift, lp_v >= kTameShift - ln(2^31).
  EXPECT_LE(kTameExpLowest, math::kTameShift - std::log(2147483648.0));
}

TEST_F(GpuTame, PowerOfTwoTemperaturesDivideByMultiplying) {
  const PowerOfTwoDivisionCheck r = check_power_of_two_divisions();
  std::cout << "[ pow2 ] " << r.tested << " (d, 2^k) pairs, every float d and " << r.ks << " k: " << r.mismatches
            << " mismatches\n";
  EXPECT_EQ(r.tested, 10ull << 32);
  EXPECT_EQ(r.mismatches, 0u) << "first at d = " << r.first_mismatch;
}

// The fast log (math::f_fast_log: MUFU.LG2 times ln 2; the probability path's log p and
// Jensen-Shannon's log(1 + exp(-a))) over every float in [FLT_MIN, 2], against the bound
// docs/tolerances.md uses, which follows from the CUDA Programming Guide's accuracy of __log2f
// (absolute 2^-22 on [1/2, 2], 2 ulp elsewhere) and one rounding of the product by ln 2:
// |error| <= 4 ln 2 + |ln x| <= 3.48 units of u on [1/2, 2] and <= (4 + 1) |ln x| units below
// 1/2; log 1 and log 2 exact (identical rows: exact zeros).
TEST_F(GpuTame, FastLogsStayWithinTheirBound) {
  const FastLogCheck r = check_fast_logs();
  std::cout << "[ flog ] " << r.tested << " floats x in [FLT_MIN, 2]: max error " << r.near_one
            << " u on [1/2, 2], " << r.relative << " u |ln x| below; log(1) " << (r.one_is_zero ? "== +0" : "!= +0")
            << ", log(2) " << (r.two_is_ln2 ? "== ln 2" : "!= ln 2") << ", " << r.non_finite << " non-finite\n";
  EXPECT_EQ(r.tested, 0x40000000ull - 0x00800000ull + 1);
  EXPECT_EQ(r.non_finite, 0u);
  EXPECT_LE(r.near_one, 3.48);
  EXPECT_LE(r.relative, 5.0);
  EXPECT_TRUE(r.one_is_zero);
  EXPECT_TRUE(r.two_is_ln2);
}

// Makes position 0 hold a -inf logit and position 2 a spread beyond 64 T on one side (both
// general rows), and returns how many valid positions the kernel should treat as tame.
std::int64_t shape_rows(Case& c, std::int64_t& general_rows) {
  const cuda::LogitRoles roles = cuda::logit_roles(c);
  const cuda::LogitArgs a = cuda::logit_args_of(c, cuda::CudaOptions{});
  Tensor& y = c.inputs.at(roles.p_name);
  Tensor& x = c.inputs.at(roles.q_name);
  const std::int64_t rows = y.dim(0) * y.dim(1), V = y.dim(2);
  const float T = static_cast<float>(a.temperature);
  y.set(0 * V + 1, -std::numeric_limits<double>::infinity());
  if (rows > 2) x.set(2 * V + 3, x.get(2 * V + 3) - 120.0 * a.temperature);
  // The paths with tame forms: every one but `general` (the log-softmax path without a support
  // mask, and the probability path at T = 1 for KL and Jefferys). logit_args_of leaves the
  // device pointers unset: mark the support mask for row_paths.
  cuda::LogitArgs paths_of = a;
  static const std::uint8_t support_marker = 0;
  if (roles.support != nullptr) paths_of.support = &support_marker;
  const bool plain = cuda::row_paths(paths_of) != cuda::RowPaths::general;
  const bool by_reciprocal = cuda::row_paths(paths_of) == cuda::RowPaths::plain_recip_t;  // (the kernel's form of T)
  std::int64_t tame = 0;
  general_rows = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    if (roles.mask && roles.mask->get(r) == 0.0) continue;
    bool ok = plain;
    for (const Tensor* side : {&y, &x}) {
      float mx = -INFINITY, mn = INFINITY;
      for (std::int64_t v = 0; v < V; ++v) {
        const float z = static_cast<float>(side->get(r * V + v));
        mx = std::fmax(mx, z);
        mn = std::fmin(mn, z);
      }
      ok = ok && std::isfinite(mx) &&
           (by_reciprocal ? math::tame_side(mn, mx, math::reciprocal_temperature(T)) : math::tame_side(mn, mx, T));
    }
    if (ok) ++tame;
    else ++general_rows;
  }
  return tame;
}

// The one-pass rows (KL, cross-entropy and temperature-scaled KL on the log-softmax path): their
// tame chunks sum the terms unscaled with the first pairwise level fused, the general form
// scales every term by 2^-64 (docs/semantics.md, "Tame rows"): not the same bits.
bool tame_sums_differ(DivergenceId id) {
  return id == DivergenceId::masked_kl_divergence || id == DivergenceId::masked_cross_entropy ||
         id == DivergenceId::temperature_scaled_masked_kl_divergence;
}

// Total variation and squared Hellinger (the log-softmax path, the only one they have): a tame
// column's p and q (total variation: math::softmax_column_tame_folded) or sqrt(p) and sqrt(q)
// (Hellinger: softmax_column_tame_roots, p and q their squares) come from one fma of the shifted
// logit (docs/tolerances.md), a general column's from lp rounded first: the same row judged by the
// same bound, not the same bits (the loss included).
bool tame_probabilities_differ(DivergenceId id) {
  return id == DivergenceId::total_variation || id == DivergenceId::squared_hellinger_distance;
}

// The Jefferys rows and Hellinger with gradients on a plain path (no support mask; the log-softmax
// path at T = 1 or 2^k, the probability path at T = 1): a tame row's gradients take their
// statistics from the one-pass sums (Jefferys' K_p, K_q: unscaled, the first level fused;
// Hellinger's H_p = H_q from sum sqrt(pq)), a general row's from the statistics pass
// (row_policies.cuh JefferysGradOnePass, HellingerGradOnePass): the same loss bits, gradients
// that differ in rounding.
bool tame_gradient_stats_differ(const Case& c) {
  const DivergenceId id = c.id;
  if (id != DivergenceId::jefferys_divergence && id != DivergenceId::masked_jefferys_divergence &&
      id != DivergenceId::temperature_scaled_masked_jefferys_divergence &&
      id != DivergenceId::squared_hellinger_distance)
    return false;
  cuda::LogitArgs a = cuda::logit_args_of(c, cuda::CudaOptions{});
  static const std::uint8_t support_marker = 0;
  if (cuda::logit_roles(c).support != nullptr) a.support = &support_marker;  // (as shape_rows)
  const cuda::RowPaths paths = cuda::row_paths(a);
  return !c.wants_grad.empty() &&
         (paths == cuda::RowPaths::plain_unit_t || paths == cuda::RowPaths::plain_pow2_t ||
          paths == cuda::RowPaths::plain_recip_t || paths == cuda::RowPaths::prob_unit_t);
}

TEST_F(GpuTame, TameFormsGiveTheSameBitsOnExactlyThePredictedRows) {
  std::int64_t tame_total = 0, general_total = 0, cases = 0, gradient_stats_cases = 0, folded_tv_cases = 0,
               folded_hellinger_cases = 0;
  for (DivergenceId id : gpu_rows()) {
    if (id == DivergenceId::tvd_prob) continue;
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (std::uint64_t seed : {11u, 12u})
        for (bool plain : {false, true}) {
          Case c = varied_case(id, dt, 2, 4, 3001, seed);
          // plain: the rows whose varied case has a support mask, without it (their tame rows,
          // e.g. jefferys_divergence's and Hellinger's one-pass gradient statistics)
          if (plain && !c.inputs.count("support_mask")) continue;
          if (plain) make_plain(c);
          std::int64_t general = 0;
          const std::int64_t expect_tame = shape_rows(c, general);
          SCOPED_TRACE(label(c));
          std::int64_t tame_rows = -1, never = -1;
          const Outputs a = compute(*cuda::make_cuda_backend_with({0, true, true, &tame_rows}), c);
          const Outputs b = compute(*cuda::make_cuda_backend_with({0, true, false, &never}), c);
          EXPECT_EQ(tame_rows, expect_tame);
          EXPECT_EQ(never, 0);
          if (tame_sums_differ(id) || tame_gradient_stats_differ(c) || tame_probabilities_differ(id)) {
            // KL and cross-entropy: the tame one-pass sums round less (kernels/math/kl.hpp
            // kl_one_pass_factors_tame) and the tame gradients come from the shifted logits
            // (kl_grads_tame, ce_grads_tame: docs/tolerances.md), the Jefferys and Hellinger
            // gradients' statistics come from one-pass sums on tame rows only, and total
            // variation's tame p and q and Hellinger's tame roots from the shifted logits, so both
            // runs are judged against the reference instead; the Jefferys rows' loss is still the
            // same bits.
            const Expected e = compute_reference(c);
            EXPECT_TRUE(gpu_passes(a, c, e)) << "tame forms on";
            EXPECT_TRUE(gpu_passes(b, c, e)) << "tame forms off";
            if (tame_probabilities_differ(id) && expect_tame > 0)
              ++(id == DivergenceId::total_variation ? folded_tv_cases : folded_hellinger_cases);
            if (!tame_sums_differ(id) && !tame_probabilities_differ(id)) {
              EXPECT_TRUE(bitwise_same(Outputs{a.loss, {}}, Outputs{b.loss, {}})) << "the loss";
              ++gradient_stats_cases;
            }
          } else {
            EXPECT_TRUE(bitwise_same(a, b));
          }
          tame_total += expect_tame;
          general_total += general;
          ++cases;
        }
  }
  std::cout << "[ tame ] " << cases << " cases: " << tame_total << " tame positions, " << general_total
            << " general positions; " << gradient_stats_cases
            << " Jefferys cases with one-pass gradient statistics and the loss's bits; cases with tame rows and "
               "folded forms: "
            << folded_tv_cases << " total variation (p, q), " << folded_hellinger_cases << " Hellinger (roots)\n";
  // The mix. General rows: shape_rows forces positions 0 (a -inf logit) and 2 (a spread of
  // 120 T) of every case to be general, so at least 2 per case (fails if the forcing does not
  // make them general). Tame rows: the plain cases (no support mask; the log-softmax path, or
  // the probability path of masked_kl and masked_jefferys) with
  // their other positions; 270 on these seeds with the plain variants of the support-mask rows
  // (78 cases; H200 runs of 2026-12-02), the floor of 50 only keeps the tame rows from silently
  // disappearing from the comparison.
  EXPECT_GT(tame_total, 50);
  EXPECT_GT(gradient_stats_cases, 0);    // Jefferys' one-pass gradient statistics compared (loss bitwise)
  EXPECT_GT(folded_tv_cases, 0);         // total variation's folded probabilities (on tame rows) and
  EXPECT_GT(folded_hellinger_cases, 0);  // Hellinger's folded roots judged in both runs
  EXPECT_GE(general_total, 2 * cases);
}

}  // namespace
}  // namespace divcheck::gputest
