// The non-finite rules of docs/semantics.md at valid positions, and extreme finite logits.
//   rule 1: a NaN or +inf logit, or a side with no finite logit, makes the position's loss NaN
//           and every gradient element of the position NaN; other positions are unaffected;
//   rule 2: -inf logits are zero-probability columns;
//   rule 3: KL / Jefferys / uncapped CE are +inf where p > 0 = q (or q > 0 = p for Jefferys),
//           with NaN gradients at that position; capped CE gives max_loss and gradient 0.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/backend.hpp"
#include "tests/cpu/test_cases.hpp"

namespace divcheck::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Two positions (B = 1, T = 2), V = 3; position 0 gets the given rows, position 1 is ordinary.
Case two_positions(DivergenceId id, std::vector<double> y0, std::vector<double> x0) {
  std::vector<double> y = y0, x = x0;
  for (double v : {0.3, -1.2, 0.7}) y.push_back(v);
  for (double v : {-0.4, 0.9, 0.1}) x.push_back(v);
  Case c = logit_case(id, 1, 2, 3, DType::f32, y, x);
  want_all_grads(c);
  return c;
}

void expect_position(const Outputs& o, std::int64_t pos, bool nan, const std::string& what) {
  for (const auto& [role, g] : o.grads)
    for (std::int64_t v = 0; v < 3; ++v) {
      const double x = g.get(pos * 3 + v);
      if (nan) EXPECT_TRUE(std::isnan(x)) << what << " " << role << " position " << pos << " column " << v << " = " << x;
      else EXPECT_TRUE(std::isfinite(x)) << what << " " << role << " position " << pos << " column " << v << " = " << x;
    }
}

TEST(CpuNonFinite, NanRowsPoisonOnlyTheirPosition) {
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> bad = {
      {{0.0, kNaN, 1.0}, {0.0, 0.5, 1.0}},                 // NaN on the p side
      {{0.0, 0.5, 1.0}, {INFINITY, 0.5, 1.0}},             // +inf on the q side
      {{-INFINITY, -INFINITY, -INFINITY}, {0.0, 0.5, 1.0}} // no finite logit
  };
  for (DivergenceId id : logit_rows())
    for (std::size_t k = 0; k < bad.size(); ++k) {
      const Case c = two_positions(id, bad[k].first, bad[k].second);
      const Outputs o = compute(*make_cpu_backend(), c);
      const std::string what = std::string(name_of(id)) + " bad row " + std::to_string(k);
      EXPECT_TRUE(std::isnan(o.loss.get(0))) << what;
      expect_position(o, 0, true, what);
      expect_position(o, 1, false, what);
      // Position 1's gradients do not depend on position 0's values (w depends on the mask only).
      const Outputs ref = compute(*make_cpu_backend(), two_positions(id, {0.0, 0.5, 1.0}, {0.0, 0.5, 1.0}));
      for (const auto& [role, g] : o.grads)
        for (std::int64_t v = 3; v < 6; ++v) EXPECT_EQ(g.get(v), ref.grads.at(role).get(v)) << what << " " << role;
    }
}

TEST(CpuNonFinite, NegativeInfinityColumnsAreZeroProbability) {
  // p has mass on column 2 where q has none: KL, Jefferys, CE are +inf at position 0 with NaN
  // gradients there; JS, Hellinger, TV stay finite. A -inf column on both sides is harmless.
  for (DivergenceId id : logit_rows()) {
    const Case c = two_positions(id, {0.0, -INFINITY, 1.0}, {0.5, -INFINITY, -INFINITY});
    const Outputs o = compute(*make_cpu_backend(), c);
    const std::string what(name_of(id));
    const bool infinite = id == DivergenceId::masked_kl_divergence || id == DivergenceId::masked_jefferys_divergence ||
                          id == DivergenceId::masked_cross_entropy || id == DivergenceId::jefferys_divergence ||
                          id == DivergenceId::temperature_scaled_masked_kl_divergence ||
                          id == DivergenceId::temperature_scaled_masked_jefferys_divergence;
    if (infinite) {
      EXPECT_EQ(o.loss.get(0), INFINITY) << what;
      expect_position(o, 0, true, what);
    } else {
      EXPECT_TRUE(std::isfinite(o.loss.get(0))) << what;
      expect_position(o, 0, false, what);
      for (const auto& [role, g] : o.grads) EXPECT_EQ(g.get(1), 0.0) << what << " " << role << ": column -inf on both sides";
    }
    expect_position(o, 1, false, what);
  }
}

