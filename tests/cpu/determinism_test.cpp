// Determinism: the same case gives bitwise the same outputs, run after run and backend after
// backend instance, for every row and dtype.
#include <gtest/gtest.h>

#include "kernels/backend.hpp"
#include "tests/cpu/test_cases.hpp"

namespace divcheck::testing {
namespace {

TEST(CpuDeterminism, SameInputBitwiseSameOutput) {
  for (DivergenceId id : all_rows())
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      Case c = random_case(id, dt, 7);
      want_all_grads(c, 0.3);
      const Outputs a = compute(*make_cpu_backend(), c);
      auto other = make_cpu_backend();
      compute(*other, random_case(id, dt, 8));  // unrelated work in between
      const Outputs b = compute(*other, c);
      const std::string what = std::string(name_of(id)) + " " + std::string(short_name(dt));
      EXPECT_TRUE(a.loss.bitwise_equal(b.loss)) << what;
      ASSERT_EQ(a.grads.size(), b.grads.size()) << what;
      for (const auto& [role, g] : a.grads) EXPECT_TRUE(g.bitwise_equal(b.grads.at(role))) << what << " " << role;
    }
}

TEST(CpuDeterminism, LongRowsUseTheLaneOrderDeterministically) {
  // V = 3000 > 1024 lanes: three elements per lane, then the tree.
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::jensen_shannon_divergence}) {
    const std::int64_t V = 3000;
    Case c = logit_case(id, 1, 2, V, DType::bf16, randn(2 * V, 1, 4.0), randn(2 * V, 2, 4.0));
    want_all_grads(c);
    const Outputs a = compute(*make_cpu_backend(), c), b = compute(*make_cpu_backend(), c);
    EXPECT_TRUE(a.loss.bitwise_equal(b.loss));
    for (const auto& [role, g] : a.grads) EXPECT_TRUE(g.bitwise_equal(b.grads.at(role))) << role;
  }
}

}  // namespace
}  // namespace divcheck::testing
