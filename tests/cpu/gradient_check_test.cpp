// Every row's loss against the independent double model, and every gradient against central
// finite differences of that model, on small random finite cases (f32, bf16, f16 inputs).
//
// Bounds. The CPU backend computes in float32 (u = 2^-24); docs/semantics.md bounds a row sum
// of n terms by sigma(n) = ceil(n/1024) + 16 roundings, the registry adds c = 8 for the
// pointwise functions, so a well-conditioned output is within (8 + 17) u ~ 2^-19.4 of its
// scale. For the loss the scale is the model's (sum of (p + q)(|lp| + |lq| + 1) per position,
// reduced; double_model.hpp). For a gradient tensor we take its largest element: these random
// cases have logits of size ~2, probabilities ~0.1 and no cancellation beyond a factor of ~10.
// 2^-14 leaves a margin of ~40 over 2^-19.4; the finite differences are accurate to ~1e-10
// (double_model.cpp). A bf16/f16 gradient adds its single final rounding, u_out |value| (plus
// the smallest subnormal for a value that lands below the normal range).
// A wrong formula (a missing 1/T, a sign, a dropped term) is off by O(1) relative and fails.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/backend.hpp"
#include "tests/cpu/double_model.hpp"
#include "tests/cpu/test_cases.hpp"

namespace divcheck::testing {
namespace {

constexpr double kRel = 1.0 / 16384.0;  // 2^-14, derived above

void check_case(const Case& c) {
  SCOPED_TRACE(std::string(name_of(c.id)) + " dtype " + std::string(short_name(c.input(c.wants_grad.front())->dtype())) +
               " reduction " + c.params.reduction + " log_target " + std::to_string(c.params.log_target));
  auto cpu = make_cpu_backend();
  const Outputs out = compute(*cpu, c);
  std::vector<double> scale;
  const std::vector<double> loss = model_loss(c, role_values(c), &scale);
  ASSERT_EQ(out.loss.numel(), static_cast<std::int64_t>(loss.size()));
  for (std::size_t i = 0; i < loss.size(); ++i)
    EXPECT_NEAR(out.loss.get(static_cast<std::int64_t>(i)), loss[i], kRel * scale[i]) << "loss element " << i;

  for (const auto& role : c.wants_grad) {
    const Tensor& g = out.grads.at(role);
    ASSERT_EQ(g.shape(), c.input(role)->shape());
    ASSERT_EQ(g.dtype(), c.input(role)->dtype());
    const std::vector<double> fd = model_fd_gradient(c, role);
    double gmax = 0;
    for (double v : fd) gmax = std::max(gmax, std::fabs(v));
    ASSERT_GT(gmax, 0.0) << role << ": the finite-difference gradient is identically 0, the check would be empty";
    const double u_out = g.dtype() == DType::f32 ? 0.0 : unit_roundoff(g.dtype());
    const double floor_out = g.dtype() == DType::f32 ? 0.0 : min_subnormal(g.dtype());
    for (std::int64_t i = 0; i < g.numel(); ++i)
      ASSERT_NEAR(g.get(i), fd[i], kRel * gmax + u_out * std::fabs(fd[i]) + floor_out) << role << " element " << i;
  }
}

TEST(CpuGradientCheck, EveryRowEveryDtypeMatchesFiniteDifferences) {
  for (DivergenceId id : all_rows())
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        Case c = random_case(id, dt, seed);
        want_all_grads(c, seed % 2 ? 1.0 : -0.75);
        check_case(c);
      }
}

TEST(CpuGradientCheck, ReductionNoneUsesThePerSequenceUpstreamGradient) {
  for (DivergenceId id : logit_rows()) {
    if (!info(id).props.has_reduction_none) continue;
    Case c = random_case(id, DType::f32, 3);
    c.params.reduction = "none";
    want_all_grads(c);
    c.grad_output.set(0, 0.5);
    c.grad_output.set(1, -2.0);
    check_case(c);
  }
  Case t = random_case(DivergenceId::tvd_prob, DType::f32, 3);  // seed 3: "none"
  ASSERT_EQ(t.params.reduction, "none");
  want_all_grads(t);
  for (std::int64_t i = 0; i < t.grad_output.numel(); ++i) t.grad_output.set(i, 0.25 * static_cast<double>(i % 5) - 0.5);
  check_case(t);
}

TEST(CpuGradientCheck, TemperatureRowsAtExtremeTemperatures) {
  for (DivergenceId id : {DivergenceId::temperature_scaled_masked_kl_divergence,
                          DivergenceId::temperature_scaled_masked_jefferys_divergence,
                          DivergenceId::fused_linear_masked_kl_divergence})
    for (double temperature : {0.05, 0.3, 4.0, 50.0}) {
      Case c = random_case(id, DType::f32, 2);
      c.params.temperature = temperature;
      want_all_grads(c);
      check_case(c);
    }
}

TEST(CpuGradientCheck, OnlyRequestedGradientsAreReturned) {
  for (DivergenceId id : all_rows()) {
    Case c = random_case(id, DType::f32, 1);
    want_all_grads(c);
    const std::string first = c.wants_grad.front();
    c.wants_grad = {first};
    auto cpu = make_cpu_backend();
    const Outputs out = compute(*cpu, c);
    ASSERT_EQ(out.grads.size(), 1u) << name_of(id);
    EXPECT_TRUE(out.grads.count(first)) << name_of(id);
    c.wants_grad.clear();
    EXPECT_TRUE(compute(*cpu, c).grads.empty()) << name_of(id);
  }
}

}  // namespace
}  // namespace divcheck::testing