TEST(CpuNonFinite, KlIsFiniteWhenOnlyTheQSideHasTheExtraMass) {
  // KL(p||q) with q > 0 = p at a column is finite (0 log 0 = 0); Jefferys is +inf there.
  const Case kl = two_positions(DivergenceId::masked_kl_divergence, {0.0, -INFINITY, 1.0}, {0.5, 0.2, 1.0});
  const Outputs o = compute(*make_cpu_backend(), kl);
  EXPECT_TRUE(std::isfinite(o.loss.get(0)));
  expect_position(o, 0, false, "masked_kl");
  EXPECT_EQ(o.grads.at("target_logits").get(1), 0.0);
  const Case j = two_positions(DivergenceId::masked_jefferys_divergence, {0.0, -INFINITY, 1.0}, {0.5, 0.2, 1.0});
  EXPECT_EQ(compute(*make_cpu_backend(), j).loss.get(0), INFINITY);
}

TEST(CpuNonFinite, SupportMaskExcludesTheInfiniteColumn) {
  // jefferys_divergence: the column with p > 0 = q is outside the support, so it is finite.
  Case c = two_positions(DivergenceId::jefferys_divergence, {0.0, 0.3, 1.0}, {0.5, 0.2, -INFINITY});
  c.inputs["support_mask"] = make_mask({1, 2, 3}, {1, 1, 0, 1, 1, 1});
  const Outputs o = compute(*make_cpu_backend(), c);
  EXPECT_TRUE(std::isfinite(o.loss.get(0)));
  expect_position(o, 0, false, "jefferys with support");
}

TEST(CpuNonFinite, CappedCrossEntropyAtInfinityIsMaxLossWithZeroGradient) {
  Case c = two_positions(DivergenceId::masked_cross_entropy, {0.0, -INFINITY, 1.0}, {0.5, -INFINITY, -INFINITY});
  c.params.max_loss = 2.5;
  c.params.scaling_factor = 0.5;
  // Position 0 only: mask position 1 so the loss is exactly max_loss (s_0 = ell / 1, mean / 1).
  c.inputs["attention_mask"] = make_mask({1, 2}, {1, 0});
  const Outputs o = compute(*make_cpu_backend(), c);
  EXPECT_EQ(o.loss.get(0), 2.5);
  for (const auto& [role, g] : o.grads)
    for (std::int64_t i = 0; i < g.numel(); ++i) EXPECT_EQ(g.get(i), 0.0) << role << " " << i;
}

TEST(CpuNonFinite, ExtremeLogitsShiftToTheSmallCase) {
  // Shifting a row by a constant changes nothing, and the CPU backend subtracts the row max
  // first, exactly: (1e4, 1e4) vs (1e4 + 1, 1e4) computes bitwise what (0, 0) vs (1, 0) does.
  // f16: (65504, 65504) vs (65504, 65472) is (0, 0) vs (32, 0); bf16: likewise at 2^15.
  struct S { DType dt; double base; double step; };
  for (S s : {S{DType::f32, 1e4, 1.0}, S{DType::f16, 65472.0, 32.0}, S{DType::bf16, 32768.0, 256.0}})
    for (DivergenceId id : logit_rows()) {
      Case big = logit_case(id, 1, 1, 2, s.dt, {s.base, s.base}, {s.base + s.step, s.base});
      Case small = logit_case(id, 1, 1, 2, s.dt, {0.0, 0.0}, {s.step, 0.0});
      want_all_grads(big);
      want_all_grads(small);
      const Outputs ob = compute(*make_cpu_backend(), big), os = compute(*make_cpu_backend(), small);
      const std::string what = std::string(name_of(id)) + " " + std::string(short_name(s.dt));
      EXPECT_TRUE(ob.loss.bitwise_equal(os.loss)) << what;
      for (const auto& [role, g] : ob.grads) EXPECT_TRUE(g.bitwise_equal(os.grads.at(role))) << what << " " << role;
    }
}

