// masked_unbiased_dcor specifics: fewer than 4 valid samples give exactly 0 with zero
// gradients; the result stays in [0, 1]; symmetry in its two arguments.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/backend.hpp"
#include "tests/cpu/test_cases.hpp"

namespace divcheck::testing {
namespace {

TEST(CpuDcor, FewerThanFourValidSamplesIsZero) {
  for (int valid = 0; valid < 4; ++valid) {
    Case c = random_case(DivergenceId::masked_unbiased_dcor, DType::f32, 1);  // (2, 4) positions
    std::vector<int> m(8, 0);
    for (int i = 0; i < valid; ++i) m[2 * i + 1] = 1;
    c.inputs["attention_mask"] = make_mask({2, 4}, m);
    want_all_grads(c);
    const Outputs o = compute(*make_cpu_backend(), c);
    EXPECT_EQ(o.loss.get(0), 0.0) << valid << " valid samples";
    for (const auto& [role, g] : o.grads)
      for (std::int64_t i = 0; i < g.numel(); ++i) EXPECT_EQ(g.get(i), 0.0) << valid << " " << role;
  }
}

TEST(CpuDcor, ResultInUnitIntervalAndSymmetric) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    Case c = random_case(DivergenceId::masked_unbiased_dcor, DType::f32, seed);
    const Outputs o = compute(*make_cpu_backend(), c);
    EXPECT_GE(o.loss.get(0), 0.0);
    EXPECT_LE(o.loss.get(0), 1.0);
    Case s = c;
    std::swap(s.inputs["samples_1"], s.inputs["samples_2"]);
    // Swapping X and Y swaps the roles of A~ and B~ in every sum; V(X,Y) is a sum of products
    // A~_ij B~_ij that commute, so the result is bitwise the same.
    EXPECT_TRUE(compute(*make_cpu_backend(), s).loss.bitwise_equal(o.loss)) << seed;
  }
}

TEST(CpuDcor, ConstantSamplesGiveExactlyZero) {
  // Every valid sample of Y identical: b_ij = sqrt(eps) for all i != j, whose U-centring is 0
  // exactly, so V(X,Y) = V(Y,Y) = 0 and the result is 0/eps = 0, at the clamp's edge, where
  // the gradient is 0. (Likewise with X constant, or both.) With eps = 0 it is 0/0: NaN.
  for (int which = 0; which < 3; ++which)
    for (double sf : {0.0, 100.0}) {
      Case c = random_case(DivergenceId::masked_unbiased_dcor, DType::f32, 4);
      c.params.safety_factor = sf;
      for (const char* role : {"samples_1", "samples_2"}) {
        if ((which == 0 && std::string(role) == "samples_2") || (which == 1 && std::string(role) == "samples_1")) continue;
        Tensor& t = c.inputs[role];
        const std::int64_t D = t.dim(2);
        for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, 0.25 * static_cast<double>(i % D) - 1.0);
      }
      want_all_grads(c);
      const Outputs o = compute(*make_cpu_backend(), c);
      if (sf == 0.0) {
        EXPECT_TRUE(std::isnan(o.loss.get(0))) << which;
        continue;
      }
      EXPECT_EQ(o.loss.get(0), 0.0) << which << " " << sf;
      for (const auto& [role, g] : o.grads)
        for (std::int64_t i = 0; i < g.numel(); ++i) EXPECT_EQ(g.get(i), 0.0) << which << " " << sf << " " << role << " " << i;
    }
}

TEST(CpuDcor, IdenticalSamplesWithoutEpsilonAreOne) {
  Case c = random_case(DivergenceId::masked_unbiased_dcor, DType::f32, 3);
  c.inputs["samples_2"] = c.inputs["samples_1"];
  c.params.safety_factor = 0.0;
  want_all_grads(c);
  const Outputs o = compute(*make_cpu_backend(), c);
  // V(X,X) / sqrt(V(X,X)^2): sqrt of a correctly rounded square is exact, so the ratio is 1.
  EXPECT_EQ(o.loss.get(0), 1.0);
}

}  // namespace
}  // namespace divcheck::testing