TEST(CpuNonFinite, RowsOfHugeEqualLogitsAreUniform) {
  // A row of 1e4, 65504 or the largest bf16 value: softmax is uniform, no overflow; against a
  // row of zeros the divergences are exactly 0.
  const double bf16_max = max_finite(DType::bf16);
  for (auto [dt, v] : {std::pair{DType::f32, 1e4}, std::pair{DType::f16, 65504.0}, std::pair{DType::bf16, bf16_max},
                       std::pair{DType::f32, bf16_max}})
    for (DivergenceId id : logit_rows()) {
      if (!info(id).props.zero_on_identical) continue;
      Case c = logit_case(id, 1, 1, 4, dt, {v, v, v, v}, {0, 0, 0, 0});
      want_all_grads(c);
      const Outputs o = compute(*make_cpu_backend(), c);
      EXPECT_EQ(o.loss.get(0), 0.0) << name_of(id) << " " << v;
      for (const auto& [role, g] : o.grads)
        for (std::int64_t i = 0; i < 4; ++i) EXPECT_EQ(g.get(i), 0.0) << name_of(id) << " " << role;
    }
}

TEST(CpuNonFinite, Bf16MaxNeighboursGiveTheirExactHugeKl) {
  // y = (M, M), x = (M, M') with M = bf16 max = (2 - 2^-7) 2^127 and M' = (2 - 2^-6) 2^127 its
  // neighbour below: Delta = M - M' = 2^120. p = (1/2, 1/2), q = (1, e^-Delta) (q2 = 0 in float).
  // KL = 1/2 log(1/2) + 1/2 (log(1/2) + Delta) = Delta/2 - log 2, which rounds to 2^119 in float.
  // dKL/dy = p (d - KL): d = (-log 2, Delta - log 2), d - KL = (-Delta/2, Delta/2): (-2^118, 2^118).
  // dKL/dx = q - p = (1/2, -1/2).
  const double M = max_finite(DType::bf16), Mp = bf16_to_float(0x7f7e);
  ASSERT_EQ(M - Mp, std::ldexp(1.0, 120));
  Case c = logit_case(DivergenceId::masked_kl_divergence, 1, 1, 2, DType::bf16, {M, M}, {M, Mp});
  want_all_grads(c);
  const Outputs o = compute(*make_cpu_backend(), c);
  EXPECT_EQ(o.loss.get(0), std::ldexp(1.0, 119));
  EXPECT_EQ(o.grads.at("target_logits").get(0), -std::ldexp(1.0, 118));
  EXPECT_EQ(o.grads.at("target_logits").get(1), std::ldexp(1.0, 118));
  EXPECT_EQ(o.grads.at("input_logits").get(0), 0.5);
  EXPECT_EQ(o.grads.at("input_logits").get(1), -0.5);
}

TEST(CpuNonFinite, FusedLinearNanHiddenPoisonsItsToken) {
  Case c = random_case(DivergenceId::fused_linear_masked_kl_divergence, DType::f32, 1);
  c.inputs["student_hidden"].set(1, kNaN);  // token (0, 0) is valid
  want_all_grads(c);
  const Outputs o = compute(*make_cpu_backend(), c);
  EXPECT_TRUE(std::isnan(o.loss.get(0)));
  const Tensor& gh = o.grads.at("student_hidden");
  EXPECT_TRUE(std::isnan(gh.get(0)));
  EXPECT_TRUE(std::isfinite(gh.get(4)));  // token (0, 1)
}

TEST(CpuNonFinite, DcorNanSamplePoisonsValidPositionsOnly) {
  Case c = random_case(DivergenceId::masked_unbiased_dcor, DType::f32, 1);  // mask 1 1 0 1 1 1 1 0
  c.inputs["samples_1"].set(0, kNaN);
  want_all_grads(c);
  const Outputs o = compute(*make_cpu_backend(), c);
  EXPECT_TRUE(std::isnan(o.loss.get(0)));
  const Tensor& g1 = o.grads.at("samples_1");
  EXPECT_TRUE(std::isnan(g1.get(3)));             // position 1, valid
  EXPECT_EQ(g1.get(2 * 3), 0.0);                  // position 2, masked
  EXPECT_FALSE(std::signbit(g1.get(2 * 3)));
}

TEST(CpuNonFinite, TvdProbIsElementwise) {
  // A NaN element makes its own gradient element and the loss NaN, nothing else.
  Case c = random_case(DivergenceId::tvd_prob, DType::f32, 4);  // batchmean
  c.inputs["p"].set(1, kNaN);
  want_all_grads(c);
  const Outputs o = compute(*make_cpu_backend(), c);
  EXPECT_TRUE(std::isnan(o.loss.get(0)));
  const Tensor& g = o.grads.at("p");
  for (std::int64_t i = 0; i < g.numel(); ++i) {
    if (i == 1) EXPECT_TRUE(std::isnan(g.get(i)));
    else EXPECT_FALSE(std::isnan(g.get(i))) << i;
  }
}

}  // namespace
}  // namespace divcheck::testing
